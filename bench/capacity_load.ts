/**
 * The capacity benchmark's load generator: N Twilio-framed media WebSockets, each created the
 * way a carrier creates it (a signed answer webhook, then the stream URL with its call token),
 * each sending 20 ms mu-law `media` messages at 50 per second from a jittered start.
 *
 * Latency is matched by count: in the echo model's frame mode every inbound 20 ms frame comes
 * back as exactly one outbound 20 ms media message (8 kHz -> 16 kHz -> 24 kHz -> 8 kHz, every
 * ratio integral per frame, so no resampler splits or merges a frame; {@link AudioRun.oddSize}
 * counts any message whose size says otherwise). The k-th message received on a call is the
 * echo of the k-th frame sent on it; its latency is receive time minus send time, both read
 * with `performance.now()` in this process.
 * @module
 */

import { ulawEncode } from "../core/audio/g711.ts";
import { sine } from "../core/audio/pcm.ts";
import { twilioSignature } from "../telephony/security.ts";
import { BENCH_PUBLIC_URL, BENCH_TWILIO_TOKEN } from "./capacity_child.ts";

/** Sent frames remembered per call for matching (5 s of audio); older echoes cannot match. */
const RING = 256;
const MEDIA_PREFIX = '{"event":"media"';
/** One 20 ms frame of a 440 Hz tone, mu-law, base64 (the content does not matter to the echo). */
const PAYLOAD = ulawEncode(
  sine({ freq: 440, sampleRate: 8000, samples: 160, amplitude: 8000 }),
).toBase64();

/** One caller. */
export interface LoadCall {
  index: number;
  ws: WebSocket;
  sid: string;
  /** Start of this call's audio, ms after the run's t0 (a multiple of 1 ms). */
  offsetMs: number;
  sent: number;
  recv: number;
  /** Media messages received before any audio was sent (the echo model sends none). */
  unsolicited: number;
  oddSize: number;
  readonly sendTimes: Float64Array;
  readonly expectLen: number;
  closed: Promise<void>;
}

/** Latency samples shared by every call of a run. */
interface Sink {
  lat: Float64Array;
  n: number;
  /** Frames below this index (per call) are warm-up: counted, not sampled. */
  warmup: number;
}

let sink: Sink | undefined;

function onMedia(c: LoadCall, data: string, now: number): void {
  if (data.length !== c.expectLen) c.oddSize++;
  const k = c.recv;
  if (k >= c.sent) {
    c.unsolicited++;
    return;
  }
  c.recv = k + 1;
  const s = sink;
  if (s !== undefined && k >= s.warmup && s.n < s.lat.length) {
    s.lat[s.n++] = now - c.sendTimes[k % RING];
  }
}

/** Outcome of opening one call. */
export type OpenOutcome = { ok: true; call: LoadCall } | { ok: false; reason: string };

