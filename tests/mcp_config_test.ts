/**
 * `tools.mcp` in the config: what a valid entry becomes, and a clear problem for each mistake
 * (no server named, both kinds, options of the other kind, a secret inline, a duplicate name).
 */
import assert from "node:assert/strict";
import { at, parse, problems, yaml } from "./_server_config_helpers.ts";

Deno.test("mcp config: stdio and HTTP entries with their defaults", async () => {
  const res = await parse(yaml(`tools:
  mcp:
    - { name: files, command: npx, args: [-y, server-filesystem, /srv], env: [HOME] }
    - { name: crm, url: "https://mcp.example.com/mcp", bearer_env: CRM_TOKEN, timeout_ms: 3000 }`));
  assert.ok(res.ok, JSON.stringify(res.ok ? "" : res.problems));
  assert.deepEqual(res.config.tools.mcp, [
    {
      name: "files",
      transport: "stdio",
      command: "npx",
      args: ["-y", "server-filesystem", "/srv"],
      env: ["HOME"],
      timeoutMs: 10_000,
    },
    {
      name: "crm",
      transport: "http",
      url: "https://mcp.example.com/mcp",
      bearerEnv: "CRM_TOKEN",
      timeoutMs: 3000,
    },
  ]);
  const none = await parse(yaml());
  assert.ok(none.ok);
  assert.deepEqual(none.config.tools, { mcp: [] });
});

Deno.test("mcp config: each mistake is one clear problem at its field", async () => {
  const ps = await problems(yaml(`tools:
  mcp:
    - { name: a }
    - { name: b, command: x, url: "http://127.0.0.1:1/mcp" }
    - { name: c, url: "http://127.0.0.1:1/mcp", args: [x] }
    - { name: d, command: x, bearer_env: TOKEN }
    - { name: e, url: "ftp://x/mcp" }
    - { name: a, command: x, env: [not-a-name] }
    - { name: "bad name", command: x, timeout_ms: 5 }
    - { name: f, command: x, token: abc }`));
  at(ps, "tools.mcp[0].command", "names no server (add command: <program> for stdio, or url:");
  at(ps, "tools.mcp[1].url", "has both command and url");
  at(ps, "tools.mcp[2].args", "applies to a stdio server (command), not to url");
  at(ps, "tools.mcp[3].bearer_env", "applies to an HTTP server (url)");
  at(ps, "tools.mcp[4].url", "must be an http or https URL");
  at(ps, "tools.mcp[5].env[0]", "must be the NAME of an environment variable");
  at(ps, "tools.mcp[6].name", "must be 1-32 letters, digits, _ or -");
  at(ps, "tools.mcp[6].timeout_ms", "must be at least 100");
  at(ps, "tools.mcp[7].token", "secrets are not accepted inline (put the token in an environment");
  at(ps, "tools.mcp[5].name", 'MCP server "a" is listed twice');
  const typo = await problems(yaml(`tools:
  mcp: [{ name: a, comand: x }]`));
  at(typo, "tools.mcp[0].comand", 'did you mean "command"?');
  const top = await problems(yaml("tools: { mpc: [] }"));
  at(top, "tools.mpc", 'did you mean "mcp"?');
});
