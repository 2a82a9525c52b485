/**
 * The tools of every MCP server in `tools.mcp`, as one set beside the brain's
 * ({@link ExtraTools}). Opened once when the agent server starts: each server is connected and
 * its tool list read then, and every call is offered the lists as they stand (a server down at
 * start is retried in the background at each call start, and by a call of one of its tools).
 * Imported only when the config names an MCP server, so the SDK loads only then.
 * @module
 */

import { errorMessage } from "../../core/errors.ts";
import type { ExtraTools } from "../../core/agent/extra_tools.ts";
import type { ToolDecl } from "../../core/frames.ts";
import type { Logger } from "../../core/log.ts";
import type { McpServerConfig } from "../config_tools.ts";
import type { EnvGet } from "../call_shapes.ts";
import { McpConnection } from "./connection.ts";

/** MCP tools for the server's calls. */
export interface McpToolbox extends ExtraTools {
  /** Try again, in the background, to connect servers that are not connected. */
  refresh(): void;
  /** Close every connection (stops stdio programs). */
  close(): Promise<void>;
}

/** Connect every server of `servers` (in parallel) and return their tools as one set. */
export async function openMcpToolbox(
  servers: readonly McpServerConfig[],
  opts: { env: EnvGet; logger: Logger },
): Promise<McpToolbox> {
  const log = opts.logger;
  const conns = servers.map((s) => new McpConnection(s, opts.env, log));
  const tryConnect = (c: McpConnection) =>
    c.connect().then(
      () => {},
      (err) =>
        log.warn("MCP server not reachable: its tools are offered once it is", {
          server: c.server.name,
          err: errorMessage(err),
        }),
    );
  await Promise.all(conns.map(tryConnect));
  const warned = new Set<string>();
  /** Each tool name once: the first server in the list that offers it. */
  const owners = (): Map<string, { conn: McpConnection; decl: ToolDecl }> => {
    const out = new Map<string, { conn: McpConnection; decl: ToolDecl }>();
    for (const conn of conns) {
      for (const decl of conn.tools) {
        const first = out.get(decl.name);
        if (first === undefined) {
          out.set(decl.name, { conn, decl });
        } else if (!warned.has(`${conn.server.name}/${decl.name}`)) {
          warned.add(`${conn.server.name}/${decl.name}`);
          log.warn("MCP tool name taken by an earlier server: not offered", {
            server: conn.server.name,
            tool: decl.name,
            offeredBy: first.conn.server.name,
          });
        }
      }
    }
    return out;
  };
  return {
    tools: () => [...owners().values()].map((o) => o.decl),
    call(name, args) {
      const owner = owners().get(name);
      if (owner === undefined) return Promise.resolve({ error: `unknown tool ${name}` });
      return owner.conn.call(name, args);
    },
    refresh() {
      for (const c of conns) if (c.tools.length === 0) void tryConnect(c);
    },
    async close() {
      await Promise.all(conns.map((c) => c.close()));
    },
  };
}
