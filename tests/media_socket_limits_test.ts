/**
 * Media-socket limits: what a holder of a valid call token (or anyone who can reach the media
 * route) can no longer do to the host. Unit checks on WsMediaTransport's inbound caps, then the
 * server's route over real WebSockets.
 */
import assert from "node:assert/strict";
import { ulawEncode } from "../core/audio/g711.ts";
import { sine } from "../core/audio/pcm.ts";
import { decodeWav } from "../core/audio/wav.ts";
import { silentLogger } from "../core/log.ts";
import type { MediaIn, WsIn } from "../core/seams.ts";
import { createAgentServer } from "../server/app.ts";
import { parseConfigText } from "../server/config.ts";
import { twilioSignature } from "../telephony/security.ts";
import { createTwilioSerializer } from "../telephony/serializers/twilio.ts";
import { socketFromWebSocket, WsMediaTransport } from "../telephony/ws_transport.ts";
import { twilioClient } from "./_twilio_client.ts";
import { sleep, until } from "./_core_helpers.ts";
import { HELLO_BYE_GRAPH } from "./_graph_fixture.ts";

/** A MediaSocket fed by the test: `push` a message, `end` to close. */
function memorySocket() {
  const queue: (WsIn | undefined)[] = [];
  let waiter: ((m: WsIn | undefined) => void) | undefined;
  return {
    push(m: WsIn | undefined) {
      if (waiter) {
        const w = waiter;
        waiter = undefined;
        w(m);
      } else queue.push(m);
    },
    recv: () =>
      queue.length > 0
        ? Promise.resolve(queue.shift())
        : new Promise<WsIn | undefined>((r) => (waiter = r)),
    sendText: () => Promise.resolve(),
    sendBinary: () => Promise.resolve(),
  };
}

const start = JSON.stringify({
  event: "start",
  streamSid: "MZ1",
  start: { streamSid: "MZ1", callSid: "CA1", customParameters: {} },
});

/** A Twilio media message of `ms` of audio. */
function media(ms: number): string {
  const pcm = sine({ freq: 440, sampleRate: 8000, samples: ms * 8, amplitude: 5000 });
  return JSON.stringify({
    event: "media",
    streamSid: "MZ1",
    media: { track: "inbound", payload: ulawEncode(pcm).toBase64() },
  });
}

Deno.test("WsMediaTransport: oversized messages are dropped unparsed, long audio dropped", async () => {
  const sock = memorySocket();
  const t = new WsMediaTransport(sock, createTwilioSerializer(), { maxMessageAudioMs: 1000 });
  sock.push({ type: "text", data: start });
  // 30 MB: never parsed.
  sock.push({ type: "text", data: "x".repeat(30 * 1024 * 1024) });
  // Fits the byte cap at 8 kHz mu-law, but holds 1.5 s of audio.
  sock.push({ type: "text", data: media(1500) });
  sock.push({ type: "text", data: media(20) });
  sock.push(undefined);
  const got: MediaIn[] = [];
  for (;;) {
    const m = await t.recv();
    if (m === undefined) break;
    got.push(m);
  }
  assert.deepEqual(got.map((m) => m.type), ["start", "audio"]);
  assert.equal(t.droppedOversized, 2);
  // What the call-end line and flowcat_frames_dropped_total get.
  assert.deepEqual(t.droppedMedia(), { before_start: 0, oversized: 2, too_fast: 0 });
});

Deno.test("WsMediaTransport: audio faster than real time beyond the burst is dropped", async () => {
  const now = 0;
  const sock = memorySocket();
  const t = new WsMediaTransport(sock, createTwilioSerializer(), {
    maxAudioBurstMs: 200,
    now: () => now,
  });
  sock.push({ type: "text", data: start });
  assert.equal((await t.recv())?.type, "start");
  // 30 frames of 20 ms at once: the 200 ms burst passes (10 frames), the rest is dropped.
  for (let i = 0; i < 30; i++) sock.push({ type: "text", data: media(20) });
  sock.push({ type: "text", data: JSON.stringify({ event: "stop", streamSid: "MZ1" }) });
  const types: string[] = [];
  for (let m = await t.recv(); m !== undefined; m = await t.recv()) types.push(m.type);
  assert.deepEqual(types, [...Array(10).fill("audio"), "stop"]);
  assert.equal(t.droppedTooFast, 20);
  assert.deepEqual(t.droppedMedia(), { before_start: 0, oversized: 0, too_fast: 20 });
});

