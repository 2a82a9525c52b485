/**
 * `server/main.ts` as a process: it prints its least-privilege command, then actually runs under
 * exactly those flags (default config), serves, and drains on SIGTERM. Config mistakes exit 2
 * with every problem and no stack trace.
 */
import assert from "node:assert/strict";
import { loadConfig } from "../server/config.ts";
import { ESPEAK_WASM, implementationReads, isLoopback } from "../server/main.ts";
import { denoCommand, permissionFlags } from "../server/permissions.ts";

const dec = new TextDecoder();

async function runMain(args: string[], flags = ["--allow-read=.", "--ignore-env"]) {
  const out = await new Deno.Command("deno", {
    args: ["run", ...flags, "server/main.ts", ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

Deno.test("server main: --help, bad flags and bad configs exit cleanly", async () => {
  const help = await runMain(["--help"]);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /--print-permissions/);
  const bad = await runMain(["--port", "99999"]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--port: expected 0-65535/);
  await Deno.mkdir(".tmp", { recursive: true });
  await Deno.writeTextFile(
    ".tmp/bad_agent.yaml",
    "pipline: s2s\nagent: { graph: nope.yaml }\nproviders: { realtime: { name: opnai } }\n",
  );
  const cfg = await runMain(["--config", ".tmp/bad_agent.yaml"]);
  assert.equal(cfg.code, 2);
  assert.match(cfg.stderr, /pipline: unknown key "pipline" \(did you mean "pipeline"\?\)/);
  assert.match(
    cfg.stderr,
    /providers\.realtime\.name: unknown provider "opnai" \(did you mean "openai"\?\)/,
  );
  assert.doesNotMatch(cfg.stderr, /\n\s+at /, "no stack trace");
});

Deno.test("server main: a provider without its key is a start-up error naming the variable", async () => {
  await Deno.mkdir(".tmp", { recursive: true });
  const text = (await Deno.readTextFile("examples/agent.yaml"))
    .replace("name: echo", "name: gemini")
    .replace("graph: echo_graph.yaml", "graph: ../examples/echo_graph.yaml");
  await Deno.writeTextFile(".tmp/gemini_agent.yaml", text);
  const r = await runMain(["--config", ".tmp/gemini_agent.yaml"]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /GEMINI_API_KEY/);
});

Deno.test("server main: runs under exactly its printed flags, serves, drains on SIGTERM", async () => {
  const loaded = await loadConfig("examples/agent.yaml");
  assert.ok(loaded.ok);
  const printed = await runMain(["--print-permissions", "--port", "0"]);
  assert.equal(printed.code, 0, printed.stderr);
  const flags = permissionFlags(loaded.config, {
    configPath: "examples/agent.yaml",
    host: "127.0.0.1",
    port: 0,
    extraRead: implementationReads(loaded.config),
  });
  assert.equal(
    printed.stdout.trim(),
    `${denoCommand().join(" ")} run ${
      flags.map((f) => f.includes("[") ? `'${f}'` : f).join(" ")
    } server/main.ts --config examples/agent.yaml --port 0`,
  );
  const child = new Deno.Command("deno", {
    args: ["run", ...flags, "server/main.ts", "--config", "examples/agent.yaml", "--port", "0"],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const reader = child.stdout.getReader();
  let text = "";
  let port = 0;
  while (port === 0) {
    const { value, done } = await reader.read();
    if (done) break;
    text += dec.decode(value);
    const m = /on http:\/\/127\.0\.0\.1:(\d+)\//.exec(text);
    if (m) port = Number(m[1]);
  }
  assert.ok(port > 0, text);
  const health = await fetch(`http://127.0.0.1:${port}/healthz`);
  assert.deepEqual(await health.json(), { ok: true, activeCalls: 0, draining: false });
  const page = await fetch(`http://127.0.0.1:${port}/`);
  assert.equal(page.status, 200);
  await page.body?.cancel();
  child.kill("SIGTERM");
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    text += dec.decode(value);
  }
  const status = await child.status;
  const err = dec.decode(await new Response(child.stderr).arrayBuffer());
  assert.equal(status.code, 0, err);
  assert.match(text, /stopped/);
  assert.doesNotMatch(
    text,
    /warning: the playground has no authentication/,
    "loopback: no warning",
  );
  assert.doesNotMatch(err, /PermissionDenied|NotCapable|Requires/, err);
});

Deno.test("server main: only loopback addresses count as loopback (the playground warning)", () => {
  for (const h of ["127.0.0.1", "127.1.2.3", "localhost", "::1", "[::1]"]) {
    assert.ok(isLoopback(h), h);
  }
  for (const h of ["0.0.0.0", "::", "10.0.0.5", "agent.example.com", "128.0.0.1"]) {
    assert.ok(!isLoopback(h), h);
  }
});

Deno.test("server main: the eSpeak wasm is in the printed reads whenever a config speaks with it", async () => {
  const local = await loadConfig("examples/cascaded_local.yaml");
  assert.ok(local.ok);
  assert.deepEqual(implementationReads(local.config), [ESPEAK_WASM]);
  const echo = await loadConfig("examples/agent.yaml");
  assert.ok(echo.ok);
  assert.deepEqual(implementationReads(echo.config), [ESPEAK_WASM]);
  // The wasm the reads name is the one the engine loads.
  assert.ok(Deno.statSync(ESPEAK_WASM).isFile);
});
