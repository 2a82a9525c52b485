/**
 * `deno task dist`: the offline bundle is built once, copied into an empty directory, and run
 * there with no network at all (`unshare -n`, loopback only): the demo pipeline passes and the
 * agent server (default echo agent) answers its health check and serves the playground.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { runDeno } from "../tools/deno_child.ts";
import { hasUnshare, runOffline } from "./_offline.ts";

/** The flags `deno task dist` runs the tool with (deno.json). */
const TASK_FLAGS = [
  "--allow-read=.",
  "--allow-write=dist,.tmp",
  "--allow-run=deno,tar",
  "--ignore-env",
];
/** Scratch root of this run (test files may run concurrently: nothing is shared). */
const SCRATCH = ".tmp/dist_test";
let buildDir = "";
const PORT = 6210;
/** More 20 ms frames than the 0.4 s chime the echo agent plays when eSpeak cannot load. */
const GREETING_FRAMES = 40;

const SECRET = "dist-test-secret";
const PUBLIC_URL = "https://agent.example.com";

let built: Promise<{ code: number; stdout: string; stderr: string }> | undefined;

/** The default echo agent, plus Twilio (signed answer webhook) so a call can be placed. */
async function testConfig(dir: string): Promise<string> {
  await Deno.mkdir(`${dir}/config`, { recursive: true });
  const text = (await Deno.readTextFile("examples/agent.yaml")).replace(
    "  carriers: []",
    `  public_url: ${PUBLIC_URL}\n  carriers: [twilio]\n` +
      "  webhook_secrets_env: { twilio: TWILIO_AUTH_TOKEN }",
  );
  assert.notEqual(text, await Deno.readTextFile("examples/agent.yaml"));
  await Deno.writeTextFile(`${dir}/config/agent.yaml`, text);
  await Deno.copyFile("examples/echo_graph.yaml", `${dir}/config/echo_graph.yaml`);
  return `${dir}/config/agent.yaml`;
}

/** Build the bundle once per test file, into a fresh directory. */
function build() {
  built ??= (async () => {
    await Deno.mkdir(SCRATCH, { recursive: true });
    const dir = await Deno.makeTempDir({ dir: SCRATCH, prefix: "build_" });
    buildDir = `${dir}/flowcat-test`;
    const config = await testConfig(dir);
    return runDeno(["run", ...TASK_FLAGS, "tools/dist.ts", "--config", config, "--out", buildDir]);
  })();
  return built;
}

async function copyTree(src: string, dest: string): Promise<void> {
  const info = await Deno.stat(src);
  if (!info.isDirectory) return await Deno.copyFile(src, dest); // keeps the mode (bin/, lib/deno)
  await Deno.mkdir(dest, { recursive: true });
  for await (const e of Deno.readDir(src)) await copyTree(join(src, e.name), join(dest, e.name));
}

/** Hosts and paths of one program's flags in the launcher. */
function launcherGrants(script: string, program: string): { net: string[]; read: string[] } {
  const block = script.slice(
    script.indexOf(`  ${program})`),
    script.indexOf(";;", script.indexOf(`  ${program})`)),
  );
  const list = (name: string) => {
    const m = new RegExp(`"${name}=([^"]*)"`).exec(block);
    return m === null ? [] : m[1].split(",");
  };
  return { net: list("--allow-net"), read: list("--allow-read") };
}

/**
 * Polls the server, fetches the playground, then places one Twilio call (signed answer webhook,
 * media WebSocket) and counts the greeting's 20 ms media frames; prints one JSON line.
 */
const PROBE = `
const base = "http://127.0.0.1:${PORT}";
let health;
for (let i = 0; i < 150 && health === undefined; i++) {
  try { health = await (await fetch(base + "/healthz")).json(); }
  catch { await new Promise((r) => setTimeout(r, 100)); }
}
const page = await fetch(base + "/");
const html = await page.text();
const app = await fetch(base + "/app.js");
await app.body?.cancel();
const path = "/telephony/answer/twilio";
const params = { CallSid: "CA1" };
let data = "${PUBLIC_URL}" + path;
for (const k of Object.keys(params).sort()) data += k + params[k];
const enc = new TextEncoder();
const key = await crypto.subtle.importKey("raw", enc.encode("${SECRET}"),
  { name: "HMAC", hash: "SHA-1" }, false, ["sign"]);
const sig = new Uint8Array(await crypto.subtle.sign("HMAC", key, enc.encode(data))).toBase64();
const answer = await fetch(base + path, {
  method: "POST",
  headers: { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": sig },
  body: new URLSearchParams(params).toString(),
});
const twiml = await answer.text();
const stream = new URL(/url="([^"]+)"/.exec(twiml)[1].replaceAll("&amp;", "&"));
const ws = new WebSocket("ws://127.0.0.1:${PORT}" + stream.pathname + stream.search);
let media = 0;
ws.onmessage = (e) => { if (JSON.parse(e.data).event === "media") media++; };
await new Promise((r) => ws.onopen = r);
ws.send(JSON.stringify({ event: "connected", protocol: "Call", version: "1.0.0" }));
ws.send(JSON.stringify({ event: "start", streamSid: "MZ1", start: { streamSid: "MZ1",
  callSid: "CA1", mediaFormat: { encoding: "audio/x-mulaw", sampleRate: 8000, channels: 1 } } }));
for (let i = 0; i < 300 && media < ${GREETING_FRAMES}; i++) await new Promise((r) => setTimeout(r, 50));
ws.send(JSON.stringify({ event: "stop", streamSid: "MZ1", stop: {} }));
ws.close();
console.log("PROBE " + JSON.stringify({ health, page: page.status, html: html.slice(0, 200),
  app: app.status, answer: answer.status, media }));
`;