Deno.test("WsMediaTransport: audio at real time, with jitter, is never dropped", async () => {
  let now = 0;
  const sock = memorySocket();
  const t = new WsMediaTransport(sock, createTwilioSerializer(), {
    maxAudioBurstMs: 200,
    now: () => now,
  });
  sock.push({ type: "text", data: start });
  await t.recv();
  for (let i = 0; i < 200; i++) {
    // Arrivals 0-60 ms apart, 20 ms on average.
    now += [0, 20, 60, 0][i % 4];
    sock.push({ type: "text", data: media(20) });
    assert.equal((await t.recv())?.type, "audio", `frame ${i}`);
  }
  assert.equal(t.droppedTooFast, 0);
});

const CONFIG = {
  agent: {
    graph: HELLO_BYE_GRAPH,
  },
  pipeline: "s2s",
  providers: { realtime: { name: "echo", options: { tts: "none", greeting: "hi" } } },
  telephony: { public_url: "https://agent.example.com", carriers: ["twilio"] },
  recording: { enabled: false },
};

async function server(extra: Record<string, unknown> = {}) {
  const r = await parseConfigText(JSON.stringify({ ...CONFIG, ...extra }), "json", ".");
  if (!r.ok) throw new Error(JSON.stringify(r.problems));
  const app = await createAgentServer({
    config: r.config,
    env: (n) => (n === "TWILIO_AUTH_TOKEN" ? "secret" : undefined),
    logger: silentLogger,
  });
  const srv = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, app.handler);
  const ws = `ws://127.0.0.1:${srv.addr.port}/telephony/ws/twilio`;
  return {
    app,
    ws,
    close: async () => {
      await app.calls.drain(500);
      await srv.shutdown();
    },
  };
}

/** A WebSocket upgrade attempted with fetch, for the status of a refusal. */
async function upgradeStatus(url: string): Promise<number> {
  const res = await fetch(url.replace("ws:", "http:"), {
    headers: {
      upgrade: "websocket",
      connection: "Upgrade",
      "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
      "sec-websocket-version": "13",
    },
  });
  await res.body?.cancel();
  return res.status;
}

Deno.test("media route: one socket per token; an ended run's token is refused before upgrade", async () => {
  const s = await server();
  try {
    const run = await s.app.sessions.createRun("carrier", { carrier: "twilio" });
    const url = `${s.ws}/${run.runId}?token=${run.token}`;
    const call = await twilioClient(url, run.token);
    await until(() => s.app.calls.active === 1, 5000, "call running");
    // The same token again, while the call runs: refused, no second call.
    assert.equal(await upgradeStatus(url), 409);
    assert.equal(s.app.calls.active, 1);
    await call.hangup();
    await until(() => s.app.sessions.get(run.runId)?.finalize !== undefined, 5000, "finalized");
    await call.close();
    // And after the call ended.
    assert.equal(await upgradeStatus(url), 409);
    // A token passed in the start message (Twilio) is used once too.
    const run2 = await s.app.sessions.createRun("carrier", { carrier: "twilio" });
    const first = await twilioClient(`${s.ws}/${run2.runId}`, run2.token);
    await until(() => s.app.calls.active === 1, 5000, "second run's call");
    const again = new WebSocket(`${s.ws}/${run2.runId}`);
    const sock = socketFromWebSocket(again);
    await sock.opened;
    await sock.sendText(JSON.stringify({
      event: "start",
      streamSid: "MZ2",
      start: { streamSid: "MZ2", callSid: "CA2", customParameters: { token: run2.token } },
    }));
    for (;;) {
      const m = await sock.recv();
      if (m === undefined || m.type === "close") break;
    }
    assert.equal(s.app.calls.active, 1, "the copy was closed, not run");
    await first.hangup();
    await first.close();
  } finally {
    await s.close();
  }
});

