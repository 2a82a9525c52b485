/**
 * A carrier peer that stops sending media without closing its socket: the server's media sockets
 * run without Deno's WebSocket idle timeout, and the call's silence watch (one deadline on the
 * isolate-wide heap) ends it with its own reason and closes the socket.
 */
import assert from "node:assert/strict";
import { sine } from "../core/audio/pcm.ts";
import { silentLogger } from "../core/log.ts";
import { MEDIA_STOPPED, type MediaIn, type WsIn } from "../core/seams.ts";
import { pendingDeadlines } from "../core/deadlines.ts";
import { createAgentServer } from "../server/app.ts";
import { parseConfigText } from "../server/config.ts";
import { endReason } from "../server/end_reason.ts";
import { createTwilioSerializer } from "../telephony/serializers/twilio.ts";
import { WsMediaTransport } from "../telephony/ws_transport.ts";
import { twilioClient } from "./_twilio_client.ts";
import { until } from "./_core_helpers.ts";
import { HELLO_BYE_GRAPH } from "./_graph_fixture.ts";

const START = JSON.stringify({
  event: "start",
  streamSid: "MZ1",
  start: { streamSid: "MZ1", callSid: "CA1", customParameters: {} },
});
const MEDIA = JSON.stringify({
  event: "media",
  streamSid: "MZ1",
  media: { track: "inbound", payload: new Uint8Array(160).fill(0xff).toBase64() },
});

/** A MediaSocket fed by the test, in push mode; `close` ends it as a socket close would. */
function pushSocket() {
  let listener: ((m: WsIn | undefined) => void) | undefined;
  const state = { closed: false };
  return {
    state,
    push: (m: WsIn) => listener?.(m),
    listen: (fn: (m: WsIn | undefined) => void) => void (listener = fn),
    recv: () => new Promise<WsIn | undefined>(() => {}),
    sendText: () => Promise.resolve(),
    sendBinary: () => Promise.resolve(),
    close: () => {
      state.closed = true;
      listener?.(undefined);
      return Promise.resolve();
    },
  };
}

Deno.test("WsMediaTransport: a leg silent past the limit stops with its reason; audio keeps it", async () => {
  const sock = pushSocket();
  const t = new WsMediaTransport(sock, createTwilioSerializer(), { silenceLimitMs: 250 });
  const got: (MediaIn | undefined)[] = [];
  t.listen((m) => void got.push(m));
  sock.push({ type: "text", data: START });
  // Audio every 50 ms for 600 ms: longer than the limit, never silent for it.
  const t0 = performance.now();
  let lastAudio = t0;
  while (performance.now() - t0 < 600) {
    sock.push({ type: "text", data: MEDIA });
    lastAudio = performance.now();
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.ok(!got.some((m) => m === undefined || m.type === "stop"), "not ended while audio came");
  await until(() => got.at(-1) === undefined && got.length > 1, 2000, "leg ended");
  const endedAfter = performance.now() - lastAudio;
  assert.ok(endedAfter >= 250 - 5, `ended ${endedAfter.toFixed(0)} ms after the last audio`);
  assert.deepEqual(got.slice(-2), [{ type: "stop", reason: MEDIA_STOPPED }, undefined]);
  assert.ok(sock.state.closed, "socket closed");
  assert.equal(endReason({ kind: "end", reason: MEDIA_STOPPED }), "caller_hung_up");
});

Deno.test("WsMediaTransport: the watch starts with the first audio and stops with the leg", async () => {
  const before = pendingDeadlines();
  const sock = pushSocket();
  const t = new WsMediaTransport(sock, createTwilioSerializer(), { silenceLimitMs: 250 });
  t.listen(() => {});
  sock.push({ type: "text", data: START });
  assert.equal(pendingDeadlines(), before, "no audio yet: not watched");
  sock.push({ type: "text", data: MEDIA });
  assert.equal(pendingDeadlines(), before + 1);
  await t.close();
  assert.equal(pendingDeadlines(), before);
});

const CONFIG = {
  agent: { graph: HELLO_BYE_GRAPH },
  pipeline: "s2s",
  providers: { realtime: { name: "echo", options: { tts: "none", greeting: "hi" } } },
  telephony: { public_url: "https://agent.example.com", carriers: ["twilio"] },
  recording: { enabled: false },
};

Deno.test("media route: a carrier that stops sending without closing is cut off, with a reason", async () => {
  const r = await parseConfigText(JSON.stringify(CONFIG), "json", ".");
  if (!r.ok) throw new Error(JSON.stringify(r.problems));
  const app = await createAgentServer({
    config: r.config,
    env: (n) => (n === "TWILIO_AUTH_TOKEN" ? "secret" : undefined),
    logger: silentLogger,
    mediaSilenceLimitMs: 400,
  });
  const srv = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, app.handler);
  try {
    const run = await app.sessions.createRun("carrier", { carrier: "twilio" });
    const url = `ws://127.0.0.1:${srv.addr.port}/telephony/ws/twilio/${run.runId}`;
    const call = await twilioClient(`${url}?token=${run.token}`, run.token);
    await until(() => app.calls.active === 1, 5000, "call running");
    // 800 ms of speech at real time: twice the limit, never silent for it.
    await call.speak(sine({ freq: 300, sampleRate: 8000, samples: 6400, amplitude: 9000 }));
    assert.equal(app.calls.active, 1, "a call that sends audio stays up");
    // Then nothing, with the socket left open (a peer gone without a close). The last message
    // went out 20 ms ago (speak paces at real time).
    const silentFrom = performance.now() - 20;
    let closedAt = 0;
    void call.ended.then(() => (closedAt = performance.now()));
    await until(() => app.sessions.get(run.runId)?.finalize !== undefined, 5000, "finalized");
    const fin = app.sessions.get(run.runId)!.finalize!;
    assert.equal(fin.usage.endedBy, `end: ${MEDIA_STOPPED}`);
    await until(() => closedAt > 0, 3000, "the server closed the socket");
    const ms = closedAt - silentFrom;
    assert.ok(ms >= 400 - 10 && ms < 3000, `socket closed ${Math.round(ms)} ms into the silence`);
  } finally {
    await app.calls.drain(500);
    await srv.shutdown();
  }
});
