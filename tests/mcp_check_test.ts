/** `--check` with `tools.mcp`: a row per MCP server, its tools named, one that is down fails. */
import assert from "node:assert/strict";
import { runCheck } from "../server/check.ts";
import { parse } from "./_server_config_helpers.ts";
import { DENO_CHILD_ENV, serveMcpHttp } from "./_mcp_server.ts";

Deno.test("mcp check: each MCP server is connected and its tools named; a dead one fails", async () => {
  const http = serveMcpHttp("s3cret");
  try {
    const res = await parse(`agent: { graph: graph.yaml }
providers: { realtime: { name: echo } }
tools:
  mcp:
    - { name: orders, command: deno, args: [run, --no-prompt, tests/_mcp_server.ts], env: [${
      DENO_CHILD_ENV.join(", ")
    }] }
    - { name: crm, url: "${http.url}?k=v", bearer_env: CRM_TOKEN }
    - { name: gone, url: "http://127.0.0.1:9/mcp" }`);
    if (!res.ok) throw new Error(JSON.stringify(res.problems));
    const lines: string[] = [];
    const code = await runCheck(res.config, {
      env: (n) => (n === "CRM_TOKEN" ? "s3cret" : Deno.env.get(n)),
      print: (l) => lines.push(l),
    });
    const table = lines.join("\n");
    assert.equal(code, 1, table);
    const row = (name: string) => table.split("\n").find((l) => l.startsWith(`${name} `)) ?? "";
    assert.match(
      row("orders"),
      /^orders +mcp +deno \(stdio\) +ok .*4 tool\(s\): lookup_order, slow, fail, crash$/,
    );
    assert.match(
      row("crm"),
      new RegExp(`^crm +mcp +${http.url.replaceAll(".", "\\.")} +ok .*3 tool\\(s\\)`),
    );
    assert.equal(table.includes("k=v"), false, "no query shown");
    assert.equal(table.includes("s3cret"), false, "no token shown");
    assert.match(row("gone"), /^gone +mcp +http:\/\/127\.0\.0\.1:9\/mcp +FAIL /);
    assert.match(table, /1 of 4 provider\(s\) failed: gone \(http:\/\/127\.0\.0\.1:9\/mcp\)/);
  } finally {
    await http.close();
  }
});
