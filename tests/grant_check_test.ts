import assert from "node:assert/strict";
import { parseConfigText } from "../server/config.ts";
import { grantProblems } from "../server/grant_check.ts";

async function config(extra: string) {
  const res = await parseConfigText(
    `agent: { graph: echo_graph.yaml }\n${extra}`,
    "yaml",
    "examples",
  );
  assert.ok(res.ok, res.ok ? "" : JSON.stringify(res.problems));
  return res.config;
}

Deno.test("grant check: each missing grant names its config field", async () => {
  const c = await config(
    "providers: { realtime: { name: gemini } }\nrecording: { enabled: true, dir: /srv/rec }",
  );
  const asked: Deno.PermissionDescriptor[] = [];
  const none = grantProblems(c, (d) => (asked.push(d), false));
  assert.deepEqual(none.map((p) => p.path), ["recording.dir", "providers.realtime"]);
  assert.match(none[0].message, /may not write \/srv\/rec/);
  assert.match(none[1].message, /generativelanguage\.googleapis\.com:443 \(gemini\)/);
  assert.deepEqual(asked[0], { name: "write", path: "/srv/rec" });
  assert.deepEqual(grantProblems(c, () => true), []);
});

Deno.test("grant check: an endpoint override and a remote brain are checked as given", async () => {
  const res = await parseConfigText(
    `agent: { remote: { url: "http://10.1.2.3:8080" } }
providers: { realtime: { name: openai, url: "wss://proxy.internal/v1/realtime" } }`,
    "yaml",
    ".",
  );
  assert.ok(res.ok);
  const hosts: string[] = [];
  grantProblems(res.config, (d) => {
    if (d.name === "net") hosts.push(d.host ?? "");
    return true;
  });
  assert.deepEqual(hosts, ["proxy.internal:443", "10.1.2.3:8080"]);
});

Deno.test("grant check: the server refuses to start without its recording grant", async () => {
  const dir = await Deno.makeTempDir({ dir: "./.tmp", prefix: "grants-" });
  try {
    await Deno.copyFile("examples/echo_graph.yaml", `${dir}/echo_graph.yaml`);
    const cfg = `${dir}/agent.yaml`;
    await Deno.writeTextFile(
      cfg,
      (await Deno.readTextFile("examples/agent.yaml")).replace(
        "  enabled: false # true writes",
        "  enabled: true # true writes",
      ),
    );
    const out = await new Deno.Command("deno", {
      args: [
        "run",
        `--allow-read=${dir}`,
        "--allow-net=127.0.0.1",
        "--ignore-env",
        "server/main.ts",
        "--config",
        cfg,
        "--port",
        "0",
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 2, text);
    assert.match(text, /recording\.dir: this process may not write .*recordings/);
    assert.doesNotMatch(text, /\n\s+at /, "no stack trace");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
