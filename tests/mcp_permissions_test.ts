/**
 * MCP servers under the derived sandbox: the agent server runs as `deno task start` would run it
 * (only the flags its config derives) and connects a stdio MCP program and an HTTP MCP server
 * with a bearer token; nothing outside those grants is needed.
 */
import assert from "node:assert/strict";
import { until } from "./_core_helpers.ts";
import { startServerChild } from "./_server_child.ts";
import { GRAPH } from "./_server_config_helpers.ts";
import { DENO_CHILD_ENV, serveMcpHttp } from "./_mcp_server.ts";

Deno.test("mcp permissions: stdio and HTTP MCP servers connect under the derived flags", async () => {
  const http = serveMcpHttp("s3cret");
  const dir = await Deno.makeTempDir({ dir: ".tmp" });
  try {
    await Deno.writeTextFile(`${dir}/graph.yaml`, GRAPH);
    await Deno.writeTextFile(
      `${dir}/agent.yaml`,
      `agent: { graph: graph.yaml }
providers: { realtime: { name: echo, options: { tts: none } } }
playground: { enabled: false }
tools:
  mcp:
    - name: orders
      command: deno
      args: [run, --no-prompt, tests/_mcp_server.ts]
      env: [${DENO_CHILD_ENV.join(", ")}]
    - name: orders-http
      url: ${http.url}
      bearer_env: ORDERS_MCP_TOKEN
`,
    );
    const server = await startServerChild(`${dir}/agent.yaml`, { ORDERS_MCP_TOKEN: "s3cret" });
    try {
      assert.ok(server.flags.includes("--allow-run=deno"), server.flags.join(" "));
      await until(
        () =>
          server.stderr().includes('"server":"orders-http"') &&
          /MCP server connected.*"server":"orders"[,}]/.test(server.stderr()),
        20_000,
        "both MCP servers connected",
      );
      assert.equal(server.stderr().includes("NotCapable"), false, server.stderr());
      assert.equal(server.stderr().includes("s3cret"), false, "the token is never logged");
      assert.ok(http.auth.length > 0 && http.auth.every((a) => a === "Bearer s3cret"));
    } finally {
      await server.stop();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
    await http.close();
  }
});
