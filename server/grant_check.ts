/**
 * Before the server takes calls, check that this process holds every grant its config needs,
 * and name the config field behind any that is missing. Without this a missing grant shows up
 * mid-call or never: a recording directory outside `--allow-write` loses every recording with
 * one warning per call, a provider host outside `--allow-net` fails each call at connect.
 *
 * @example
 * ```ts
 * declare const config: Parameters<typeof grantProblems>[0];
 * const problems = grantProblems(config, (d) => Deno.permissions.querySync(d).state === "granted");
 * ```
 * @module
 */

import { type ProviderKind, providersOfKind } from "../providers/registry.ts";
import { hostsOf } from "./permissions.ts";
import type { AgentServerConfig } from "./config_types.ts";
import type { Problem } from "../core/agent/problems.ts";

/** Whether this process holds `descriptor`. */
export type GrantQuery = (descriptor: Deno.PermissionDescriptor) => boolean;

/** `host:port` of a URL as a net descriptor's host. */
function netOf(url: string): string {
  const u = new URL(url);
  const secure = u.protocol === "https:" || u.protocol === "wss:";
  return `${u.hostname}:${u.port !== "" ? u.port : secure ? "443" : "80"}`;
}

const HINT = "run the command --print-permissions prints, or deno task start, which grants it";

/** A variable's value, or undefined when unset or not granted (a region may come from one). */
function readableEnv(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined;
  }
}

/** One problem per config field whose grant this process lacks; empty when all are held. */
export function grantProblems(config: AgentServerConfig, granted: GrantQuery): Problem[] {
  const out: Problem[] = [];
  const need = (path: string, d: Deno.PermissionDescriptor, what: string) => {
    if (!granted(d)) out.push({ path, message: `this process may not ${what} (${HINT})` });
  };
  if (config.recording.enabled) {
    need(
      "recording.dir",
      { name: "write", path: config.recording.dir },
      `write ${config.recording.dir}`,
    );
  }
  for (const kind of ["realtime", "stt", "llm", "tts"] as ProviderKind[]) {
    const p = config.providers[kind];
    if (p === undefined) continue;
    const info = providersOfKind(kind)[p.name];
    const hosts = p.url !== undefined
      ? [netOf(p.url)]
      : info === undefined
      ? []
      : hostsOf(info, p.options, readableEnv);
    for (const host of hosts) {
      need(`providers.${kind}`, { name: "net", host }, `connect to ${host} (${p.name})`);
    }
  }
  if (config.agent.kind === "remote") {
    const host = netOf(config.agent.url);
    need("agent.remote.url", { name: "net", host }, `connect to ${host}`);
  }
  config.tools.mcp.forEach((m, i) => {
    if (m.transport === "http") {
      const host = netOf(m.url);
      need(`tools.mcp[${i}].url`, { name: "net", host }, `connect to ${host} (MCP ${m.name})`);
    } else {
      need(`tools.mcp[${i}].command`, { name: "run", command: m.command }, `run ${m.command}`);
    }
  });
  return out;
}
