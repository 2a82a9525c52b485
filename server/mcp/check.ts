/**
 * `--check` rows for `tools.mcp`: each server connected (a stdio program started), its tools
 * listed, then closed. A row passes when the list came; its reason names the tools offered.
 * @module
 */

import { errorMessage } from "../../core/errors.ts";
import { silentLogger } from "../../core/log.ts";
import type { McpServerConfig } from "../config_tools.ts";
import type { ProbeResult, ProbeTarget } from "../probes.ts";
import type { EnvGet } from "../call_shapes.ts";
import { McpConnection } from "./connection.ts";

/** Where a server is, for people: the URL without credentials or query, or the program. */
function where(s: McpServerConfig): string {
  if (s.transport === "stdio") return `${s.command} (stdio)`;
  const u = new URL(s.url);
  return `${u.origin}${u.pathname}`;
}

/** Connect each server in turn and say what it offers. */
export async function checkMcpServers(
  servers: readonly McpServerConfig[],
  env: EnvGet,
): Promise<ProbeResult[]> {
  const out: ProbeResult[] = [];
  for (const s of servers) {
    const target: ProbeTarget = {
      service: "mcp",
      provider: s.name,
      url: where(s),
      local: true,
      keyRequired: s.transport === "http" && s.bearerEnv !== undefined,
      expect: "ok",
    };
    const conn = new McpConnection(s, env, silentLogger);
    const started = performance.now();
    try {
      await conn.connect();
      const names = conn.tools.map((t) => t.name);
      out.push({
        target,
        ok: true,
        reason: `${names.length} tool(s): ${names.join(", ")}`,
        latencyMs: Math.round(performance.now() - started),
      });
    } catch (err) {
      out.push({
        target,
        ok: false,
        reason: errorMessage(err),
        latencyMs: Math.round(performance.now() - started),
        problem: "unreachable",
      });
    } finally {
      await conn.close();
    }
  }
  return out;
}
