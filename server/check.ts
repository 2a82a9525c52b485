/**
 * What the server says about its providers before any call: `deno task start --check` probes
 * every configured provider (and each `tools.mcp` server: connected, tools listed) and prints a
 * table (exit 1 when any failed), and a normal start
 * probes the local ones in the background and warns about each that does not answer, naming
 * its URL and what to start. See server/probes.ts for what a probe asks.
 * @module
 */

import type { Logger } from "../core/log.ts";
import type { AgentServerConfig } from "./config_types.ts";
import { probeAll, type ProbeOptions, type ProbeResult, probeTargets } from "./probes.ts";

const HEADER = ["provider", "kind", "url", "result", "latency", "reason"];

/** The `--check` table: one row per probe, columns aligned, no key anywhere. */
export function formatCheckTable(results: readonly ProbeResult[]): string {
  const rows = results.map((r) => [
    r.target.provider,
    r.target.service,
    r.target.url,
    r.ok ? "ok" : "FAIL",
    r.latencyMs === undefined ? "-" : `${r.latencyMs} ms`,
    r.ok || r.target.start === undefined || r.status !== undefined
      ? r.reason
      : `${r.reason}; start: ${r.target.start}`,
  ]);
  const all = [HEADER, ...rows];
  const widths = HEADER.map((_, i) => Math.max(...all.map((row) => row[i].length)));
  return all
    .map((row) => row.map((c, i) => (i === row.length - 1 ? c : c.padEnd(widths[i]))).join("  "))
    .join("\n");
}

/**
 * `--check`: probe every provider of `config`, print the table and a verdict through `print`;
 * resolves with the exit code (0 all passed, 1 any failed).
 */
export async function runCheck(
  config: AgentServerConfig,
  opts: ProbeOptions & { print: (line: string) => void },
): Promise<number> {
  const results = await probeAll(probeTargets(config), { timeoutMs: 5000, ...opts });
  // MCP servers too, when named (only then is the MCP client loaded).
  if (config.tools.mcp.length > 0) {
    const { checkMcpServers } = await import("./mcp/check.ts");
    results.push(...await checkMcpServers(config.tools.mcp, opts.env));
  }
  opts.print(formatCheckTable(results));
  const failed = results.filter((r) => !r.ok);
  opts.print(
    failed.length === 0
      ? `\nall ${results.length} provider(s) answered`
      : `\n${failed.length} of ${results.length} provider(s) failed: ${
        failed.map((r) => `${r.target.provider} (${r.target.url})`).join(", ")
      }`,
  );
  return failed.length === 0 ? 0 : 1;
}

/**
 * At start: probe the local providers (and a remote brain) and warn about each one that does
 * not answer. Resolves once every probe settled; the caller does not wait for it.
 */
export async function warnUnreachable(
  config: AgentServerConfig,
  log: Logger,
  opts: ProbeOptions,
): Promise<ProbeResult[]> {
  const targets = probeTargets(config).filter((t) => t.local && !t.inProcess && !t.notWired);
  const results = await probeAll(targets, opts);
  for (const r of results) {
    // Only what will fail calls: a server that is down, or up without the model. Any other
    // answer means it is running (--check says more).
    if (r.ok || (r.problem !== "unreachable" && r.problem !== "model" && (r.status ?? 0) < 500)) {
      continue;
    }
    log.warn(
      r.problem === "model"
        ? "provider model not loaded: calls will fail until it is"
        : "provider not reachable: calls will fail until it is",
      {
        service: r.target.service,
        provider: r.target.provider,
        url: r.target.url,
        error: r.reason,
        ...(r.target.start !== undefined && r.problem !== "model" ? { start: r.target.start } : {}),
      },
    );
  }
  return results;
}
