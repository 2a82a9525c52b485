/**
 * The MCP client against a real MCP server written with the same SDK: spawned over stdio, and
 * served over streamable HTTP on loopback. Tools are listed at open, calls routed and answered,
 * and every failure (tool error, timeout, a crashed program, a server gone) is a result the model
 * reads, never a throw.
 */
import assert from "node:assert/strict";
import { memoryLogger } from "../core/log.ts";
import type { McpServerConfig, McpStdioServer } from "../server/config_tools.ts";
import { STOP_GRACE_MS } from "../server/mcp/stdio_transport.ts";
import { openMcpToolbox } from "../server/mcp/toolbox.ts";
import { DENO_CHILD_ENV, serveMcpHttp } from "./_mcp_server.ts";

/** The test MCP server as a stdio program. */
function stdioServer(name: string, timeoutMs = 20_000): McpStdioServer {
  return {
    name,
    transport: "stdio",
    command: "deno",
    args: ["run", "--no-prompt", "tests/_mcp_server.ts"],
    env: [...DENO_CHILD_ENV],
    timeoutMs,
  };
}

/** Every record of `logger`, one JSON line each. */
function logged(logger: ReturnType<typeof memoryLogger>): string {
  return logger.records.map((r) => JSON.stringify(r)).join("\n");
}

const env = (n: string) => Deno.env.get(n);

Deno.test("mcp toolbox: a stdio server's tools are listed, called and answered", async () => {
  const logger = memoryLogger();
  const box = await openMcpToolbox([stdioServer("orders")], { env, logger });
  try {
    assert.deepEqual(box.tools().map((t) => t.name), ["lookup_order", "slow", "fail", "crash"]);
    assert.match(logged(logger), /MCP tool not offered.*"tool":"orders\/list"/);
    const lookup = box.tools()[0]!;
    assert.equal(lookup.description, "Look up an order's status by its id");
    assert.deepEqual(lookup.params.required, ["order_id"]);
    assert.equal(
      await box.call("lookup_order", { order_id: "A17" }),
      "Order A17: shipped on 2026-11-20",
    );
    assert.deepEqual(await box.call("fail", {}), { error: "the order database is down" });
    assert.deepEqual(await box.call("no_such_tool", {}), { error: "unknown tool no_such_tool" });
  } finally {
    await box.close();
  }
});

Deno.test("mcp toolbox: a call past timeout_ms is a timeout result, and the server still answers", async () => {
  const logger = memoryLogger();
  // 300 ms bounds each call; starting the program gets MCP_CONNECT_TIMEOUT_MS.
  const box = await openMcpToolbox([stdioServer("orders", 300)], { env, logger });
  try {
    const started = performance.now();
    assert.deepEqual(await box.call("slow", { ms: 5000 }), {
      error: "tool slow timed out after 300 ms",
    });
    assert.ok(performance.now() - started < 4000, "the call did not wait for the tool");
    assert.equal(await box.call("slow", { ms: 0 }), "done");
    assert.ok(logged(logger).includes("MCP tool call failed"), "the timeout is logged");
  } finally {
    await box.close();
  }
});

Deno.test("mcp toolbox: a stdio program that crashes mid-call is an error result, then restarted", async () => {
  const logger = memoryLogger();
  const box = await openMcpToolbox([stdioServer("orders")], { env, logger });
  try {
    const crashed = await box.call("crash", {});
    assert.match(String((crashed as { error?: string }).error), /^tool crash failed: .*closed/i);
    // The next call starts the program again.
    assert.equal(
      await box.call("lookup_order", { order_id: "B2" }),
      "Order B2: shipped on 2026-11-20",
    );
  } finally {
    await box.close();
  }
});

Deno.test("mcp toolbox: closing stops a program that ignores SIGTERM", async () => {
  const server = stdioServer("stubborn");
  const box = await openMcpToolbox(
    [{ ...server, args: [...server.args, "--ignore-term"] }],
    { env, logger: memoryLogger() },
  );
  assert.equal(await box.call("slow", { ms: 0 }), "done");
  const started = performance.now();
  await box.close();
  const took = performance.now() - started;
  assert.ok(took >= STOP_GRACE_MS - 100, `closed after ${took} ms: SIGTERM was not ignored?`);
  assert.ok(took < STOP_GRACE_MS + 5000, `closed after ${took} ms`);
});

Deno.test("mcp toolbox: an HTTP server gets the bearer token, lists and answers", async () => {
  const http = serveMcpHttp("s3cret");
  let again: ReturnType<typeof serveMcpHttp> | undefined;
  const logger = memoryLogger();
  const server: McpServerConfig = {
    name: "orders-http",
    transport: "http",
    url: http.url,
    bearerEnv: "ORDERS_TOKEN",
    timeoutMs: 5000,
  };
  const box = await openMcpToolbox([server], {
    env: (n) => (n === "ORDERS_TOKEN" ? "s3cret" : undefined),
    logger,
  });
  try {
    assert.deepEqual(box.tools().map((t) => t.name), ["lookup_order", "slow", "fail"]);
    assert.equal(
      await box.call("lookup_order", { order_id: "C3" }),
      "Order C3: shipped on 2026-11-20",
    );
    assert.ok(http.auth.length >= 3);
    assert.ok(http.auth.every((a) => a === "Bearer s3cret"), JSON.stringify(http.auth));
    assert.equal(logged(logger).includes("s3cret"), false, "the token is never logged");
    // The server goes away: the call is an error result, not a throw.
    await http.close();
    const gone = await box.call("lookup_order", { order_id: "C4" });
    assert.match(String((gone as { error?: string }).error), /^tool lookup_order failed: /);
    // It comes back on the same address: the next call connects again and is answered.
    again = serveMcpHttp("s3cret", Number(new URL(http.url).port));
    assert.equal(
      await box.call("lookup_order", { order_id: "C5" }),
      "Order C5: shipped on 2026-11-20",
    );
  } finally {
    await box.close();
    await http.close().catch(() => {});
    await again?.close();
  }
});

Deno.test("mcp toolbox: a server refusing the token offers no tools and says why", async () => {
  const http = serveMcpHttp("s3cret");
  const logger = memoryLogger();
  const box = await openMcpToolbox(
    [{ name: "orders-http", transport: "http", url: http.url, timeoutMs: 5000 }],
    { env: () => undefined, logger },
  );
  try {
    assert.deepEqual(box.tools(), []);
    assert.ok(
      /MCP server not reachable.*orders-http/.test(logged(logger)),
      logged(logger),
    );
    assert.deepEqual(await box.call("lookup_order", {}), { error: "unknown tool lookup_order" });
  } finally {
    await box.close();
    await http.close();
  }
});
