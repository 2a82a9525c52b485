/**
 * One MCP server of `tools.mcp`: connected (started, for stdio) when the agent server starts,
 * its tool list read then and kept; each tool call is bounded by the server's `timeout_ms`. A
 * server that went away (a stdio program that exited, an HTTP server that closed) is connected
 * again by the next call, which refreshes the list.
 * @module
 */

import { Client } from "npm:@modelcontextprotocol/sdk@1.32.2/client/index.js";
import { StreamableHTTPClientTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/client/streamableHttp.js";
import type { Transport } from "npm:@modelcontextprotocol/sdk@1.32.2/shared/transport.js";
import { ErrorCode, McpError } from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";
import { errorMessage } from "../../core/errors.ts";
import type { ToolDecl } from "../../core/frames.ts";
import type { Logger } from "../../core/log.ts";
import type { EnvGet } from "../call_shapes.ts";
import type { McpServerConfig } from "../config_tools.ts";
import { toolResultValue } from "./tool_result.ts";
import { DenoStdioTransport } from "./stdio_transport.ts";

/** The version Flowcat gives as its MCP client name. */
const CLIENT = { name: "flowcat", version: "0.1.0" };

/**
 * Least time given to connecting (starting a program, the handshake, the tool list): a short
 * per-call timeout bounds the tool's work, not a program's start-up.
 */
export const MCP_CONNECT_TIMEOUT_MS = 10_000;

/**
 * Tool names every supported model API accepts (OpenAI's function names are the strictest); MCP
 * allows more (`.`, `/`), and one such name in a request would fail the model's whole turn.
 */
export const MODEL_TOOL_NAME_RE: RegExp = /^[A-Za-z0-9_-]{1,64}$/;

/** A live or reconnectable MCP server. */
export class McpConnection {
  /** The server's config entry. */
  readonly server: McpServerConfig;
  readonly #env: EnvGet;
  readonly #log: Logger;
  #client: Client | undefined;
  #connecting: Promise<Client> | undefined;
  #tools: ToolDecl[] = [];

  /** Prepare a connection to `server` (nothing happens before {@link connect}). */
  constructor(server: McpServerConfig, env: EnvGet, logger: Logger) {
    this.server = server;
    this.#env = env;
    this.#log = logger;
  }

  /** The server's tools as last listed (empty before the first connect succeeded). */
  get tools(): readonly ToolDecl[] {
    return this.#tools;
  }

  /** Connect (once at a time) and list the tools; rejects with a one-line reason. */
  connect(): Promise<Client> {
    if (this.#client !== undefined) return Promise.resolve(this.#client);
    this.#connecting ??= this.#open().finally(() => this.#connecting = undefined);
    return this.#connecting;
  }

  /** Call `name`; the model's view of the result, an `{ error }` on any failure. */
  async call(name: string, args: Record<string, unknown>): Promise<unknown> {
    const ms = this.server.timeoutMs;
    let client: Client;
    try {
      client = await withTimeout(this.connect(), this.#connectMs(), "connecting");
    } catch (err) {
      return this.#failed(
        name,
        `cannot reach MCP server ${this.server.name}: ${errorMessage(err)}`,
      );
    }
    try {
      const result = await client.callTool({ name, arguments: args }, undefined, { timeout: ms });
      return toolResultValue(result);
    } catch (err) {
      // An MCP protocol error carries a JSON-RPC code; anything else has none.
      const code = err instanceof McpError ? (err as { code: number }).code : undefined;
      const timedOut = code === ErrorCode.RequestTimeout;
      // A protocol answer (unknown tool, bad arguments) leaves the connection as good as it
      // was; anything else (a closed pipe, a refused or failed HTTP request, a stale session)
      // is connected afresh by the next call.
      if (code === undefined || code === ErrorCode.ConnectionClosed) this.#drop(client);
      return this.#failed(
        name,
        timedOut
          ? `tool ${name} timed out after ${ms} ms`
          : `tool ${name} failed: ${errorMessage(err)}`,
      );
    }
  }

  #drop(client: Client): void {
    if (this.#client !== client) return;
    this.#client = undefined;
    void client.close().catch(() => {});
  }

  /** Close the connection (stops a stdio program). */
  async close(): Promise<void> {
    const client = this.#client ?? await this.#connecting?.catch(() => undefined);
    this.#client = undefined;
    await client?.close().catch(() => {});
  }

  #connectMs(): number {
    return Math.max(this.server.timeoutMs, MCP_CONNECT_TIMEOUT_MS);
  }

  #failed(tool: string, reason: string): { error: string } {
    this.#log.warn("MCP tool call failed", { server: this.server.name, tool, err: reason });
    return { error: reason };
  }

  async #open(): Promise<Client> {
    const client = new Client(CLIENT);
    const transport = this.#transport();
    client.onclose = () => {
      if (this.#client === client) this.#client = undefined;
      this.#log.debug("MCP server connection closed", { server: this.server.name });
    };
    client.onerror = (err: Error) =>
      this.#log.debug("MCP transport error", { server: this.server.name, err: errorMessage(err) });
    const ms = this.#connectMs();
    try {
      await client.connect(transport, { timeout: ms });
      const tools: ToolDecl[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor ? { cursor } : undefined, { timeout: ms });
        for (const t of page.tools) {
          if (!MODEL_TOOL_NAME_RE.test(t.name)) {
            this.#log.warn("MCP tool not offered: models accept only A-Z a-z 0-9 _ - in names", {
              server: this.server.name,
              tool: t.name.slice(0, 80),
            });
            continue;
          }
          tools.push({
            name: t.name,
            description: t.description ?? t.title ?? t.name,
            params: t.inputSchema as Record<string, unknown>,
          });
        }
        cursor = page.nextCursor;
      } while (cursor !== undefined);
      this.#tools = tools;
    } catch (err) {
      await client.close().catch(() => {});
      throw err;
    }
    this.#client = client;
    this.#log.info("MCP server connected", {
      server: this.server.name,
      tools: this.#tools.map((t) => t.name).join(","),
    });
    return client;
  }

  #transport(): Transport {
    const s = this.server;
    if (s.transport === "http") {
      const headers: Record<string, string> = {};
      const token = s.bearerEnv !== undefined ? this.#env(s.bearerEnv) : undefined;
      if (token) headers.authorization = `Bearer ${token}`;
      return new StreamableHTTPClientTransport(new URL(s.url), { requestInit: { headers } });
    }
    const env: Record<string, string> = {};
    for (const name of s.env) {
      const v = this.#env(name);
      if (v !== undefined) env[name] = v;
    }
    return new DenoStdioTransport({
      command: s.command,
      args: s.args,
      env,
      onStderr: (line) => this.#log.debug("MCP server stderr", { server: s.name, line }),
    });
  }
}

/** `p`, or a rejection after `ms` saying what took too long. */
function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took over ${ms} ms`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}
