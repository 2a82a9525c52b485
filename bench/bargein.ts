/**
 * Barge-in benchmark (`deno task bench --only bargein`): how soon the bot falls silent when the
 * caller talks over it, and how often it is cut off by sounds that are not speech.
 *
 * Each trial is a cascaded call (default energy VAD, the real eSpeak NG voice, the transcriber and
 * model doubles of bench/turns.ts) whose greeting is long. About a second into it, the caller
 * either speaks (an espeak-ng sentence: a true barge-in) or makes a noise that is not speech (a
 * click, a short burst, a cough-length burst, a hum: a false one). Per trial:
 *
 * - latency: from the caller's speech onset (its first voiced sample, when said) to our last agent
 *   audio frame (the last `sendAudio` of the bot's voice before the barge-in cleared it);
 * - a false barge-in: the bot's speech was interrupted by a noise;
 * - a hold: the bot's audio paused on a first sign of voice (then resumed, for a noise).
 *
 * Both legs: a Twilio-protocol WebSocket, and SIP media (RTP between two RtpSessions on
 * 127.0.0.1; signalling plays no part once a call is up). Configurations: the interruption path
 * before (the bot stops when the VAD confirms a start, 200 ms of speech) and with the hold. Timings
 * share two cores with other work: compare within one run.
 * @module
 */

import { buildCascadedTask } from "../core/builders.ts";
import { concatInt16, noise, sine } from "../core/audio/pcm.ts";
import type { AudioFrame } from "../core/frames.ts";
import type { MediaTransport } from "../core/seams.ts";
import type { DefaultTurnStrategy } from "../core/processors/turn.ts";
import { silentLogger } from "../core/log.ts";
import { DEFAULT_TURN_WINDOWS } from "../core/turn_end.ts";
import { createEspeakTts } from "../providers/espeak/tts.ts";
import { MemorySessionSource } from "../server/session_store.ts";
import { RtpSession } from "../telephony/sip/rtp_session.ts";
import type { NegotiatedMedia } from "../telephony/sip/sdp.ts";
import { SipMediaTransport } from "../telephony/sip/sip_transport.ts";
import { createTwilioSerializer } from "../telephony/serializers/twilio.ts";
import { socketFromWebSocket, WsMediaTransport } from "../telephony/ws_transport.ts";
import { percentile } from "./core.ts";
import { dial, OkayLlm, OracleStt, quietBrain } from "./turn_doubles.ts";
import { speakUtterance, SPEECH_RATE, WHOLE_SENTENCES } from "./turn_speech.ts";

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** The bot's long line: it is still talking whenever the caller cuts in. */
const LONG_GREETING = "Thanks for calling the Flowcat demo line, where every answer is local, " +
  "every voice is made on this machine, and nothing you say leaves it, so take your time " +
  "and tell me what you need help with today.";

/** What the caller does over the bot. */
export interface CallerAct {
  name: string;
  /** 8 kHz audio the caller sends, starting at its onset. */
  pcm: Int16Array;
  /** True when it is speech that should interrupt the bot. */
  speech: boolean;
}

/** Sounds that are not speech, as a caller's line makes them. */
export function noiseActs(): CallerAct[] {
  const at = (secs: number) => Math.round(secs * SPEECH_RATE);
  const burst = (secs: number, amp: number, seed: number) => noise(at(secs), amp, seed);
  return [
    { name: "click_20ms", pcm: burst(0.02, 12000, 1), speech: false },
    { name: "click_40ms", pcm: burst(0.04, 12000, 2), speech: false },
    { name: "burst_100ms", pcm: burst(0.1, 8000, 3), speech: false },
    { name: "burst_150ms", pcm: burst(0.15, 8000, 4), speech: false },
    {
      name: "two_clicks",
      pcm: concatInt16([burst(0.03, 12000, 5), new Int16Array(at(0.12)), burst(0.03, 12000, 6)]),
      speech: false,
    },
    { name: "cough_300ms", pcm: burst(0.3, 9000, 7), speech: false },
    {
      name: "hum_-40dBFS",
      pcm: sine({ freq: 120, sampleRate: SPEECH_RATE, samples: at(1), amplitude: 460 }),
      speech: false,
    },
    { name: "breath_-34dBFS", pcm: burst(0.4, 1200, 8), speech: false },
  ];
}

/** The caller's speech acts: espeak-ng sentences. */
export async function speechActs(n: number): Promise<CallerAct[]> {
  const out: CallerAct[] = [];
  for (const text of WHOLE_SENTENCES.slice(0, n)) {
    out.push({
      name: text,
      pcm: (await speakUtterance({ pieces: [text], pausesMs: [] })).pcm,
      speech: true,
    });
  }
  return out;
}

