/**
 * A real MCP server for tests, written with the MCP SDK: run as a program it serves stdio
 * (`deno run tests/_mcp_server.ts`); {@link serveMcpHttp} serves it over streamable HTTP on
 * 127.0.0.1 (an ephemeral port). Tools: `lookup_order` (a text result), `slow` (waits `ms`),
 * `fail` (a tool error) and, over stdio, `crash` (the program exits mid-call); with
 * `--ignore-term` the program ignores SIGTERM.
 */
import { Server } from "npm:@modelcontextprotocol/sdk@1.32.2/server/index.js";
import { StdioServerTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/server/stdio.js";
import { WebStandardStreamableHTTPServerTransport } from "npm:@modelcontextprotocol/sdk@1.32.2/server/webStandardStreamableHttp.js";
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
} from "npm:@modelcontextprotocol/sdk@1.32.2/types.js";

/** What a `deno` child needs from the test's environment to find its caches. */
export const DENO_CHILD_ENV: readonly string[] = ["HOME", "PATH", "DENO_DIR", "XDG_CACHE_HOME"];

const TOOLS = [
  {
    name: "lookup_order",
    description: "Look up an order's status by its id",
    inputSchema: {
      type: "object",
      properties: { order_id: { type: "string" } },
      required: ["order_id"],
    },
  },
  {
    name: "slow",
    description: "Answer after ms milliseconds",
    inputSchema: { type: "object", properties: { ms: { type: "number" } } },
  },
  { name: "fail", description: "Always fails", inputSchema: { type: "object" } },
  // A name MCP allows and model APIs refuse: never offered to a model.
  { name: "orders/list", description: "List orders", inputSchema: { type: "object" } },
];

/** The part of a tools/call request the tools read. */
type ToolCall = { params: { name: string; arguments?: Record<string, unknown> } };

/** An MCP server with the test tools; `crash` only where the process may exit. */
function mcpServer(withCrash: boolean): Server {
  const server = new Server({ name: "test-orders", version: "1.0.0" }, {
    capabilities: { tools: {} },
  });
  const tools = withCrash
    ? [...TOOLS, { name: "crash", description: "Exit", inputSchema: { type: "object" } }]
    : TOOLS;
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools }));
  server.setRequestHandler(CallToolRequestSchema, async (req: ToolCall) => {
    const args = (req.params.arguments ?? {}) as Record<string, unknown>;
    switch (req.params.name) {
      case "lookup_order":
        return {
          content: [{ type: "text", text: `Order ${args.order_id}: shipped on 2026-11-20` }],
        };
      case "slow":
        await new Promise((r) => setTimeout(r, Number(args.ms ?? 0)));
        return { content: [{ type: "text", text: "done" }] };
      case "fail":
        return { content: [{ type: "text", text: "the order database is down" }], isError: true };
      case "crash":
        if (withCrash) Deno.exit(3);
    }
    throw new Error(`no tool ${req.params.name}`);
  });
  return server;
}

/** A running HTTP MCP server. */
export interface McpHttp {
  /** Its endpoint, `http://127.0.0.1:<port>/mcp`. */
  url: string;
  /** `Authorization` headers it received, in order. */
  auth: (string | null)[];
  /** Stop serving. */
  close(): Promise<void>;
}

/**
 * Serve the test tools over streamable HTTP (stateless); `token`: the bearer it requires;
 * `port`: where to listen (default ephemeral).
 */
export function serveMcpHttp(token?: string, port = 0): McpHttp {
  const auth: (string | null)[] = [];
  const http = Deno.serve({ hostname: "127.0.0.1", port, onListen() {} }, async (req) => {
    auth.push(req.headers.get("authorization"));
    if (token !== undefined && req.headers.get("authorization") !== `Bearer ${token}`) {
      return new Response("unauthorized", { status: 401 });
    }
    // No server-initiated stream (the spec lets a server refuse it): an open GET would hold
    // the server's shutdown until the client goes.
    if (req.method === "GET") return new Response(null, { status: 405 });
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    await mcpServer(false).connect(transport);
    return await transport.handleRequest(req);
  });
  return {
    url: `http://127.0.0.1:${http.addr.port}/mcp`,
    auth,
    close: () => http.shutdown(),
  };
}

if (import.meta.main) {
  // `--ignore-term`: a program that will not stop politely.
  // It stays up after its stdin closes, too (a timer keeps it alive).
  if (Deno.args.includes("--ignore-term")) {
    Deno.addSignalListener("SIGTERM", () => {});
    setInterval(() => {}, 1000);
  }
  await mcpServer(true).connect(new StdioServerTransport());
}
