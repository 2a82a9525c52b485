/**
 * `startAgentServer`: listens and answers; a missing carrier secret is refused before
 * anything starts; `stop()` refuses new calls, lets the running one drain (then cancels it at
 * `limits.drain_seconds`), stops listening, and is safe to call twice.
 */

import assert from "node:assert/strict";
import { silentLogger } from "../core/log.ts";
import { ConfigError, parseConfig } from "../server/config.ts";
import { startAgentServer } from "../server/start.ts";
import { twilioSignature } from "../telephony/security.ts";
import { dialTwilio } from "./_twilio_client.ts";
import { until } from "./_core_helpers.ts";

const PUBLIC = "https://agent.example.com";
const SECRET = "twilio-secret";

/** An echo agent with Twilio enabled and a one-second drain. */
function config() {
  return parseConfig({
    providers: { realtime: { name: "echo", options: { tts: "none" } } },
    agent: {
      graph: {
        start: "a",
        nodes: [
          { id: "a", prompt: "Hi", transitions: [{ name: "go", description: "go", target: "b" }] },
          { id: "b", terminal: true },
        ],
      },
    },
    telephony: { public_url: PUBLIC, carriers: ["twilio"] },
    playground: { enabled: false },
    limits: { drain_seconds: 1 },
  });
}

Deno.test("startAgentServer: an enabled carrier without its webhook secret is refused at start", async () => {
  const err = await startAgentServer({ config: await config(), port: 0, logger: silentLogger })
    .then((s) => s.stop(), (e) => e);
  assert.ok(err instanceof ConfigError, String(err));
  assert.equal(err.problems.length, 1);
  assert.equal(err.problems[0].path, "telephony.carriers");
  assert.match(err.message, /environment variable TWILIO_AUTH_TOKEN is not set/);
  assert.doesNotMatch(err.message, new RegExp(SECRET));
});

Deno.test("startAgentServer: serves, then stop() drains the running call and closes", async () => {
  const env = (name: string) => name === "TWILIO_AUTH_TOKEN" ? SECRET : undefined;
  const server = await startAgentServer({
    config: await config(),
    port: 0,
    hostname: "127.0.0.1",
    env,
    logger: silentLogger,
    warm: false,
  });
  assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
  const base = server.url.slice(0, -1);
  const health = await fetch(`${base}/healthz`);
  assert.deepEqual(await health.json(), { ok: true, activeCalls: 0, draining: false });

  const { call } = await dialTwilio(base, { secret: SECRET, publicUrl: PUBLIC });
  try {
    await until(() => server.app.calls.active === 1, 5000, "the call running");
    const stopping = server.stop();
    assert.equal(server.stop(), stopping, "a second stop() is the same stop");
    await until(() => server.app.calls.draining, 1000, "draining");
    const during = await fetch(`${base}/healthz`);
    assert.equal(during.status, 503, "new calls are refused while draining");
    await during.body?.cancel();
    await stopping;
    assert.equal(server.app.calls.active, 0, "the call was drained");
    await call.ended;
    await assert.rejects(fetch(`${base}/healthz`), "no longer listening");
  } finally {
    await call.close();
  }
});

Deno.test("startAgentServer: a media socket accepted before stop() still gets its call, drained", async () => {
  const env = (name: string) => name === "TWILIO_AUTH_TOKEN" ? SECRET : undefined;
  const cfg = await config();
  cfg.limits.drainSeconds = 10;
  const server = await startAgentServer({
    config: cfg,
    port: 0,
    hostname: "127.0.0.1",
    env,
    logger: silentLogger,
    warm: false,
  });
  const base = server.url.slice(0, -1);
  // The answer webhook, then a socket that is open but has not sent its start message yet.
  const params = { CallSid: "CAlate" };
  const path = "/telephony/answer/twilio";
  const res = await fetch(`${base}${path}`, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      "x-twilio-signature": await twilioSignature(SECRET, `${PUBLIC}${path}`, params),
    },
    body: new URLSearchParams(params).toString(),
  });
  const url = new URL(/url="([^"]+)"/.exec(await res.text())![1].replaceAll("&amp;", "&"));
  const ws = new WebSocket(`${base.replace("http", "ws")}${url.pathname}${url.search}`);
  await new Promise((r) => ws.onopen = r);
  const got: string[] = [];
  ws.onmessage = (e) => got.push(String(e.data));
  const stopping = server.stop();
  await until(() => server.app.calls.draining, 1000, "draining");
  let stopped = false;
  void stopping.then(() => (stopped = true));
  ws.send(JSON.stringify({ event: "connected", protocol: "Call", version: "1.0.0" }));
  ws.send(JSON.stringify({
    event: "start",
    streamSid: "MZ1",
    start: { streamSid: "MZ1", callSid: "CAlate", customParameters: {} },
  }));
  await until(() => got.some((m) => m.includes('"media"')), 5000, "the call's greeting");
  assert.equal(server.app.calls.active, 1, "the admitted call runs during the drain");
  assert.equal(stopped, false, "the drain waits for it");
  ws.send(JSON.stringify({ event: "stop", streamSid: "MZ1", stop: { callSid: "CAlate" } }));
  await stopping;
  assert.equal(server.app.calls.active, 0);
  ws.close();
});