/** One configuration. */
export interface BargeInCase {
  name: string;
  leg: "twilio" | "sip";
  holdMs: number;
}

/** What one trial gave. */
export interface BargeInSample {
  act: string;
  speech: boolean;
  /** The bot was interrupted (its playback cleared). */
  interrupted: boolean;
  /** BotAudioHold frames sent. */
  holds: number;
  /** Onset to our last agent audio frame before the clear (ms); only for interruptions. */
  lastFrameMs?: number;
}

/** Records the bot's sends and clears on a leg. */
function watched(t: MediaTransport, sends: number[], clears: number[]): MediaTransport {
  const w: MediaTransport = {
    recv: () => t.recv(),
    sendAudio: (a: AudioFrame) => {
      sends.push(performance.now());
      return t.sendAudio(a);
    },
    sendClear: () => {
      clears.push(performance.now());
      return t.sendClear();
    },
    carrierRate: () => t.carrierRate(),
    close: () => t.close?.() ?? Promise.resolve(),
  };
  if (t.listen !== undefined) w.listen = t.listen.bind(t);
  return w;
}

/** The caller's side of a leg, for one trial. */
interface Leg {
  /** When the bot's audio last reached the caller (performance.now). */
  lastHeard(): number;
  /** Bot audio messages received. */
  heard(): number;
  /** Send `pcm` in real time from `t0`, then silence for `afterMs`. */
  send(pcm: Int16Array, t0: number, afterMs: number): Promise<void>;
  close(): Promise<void>;
}

async function twilioLeg(onTransport: (t: MediaTransport) => void): Promise<Leg> {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
    const { socket, response } = Deno.upgradeWebSocket(req);
    onTransport(new WsMediaTransport(socketFromWebSocket(socket), createTwilioSerializer()));
    return response;
  });
  const caller = await dial(`ws://127.0.0.1:${server.addr.port}/`);
  return {
    lastHeard: () => caller.lastAt(),
    heard: () => caller.received.length,
    async send(pcm, t0, afterMs) {
      await caller.say(pcm, t0);
      const end = performance.now() + afterMs;
      await caller.silence(() => performance.now() >= end, afterMs + 100);
    },
    async close() {
      await caller.hangUp();
      await server.shutdown();
    },
  };
}

function sipMedia(remotePort: number): NegotiatedMedia {
  return {
    codec: "PCMU",
    payloadType: 0,
    telephoneEventPt: 101,
    remoteAddress: "127.0.0.1",
    remotePort,
    ptime: 20,
    remoteDirection: "sendrecv",
    localDirection: "sendrecv",
    hold: false,
  };
}

function sipLeg(onTransport: (t: MediaTransport) => void): Leg {
  const open = () =>
    RtpSession.open({
      bindHost: "127.0.0.1",
      portBase: 20000 + 2 * Math.floor(Math.random() * 15000),
      portTries: 200,
      keepAliveSilence: false,
    });
  const agent = open();
  const caller = open();
  const transport = new SipMediaTransport("bench-call", agent, () => Promise.resolve());
  let heard = 0;
  let last = 0;
  agent.start(sipMedia(caller.port), {
    onAudio: (pcm) => transport.pushAudio(pcm),
    onDtmf: (k) => transport.pushDtmf(k),
  });
  caller.start(sipMedia(agent.port), {
    onAudio: () => {
      heard++;
      last = performance.now();
    },
    onDtmf: () => {},
  });
  onTransport(transport);
  const FRAME = SPEECH_RATE / 50;
  const silent = new Int16Array(FRAME);
  // The caller's line always carries packets, speech or silence, as a phone's does.
  let stopped = false;
  let next = performance.now();
  let queue: Int16Array[] = [];
  const pump = (async () => {
    while (!stopped) {
      next += 20;
      const wait = next - performance.now();
      if (wait > 1) await sleep(wait);
      caller.sendPcm8k(queue.shift() ?? silent);
    }
  })();
  return {
    lastHeard: () => last,
    heard: () => heard,
    async send(pcm, t0, afterMs) {
      const wait = t0 - performance.now();
      if (wait > 0) await sleep(wait);
      const frames: Int16Array[] = [];
      for (let i = 0; i < pcm.length; i += FRAME) {
        const f = new Int16Array(FRAME);
        f.set(pcm.subarray(i, Math.min(pcm.length, i + FRAME)));
        frames.push(f);
      }
      queue = frames;
      await sleep((frames.length * 20) + afterMs);
    },
    async close() {
      stopped = true;
      await pump;
      transport.stop();
      await caller.close();
      await agent.close();
    },
  };
}