Deno.test("media route: a socket that sends no start is closed after 5 s", async () => {
  const s = await server();
  try {
    const t0 = performance.now();
    const ws = new WebSocket(`${s.ws}/1`);
    const sock = socketFromWebSocket(ws);
    await sock.opened;
    for (;;) {
      const m = await sock.recv();
      if (m === undefined || m.type === "close") break;
    }
    const ms = performance.now() - t0;
    assert.ok(ms >= 4500 && ms < 8000, `closed after ${Math.round(ms)} ms`);
  } finally {
    await s.close();
  }
});

Deno.test("media route: a caller hanging up with audio queued is finalized within 1 s", async () => {
  const dir = await Deno.makeTempDir({ dir: "./.tmp", prefix: "hangup-" });
  const s = await server({ recording: { enabled: true, dir } });
  try {
    const run = await s.app.sessions.createRun("carrier", { carrier: "twilio" });
    const call = await twilioClient(`${s.ws}/${run.runId}?token=${run.token}`, run.token);
    await until(() => s.app.calls.active === 1, 5000, "call running");
    const t0 = performance.now();
    // The echo model says back what it hears: 3 s of speech queue 3 s of audio for the caller.
    await call.speak(sine({ freq: 300, sampleRate: 8000, samples: 8000 * 3, amplitude: 9000 }));
    await call.speak(new Int16Array(8000));
    await sleep(300);
    const hungUp = performance.now();
    await call.close(); // the socket goes away, no stop message
    await until(() => s.app.sessions.get(run.runId)?.finalize !== undefined, 3000, "finalized");
    const ms = performance.now() - hungUp;
    assert.ok(ms < 1000, `finalized ${Math.round(ms)} ms after the hang-up`);
    const fin = s.app.sessions.get(run.runId)!.finalize!;
    assert.equal(fin.usage.endedBy, "end: caller hung up");
    // The recording is as long as the call was, not the call plus the audio nobody heard.
    const wav = decodeWav(await Deno.readFile(fin.recordingUrl!));
    const wavSeconds = wav.pcm.length / wav.sampleRate;
    const callSeconds = (hungUp - t0) / 1000;
    assert.ok(
      Math.abs(wavSeconds - callSeconds) < 1,
      `recording ${wavSeconds.toFixed(1)} s, call ${callSeconds.toFixed(1)} s`,
    );
  } finally {
    await s.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("answer webhook: a run whose media socket is bound gets no copy of its token", async () => {
  const s = await server();
  try {
    const run = await s.app.sessions.createRun("outbound", { carrier: "twilio" });
    const path = `/telephony/answer/twilio/${run.runId}`;
    const answer = async (status: string) => {
      const params = { CallSid: "CA7", CallStatus: status, To: "+14155550123" };
      const sig = await twilioSignature("secret", `https://agent.example.com${path}`, params);
      return await fetch(`${s.ws.replace("ws:", "http:").replace(/\/telephony.*/, "")}${path}`, {
        method: "POST",
        headers: {
          "content-type": "application/x-www-form-urlencoded",
          "x-twilio-signature": sig,
        },
        body: new URLSearchParams(params).toString(),
      });
    };
    const first = await answer("in-progress");
    assert.equal(first.status, 200);
    assert.ok((await first.text()).includes(run.token));
    const call = await twilioClient(`${s.ws}/${run.runId}?token=${run.token}`, run.token);
    await until(() => s.app.calls.active === 1, 5000, "call running");
    // A second, differently signed webhook for the same run (an identical one is a replay).
    const again = await answer("ringing");
    assert.equal(again.status, 409);
    assert.ok(!(await again.text()).includes(run.token));
    await call.hangup();
    await call.close();
  } finally {
    await s.close();
  }
});
