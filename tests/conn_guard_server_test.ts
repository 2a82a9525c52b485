/**
 * The agent server behind its connection guard, as operators run it (a child process under the
 * computed flags): the playground, /healthz, the answer webhook and a carrier media call work
 * through it, a slow request head is cut at the configured deadline, and three 30 MB media
 * messages on a live call cost the server almost no memory: the guard drops the connection at the
 * first one's frame header.
 */
import assert from "node:assert/strict";
import { sleep, until } from "./_core_helpers.ts";
import { startServerChild } from "./_server_child.ts";
import { dialTwilio } from "./_twilio_client.ts";

const DIR = ".tmp/conn_guard_server_test";
const SECRET = "twilio-secret-for-guard";
const PUBLIC = "https://agent.example.com";

/** Resident memory of process `pid`, bytes (from ps: /proc needs more than the test has). */
async function rss(pid: number): Promise<number> {
  const out = await new Deno.Command("ps", { args: ["-o", "rss=", "-p", String(pid)] }).output();
  return Number(new TextDecoder().decode(out.stdout).trim()) * 1024;
}

/** Poll `cond` every 50 ms until it holds; throws after `ms`. */
async function eventually(cond: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const end = performance.now() + ms;
  while (!(await cond())) {
    if (performance.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

Deno.test("guarded server: normal paths work; 30 MB media messages end the call, not the host", async () => {
  await Deno.mkdir(DIR, { recursive: true });
  await Deno.copyFile("examples/echo_graph.yaml", `${DIR}/echo_graph.yaml`);
  const path = `${DIR}/agent.yaml`;
  await Deno.writeTextFile(
    path,
    `version: 1
agent: { graph: echo_graph.yaml }
pipeline: s2s
providers:
  realtime: { name: echo, options: { tts: none } }
telephony: { public_url: "${PUBLIC}", carriers: [twilio] }
server: { guard: { header_timeout_ms: 1500 } }
`,
  );
  const server = await startServerChild(path, { TWILIO_AUTH_TOKEN: SECRET });
  try {
    const page = await fetch(`${server.base}/`);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /<html/i);
    const health = await fetch(`${server.base}/healthz`);
    assert.equal((await health.json()).activeCalls, 0);

    // A head sent a line at a time is cut at the configured deadline.
    const slow = await Deno.connect({
      hostname: "127.0.0.1",
      port: Number(new URL(server.base).port),
    });
    const enc = new TextEncoder();
    await slow.write(enc.encode("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n"));
    const trickle = setInterval(() => slow.write(enc.encode("X-Slow: 1\r\n")).catch(() => {}), 500);
    const buf = new Uint8Array(256);
    const n = await slow.read(buf).catch(() => null);
    clearInterval(trickle);
    slow.close();
    assert.match(new TextDecoder().decode(buf.subarray(0, n ?? 0)), /^HTTP\/1\.1 408/);
    await until(() => server.stderr().includes("request head not complete in time"), 5000, "log");

    // The answer webhook, then the media socket it names, through the guard.
    const { call } = await dialTwilio(server.base, { secret: SECRET, publicUrl: PUBLIC });
    const active = async () => (await (await fetch(`${server.base}/healthz`)).json()).activeCalls;
    await eventually(async () => (await active()) === 1, 10_000, "the call to run");
    await call.speak(new Int16Array(1600));

    const before = await rss(server.pid);
    const huge = JSON.stringify({
      event: "media",
      streamSid: "MZ1",
      media: { track: "inbound", payload: "A".repeat(30 * 1024 * 1024) },
    });
    for (let i = 0; i < 3; i++) await call.send(huge).catch(() => {});
    await until(
      () => server.stderr().includes("websocket message over the cap"),
      10_000,
      "the guard's log line",
    );
    await until(() => server.stderr().includes("call ended"), 10_000, "the call to end");
    await eventually(async () => (await active()) === 0, 10_000, "no call left");
    const after = await rss(server.pid);
    const grew = (after - before) / 1024 / 1024;
    assert.ok(grew < 50, `RSS grew ${grew.toFixed(1)} MB (${before} -> ${after})`);

    // Both cuts are counted where operators watch.
    const metrics = await (await fetch(`${server.base}/metrics`)).text();
    assert.match(metrics, /^flowcat_connections_refused_total\{reason="header_timeout"\} 1$/m);
    assert.match(metrics, /^flowcat_connections_refused_total\{reason="message_too_big"\} 1$/m);
    await call.close();
  } finally {
    assert.equal(await server.stop(), 0, server.stderr());
  }
});