/** One call: the greeting plays, then `delayMs` into it the caller does `act` over it. */
export async function bargeInTrial(
  c: BargeInCase,
  act: CallerAct,
  delayMs: number,
): Promise<BargeInSample> {
  const sends: number[] = [];
  const clears: number[] = [];
  const sessions = new MemorySessionSource({ provider: "bench" });
  const run = await sessions.createRun("carrier", { carrier: "twilio" });
  let running: Promise<unknown> | undefined;
  let strategy: DefaultTurnStrategy | undefined;
  const start = (transport: MediaTransport) => {
    const task = buildCascadedTask({
      transport: watched(transport, sends, clears),
      stt: new OracleStt(),
      llm: new OkayLlm(),
      tts: createEspeakTts(),
      brain: quietBrain,
      session: sessions,
      runId: run.runId,
      token: run.token,
      greeting: LONG_GREETING,
      turns: { ...DEFAULT_TURN_WINDOWS },
      bargeIn: { holdMs: c.holdMs },
      record: false,
      logger: silentLogger,
      taskParams: { idleTimeoutMs: null },
    });
    strategy = task.parts.vad.turnStrategy as DefaultTurnStrategy;
    running = task.run();
  };
  const leg = c.leg === "twilio" ? await twilioLeg(start) : sipLeg(start);
  try {
    // The bot has been speaking for `delayMs` at the caller.
    const deadline = performance.now() + 10_000;
    while (leg.heard() === 0 && performance.now() < deadline) await sleep(5);
    const t0 = performance.now() + delayMs;
    await leg.send(act.pcm, t0, 1000);
    const clear = clears.find((t) => t >= t0);
    const before = clear === undefined ? [] : sends.filter((t) => t <= clear);
    return {
      act: act.name,
      speech: act.speech,
      interrupted: clear !== undefined,
      holds: strategy?.holdCount ?? 0,
      ...(clear !== undefined && before.length > 0
        ? { lastFrameMs: Math.round(before.at(-1)! - t0) }
        : {}),
    };
  } finally {
    await leg.close();
    await running;
  }
}

/** The cases the bench runs. */
export function bargeInCases(): BargeInCase[] {
  return [
    { name: "twilio_confirm_only", leg: "twilio", holdMs: 0 },
    { name: "twilio_hold", leg: "twilio", holdMs: 300 },
    { name: "sip_confirm_only", leg: "sip", holdMs: 0 },
    { name: "sip_hold", leg: "sip", holdMs: 300 },
  ];
}

/** Summary of one case. */
export function summarizeBargeIn(samples: BargeInSample[]) {
  const speech = samples.filter((s) => s.speech);
  const noise = samples.filter((s) => !s.speech);
  const ms = speech.map((s) => s.lastFrameMs).filter((x): x is number => x !== undefined);
  return {
    barge_ins: speech.length,
    barge_ins_that_interrupted: speech.filter((s) => s.interrupted).length,
    onset_to_last_agent_frame_ms: ms.length === 0
      ? undefined
      : { p50: percentile(ms, 50), p90: percentile(ms, 90), max: Math.max(...ms), n: ms.length },
    noises: noise.length,
    false_barge_ins: noise.filter((s) => s.interrupted).length,
    false_barge_in_acts: noise.filter((s) => s.interrupted).map((s) => s.act),
    noises_that_held_the_bot: noise.filter((s) => s.holds > 0 && !s.interrupted).length,
  };
}

/** The bargein group: every case over the speech and noise acts. */
export async function runBargeInBench(quick: boolean, only?: string[]) {
  const acts = [...await speechActs(quick ? 4 : 6), ...noiseActs()];
  const cases: Record<string, unknown> = {};
  const samples: Record<string, BargeInSample[]> = {};
  for (const c of bargeInCases()) {
    if (only && !only.includes(c.name)) continue;
    console.error(`bench: bargein ${c.name} (${acts.length} trials)...`);
    const list: BargeInSample[] = [];
    let i = 0;
    for (const act of acts) list.push(await bargeInTrial(c, act, 700 + (i++ * 173) % 900));
    samples[c.name] = list;
    cases[c.name] = { leg: c.leg, hold_ms: c.holdMs, ...summarizeBargeIn(list) };
  }
  return {
    note: "one call per trial; the caller cuts in 0.7-1.6 s into the bot's long greeting; " +
      "latency to the last sendAudio of the bot's voice before its playback was cleared; " +
      "timings are on a shared 2-core machine",
    cases,
    samples,
  };
}

// The command-line entry every benchmark has (bench/turns.ts too): run it alone, samples to stderr.
if (import.meta.main) {
  const names = Deno.args.filter((a) => !a.startsWith("--"));
  const r = await runBargeInBench(Deno.args.includes("--quick"), names.length ? names : undefined);
  for (const [name, list] of Object.entries(r.samples)) {
    for (const t of list) console.error(name, JSON.stringify(t));
  }
  console.log(JSON.stringify({ ...r, samples: undefined }, null, 2));
}