/** Create a run through the answer webhook and open its media socket on `port`. */
export async function openCall(port: number, index: number): Promise<OpenOutcome> {
  const base = `http://127.0.0.1:${port}`;
  const sid = `MZ${String(index).padStart(32, "0")}`;
  const params = {
    AccountSid: "AC00000000000000000000000000000000",
    CallSid: `CA${String(index).padStart(32, "0")}`,
    From: "+14155550100",
    To: "+14155550123",
  };
  const path = "/telephony/answer/twilio";
  const sig = await twilioSignature(BENCH_TWILIO_TOKEN, `${BENCH_PUBLIC_URL}${path}`, params);
  const res = await fetch(`${base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": sig },
    body: new URLSearchParams(params).toString(),
  });
  const twiml = await res.text();
  if (res.status !== 200) return { ok: false, reason: `answer webhook: HTTP ${res.status}` };
  const m = /url="([^"]+)"/.exec(twiml);
  if (m === null) return { ok: false, reason: "answer document without a stream URL" };
  const url = new URL(m[1].replaceAll("&amp;", "&"));
  const token = url.searchParams.get("token") ?? "";
  const ws = new WebSocket(`ws://127.0.0.1:${port}${url.pathname}${url.search}`);
  const closed = Promise.withResolvers<void>();
  ws.addEventListener("close", () => closed.resolve());
  const opened = await new Promise<boolean>((resolve) => {
    ws.addEventListener("open", () => resolve(true), { once: true });
    ws.addEventListener("error", () => resolve(false), { once: true });
  });
  if (!opened) {
    await closed.promise;
    return { ok: false, reason: "media socket refused" };
  }
  const expectLen = `${MEDIA_PREFIX},"streamSid":"${sid}","media":{"payload":"${PAYLOAD}"}}`.length;
  const call: LoadCall = {
    index,
    ws,
    sid,
    offsetMs: 0,
    sent: 0,
    recv: 0,
    unsolicited: 0,
    oddSize: 0,
    sendTimes: new Float64Array(RING),
    expectLen,
    closed: closed.promise,
  };
  ws.onmessage = (e) => {
    const d = e.data;
    if (typeof d === "string" && d.startsWith(MEDIA_PREFIX)) onMedia(call, d, performance.now());
  };
  ws.send(JSON.stringify({ event: "connected", protocol: "Call", version: "1.0.0" }));
  ws.send(JSON.stringify({
    event: "start",
    sequenceNumber: "1",
    streamSid: sid,
    start: {
      streamSid: sid,
      accountSid: params.AccountSid,
      callSid: params.CallSid,
      tracks: ["inbound"],
      customParameters: { token },
      mediaFormat: { encoding: "audio/x-mulaw", sampleRate: 8000, channels: 1 },
    },
  }));
  return { ok: true, call };
}

/** Call numbers are unique per process: the answer webhook refuses a replayed signature. */
let callCounter = 0;

/** Open `n` calls spread round-robin over `ports`, `concurrency` at a time. */
export async function openCalls(
  ports: readonly number[],
  n: number,
  concurrency = 32,
): Promise<{ calls: LoadCall[]; refused: string[] }> {
  const calls: LoadCall[] = [];
  const refused: string[] = [];
  let next = 0;
  const worker = async () => {
    while (next < n) {
      const i = next++;
      const r = await openCall(ports[i % ports.length], ++callCounter);
      if (r.ok) calls.push(r.call);
      else refused.push(r.reason);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, worker));
  return { calls, refused };
}

/** Totals and samples of one audio run. */
export interface AudioRun {
  framesSent: number;
  framesEchoed: number;
  unsolicited: number;
  oddSize: number;
  /** Per-frame latency samples in ms (warm-up frames excluded). */
  latencyMs: Float64Array;
  /** How late the generator sent each 1 ms phase slot's frames, ms. */
  sendLagMs: Float64Array;
  /** Wall time of the sending window, seconds. */
  wallSeconds: number;
  /** Time spent waiting for the last echoes after sending stopped, seconds. */
  drainSeconds: number;
}

/** Options of {@link runAudio}. */
export interface AudioOptions {
  durationMs: number;
  /** Call starts are spread uniformly over this window (default 1000 ms). */
  rampMs?: number;
  /** Each call's first frames not sampled for latency (default 50: its first second). */
  warmupFrames?: number;
  /** Longest wait for the last echoes after sending stops (default 3000 ms). */
  drainMs?: number;
  /** Random source for the jitter (tests). */
  random?: () => number;
}

function frameJson(c: LoadCall): string {
  const k = c.sent;
  return `{"event":"media","sequenceNumber":"${k + 2}","media":{"track":"inbound","chunk":"${
    k + 1
  }","timestamp":"${k * 20}","payload":"${PAYLOAD}"},"streamSid":"${c.sid}"}`;
}

/**
 * Send 20 ms frames on every call for `durationMs`, then wait for the echoes. Calls are grouped
 * in 20 slots by start phase (1 ms apart); one 1 ms timer walks the slots, so the generator costs
 * one timer in all, not one per call. One run at a time per process (the samples are shared).
 */
export async function runAudio(calls: readonly LoadCall[], o: AudioOptions): Promise<AudioRun> {
  const ramp = o.rampMs ?? 1000;
  const random = o.random ?? Math.random;
  const slots: LoadCall[][] = Array.from({ length: 20 }, () => []);
  for (const c of calls) {
    c.offsetMs = Math.floor(random() * ramp);
    slots[c.offsetMs % 20].push(c);
  }
  const perSecond = 50 * calls.length;
  sink = {
    lat: new Float64Array(Math.ceil(perSecond * (o.durationMs / 1000 + 1))),
    n: 0,
    warmup: o.warmupFrames ?? 50,
  };
  const lag = new Float64Array(Math.ceil((o.durationMs + ramp) / 1000 * 1000) + 64);
  let lagN = 0;
  const t0 = performance.now() + 5;
  const due = slots.map((_, b) => t0 + b);
  const end = t0 + o.durationMs;
  let framesSent = 0;
  await new Promise<void>((resolve) => {
    const tick = () => {
      const now = performance.now();
      let more = false;
      for (let b = 0; b < 20; b++) {
        while (due[b] <= now && due[b] < end) {
          const at = due[b];
          if (lagN < lag.length) lag[lagN++] = now - at;
          for (const c of slots[b]) {
            if (t0 + c.offsetMs > at || c.ws.readyState !== WebSocket.OPEN) continue;
            const text = frameJson(c);
            c.sendTimes[c.sent % RING] = performance.now();
            c.sent++;
            c.ws.send(text);
            framesSent++;
          }
          due[b] += 20;
        }
        if (due[b] < end) more = true;
      }
      if (more) setTimeout(tick, 1);
      else resolve();
    };
    setTimeout(tick, Math.max(0, t0 - performance.now()));
  });
  const wallSeconds = (performance.now() - t0) / 1000;
  const drainFrom = performance.now();
  const drainBy = drainFrom + (o.drainMs ?? 3000);
  while (performance.now() < drainBy && calls.some((c) => c.recv < c.sent)) {
    await new Promise((r) => setTimeout(r, 20));
  }
  const s = sink;
  sink = undefined;
  let framesEchoed = 0;
  let unsolicited = 0;
  let oddSize = 0;
  for (const c of calls) {
    framesEchoed += c.recv;
    unsolicited += c.unsolicited;
    oddSize += c.oddSize;
  }
  return {
    framesSent,
    framesEchoed,
    unsolicited,
    oddSize,
    latencyMs: s.lat.subarray(0, s.n),
    sendLagMs: lag.subarray(0, lagN),
    wallSeconds,
    drainSeconds: (performance.now() - drainFrom) / 1000,
  };
}

/** Hang up every call (Twilio `stop`, then close) and wait for the sockets to close. */
export async function closeCalls(calls: readonly LoadCall[], timeoutMs = 10_000): Promise<void> {
  for (const c of calls) {
    if (c.ws.readyState !== WebSocket.OPEN) continue;
    c.ws.send(JSON.stringify({ event: "stop", streamSid: c.sid, stop: { callSid: c.sid } }));
    c.ws.close();
  }
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    Promise.all(calls.map((c) => c.closed)),
    new Promise((r) => (timer = setTimeout(r, timeoutMs))),
  ]);
  clearTimeout(timer);
}