Deno.test("dist: builds the bundle directory, launcher, README and tarball", async () => {
  const r = await build();
  assert.equal(r.code, 0, r.stderr);
  for (let i = 1; i <= 7; i++) assert.match(r.stdout, new RegExp(`\\[${i}/7\\] `));
  assert.match(r.stdout, /lib\/deno\s+\d+\.\d MiB/);
  for (const f of ["bin/flowcat", "lib/deno", "lib/server.js", "lib/demo.js", "lib/brain.js"]) {
    assert.ok((await Deno.stat(join(buildDir, f))).isFile, f);
  }
  for (const f of ["lib/espeak-ng.wasm", "config/agent.yaml"]) {
    assert.ok((await Deno.stat(join(buildDir, f))).isFile, f);
  }
  assert.ok(((await Deno.stat(join(buildDir, "bin/flowcat"))).mode ?? 0) & 0o100, "launcher +x");
  const tgz = await Deno.readFile(`${buildDir}.tar.gz`);
  assert.deepEqual([tgz[0], tgz[1]], [0x1f, 0x8b], "gzip");
  assert.match(await Deno.readTextFile(join(buildDir, "README.txt")), /bin\/flowcat server/);
});

Deno.test("dist: launcher grants only the bundle's own files and local addresses", async () => {
  assert.equal((await build()).code, 0);
  const script = await Deno.readTextFile(join(buildDir, "bin/flowcat"));
  const server = launcherGrants(script, "server");
  assert.deepEqual(server.net.sort(), ["0.0.0.0", "127.0.0.1"]);
  assert.ok(server.read.length > 0);
  for (const p of [...server.read, ...launcherGrants(script, "brain").read]) {
    assert.match(p, /^\$ROOT\//, `${p} is inside the bundle`);
  }
  assert.deepEqual(launcherGrants(script, "demo").net, ["127.0.0.1", "localhost"]);
  assert.doesNotMatch(script, /--allow-all|\s-A\s/);
  assert.ok(server.read.includes("$ROOT/lib/worker.js"), "the worker bundle, for --workers");
  assert.ok((await Deno.stat(join(buildDir, "lib/worker.js"))).isFile);
});

Deno.test("dist: copied elsewhere, runs the demo and a server call with no network", async () => {
  assert.equal((await build()).code, 0);
  if (!(await hasUnshare())) {
    console.warn("skip: unshare -n unavailable; the launcher grants were checked instead");
    await Deno.remove(buildDir.slice(0, buildDir.lastIndexOf("/")), { recursive: true });
    return;
  }
  const run = await Deno.makeTempDir({ dir: SCRATCH, prefix: "run_" });
  try {
    const root = join(run, "flowcat");
    await copyTree(buildDir, root);
    await Deno.writeTextFile(join(run, "probe.js"), PROBE);
    const { text } = await runOffline([
      `cd ${run}`,
      "flowcat/bin/flowcat demo pipeline; echo demo-exit=$?",
      // Two workers: the call runs in a worker thread, loaded from the bundle's lib/worker.js.
      `TWILIO_AUTH_TOKEN=${SECRET} flowcat/bin/flowcat server --workers 2 > server.log 2>&1 & pid=$!`,
      `flowcat/lib/deno run --no-config --allow-net=127.0.0.1:${PORT} probe.js`,
      "kill -TERM $pid; wait $pid; echo server-exit=$?",
      "cat server.log",
    ]);
    assert.match(text, /^result:\s+OK$/m, text);
    assert.match(text, /^demo-exit=0$/m, text);
    const probe = /^PROBE (.*)$/m.exec(text);
    assert.ok(probe, text);
    const p = JSON.parse(probe[1]) as {
      health?: { ok: boolean };
      page: number;
      html: string;
      app: number;
      answer: number;
      media: number;
    };
    assert.equal(p.health?.ok, true, text);
    assert.equal(p.page, 200);
    assert.match(p.html, /<!doctype html>/i);
    assert.equal(p.app, 200);
    assert.equal(p.answer, 200, text);
    // The greeting is spoken by eSpeak: its wasm was found next to the bundled server.
    assert.ok(p.media >= GREETING_FRAMES, `greeting frames: ${p.media}\n${text}`);
    assert.match(
      text,
      /Flowcat agent server on http:\/\/127\.0\.0\.1:6210\/ \(model: echo; 2 workers on one port\)/,
    );
    assert.match(text, /^server-exit=0$/m, text);
    assert.doesNotMatch(text, /NotCapable|PermissionDenied|\n\s+at /, text);
  } finally {
    await Deno.remove(run, { recursive: true });
    // The last test of this file: drop the build too (about 160 MiB).
    await Deno.remove(buildDir.slice(0, buildDir.lastIndexOf("/")), { recursive: true });
  }
});
