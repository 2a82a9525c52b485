/**
 * Turn-taking benchmark (`deno task bench --only turns`): a cascaded call over a real
 * Twilio-protocol WebSocket, the default energy VAD, the real eSpeak NG voice, and doubles for
 * the two network services with settable delays: a transcriber that hears exactly the parts of
 * the caller's utterance whose audio it has been given (its punctuation is the whole sentence's:
 * a fragment has none) and a model that answers "Okay.". The caller is espeak-ng (bench/turn_speech.ts), paced
 * in real time.
 *
 * Per configuration it reports:
 * - latency from the caller's last word (the last voiced sample, at the time the caller said it)
 *   to the bot's first audio at the caller, median and p90, with the stages on the way (end of
 *   speech from the VAD, the turn's end, the reply's first text, its first synthesized audio,
 *   the bot starting to speak), all measured from that last word;
 * - premature turns: a turn ended (the model asked to answer for real) before the caller's last
 *   word, on sentences with a 300-700 ms pause inside them.
 *
 * Configurations: the old fixed window (800 ms of silence, nothing else) and the adaptive default
 * (core/turn_end.ts), each with instant services and with 300 ms ones. Timings share two cores
 * with whatever else runs: read them as a comparison on one machine at one time.
 * @module
 */

import { buildCascadedTask } from "../core/builders.ts";
import { ulawDecode, ulawEncode } from "../core/audio/g711.ts";
import { rms } from "../core/audio/pcm.ts";
import { encodeWav } from "../core/audio/wav.ts";
import {
  type AgentBrain,
  type AudioFrame,
  type Frame,
  type LlmContext,
  type LlmService,
  makeFrame,
  type SttService,
} from "../mod.ts";
import { silentLogger } from "../core/log.ts";
import type { FramePushEvent, Observer } from "../core/observers.ts";
import { DEFAULT_TURN_WINDOWS, type TurnWindows } from "../core/turn_end.ts";
import { createEspeakTts } from "../providers/tts/espeak.ts";
import { MemorySessionSource } from "../server/session_store.ts";
import { createTwilioSerializer } from "../telephony/serializers/twilio.ts";
import { socketFromWebSocket, WsMediaTransport } from "../telephony/ws_transport.ts";
import { percentile } from "./core.ts";
import {
  pausedScripts,
  speakUtterance,
  SPEECH_RATE,
  type SpokenUtterance,
  WHOLE_SENTENCES,
} from "./turn_speech.ts";

/** The fixed window the cascaded pipeline had: 800 ms of silence ends every turn. */
export const FIXED_800_WINDOWS: Readonly<TurnWindows> = Object.freeze({
  pauseMs: 800,
  completeMs: 0,
  unsureMs: 0,
  incompleteMs: 0,
  speculate: false,
});

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** When each piece of the caller's utterance ended, on this process's clock. */
interface Heard {
  text: string;
  endAt: number;
}

/** A transcriber double: on each end of speech, the pieces whose voice has ended since. */
export class OracleStt implements SttService {
  #plan: Heard[] = [];
  /**
   * `delayMs` before each transcript; `stopEveryPiece` ends every piece with a full stop, as a
   * batch transcriber (Whisper) does with each segment it is sent alone.
   */
  constructor(readonly delayMs = 0, readonly stopEveryPiece = false) {}
  /** The pieces of the utterance now being spoken. */
  plan(pieces: Heard[]): void {
    this.#plan = [...pieces];
  }
  name(): string {
    return "oracle-stt";
  }
  start(): Promise<void> {
    return Promise.resolve();
  }
  runStt(_audio: AudioFrame): Promise<Frame[]> {
    return Promise.resolve([]);
  }
  setMuted(): void {}
  speechStarted(): void {}
  async speechStopped(): Promise<Frame[]> {
    const now = performance.now();
    const heard: string[] = [];
    while (this.#plan.length > 0 && this.#plan[0].endAt <= now) {
      heard.push(this.#plan.shift()!.text);
    }
    if (this.delayMs > 0) await sleep(this.delayMs);
    if (heard.length === 0) return [];
    let text = heard.join(" ");
    if (this.stopEveryPiece && !/[.?!]$/.test(text)) text += ".";
    return [makeFrame("Transcription", { text, userId: "user", final: true })];
  }
}

/** A model that answers "Okay." after `ttfbMs`, and stops when aborted. */
export class OkayLlm implements LlmService {
  requests = 0;
  constructor(readonly ttfbMs = 0) {}
  name(): string {
    return "okay-llm";
  }
  start(): Promise<void> {
    return Promise.resolve();
  }
  setTools(): void {}
  async *runLlm(_context: LlmContext, signal?: AbortSignal): AsyncIterable<Frame> {
    this.requests++;
    yield makeFrame("LlmResponseStart", {});
    if (this.ttfbMs > 0) await sleep(this.ttfbMs);
    if (signal?.aborted) return;
    yield makeFrame("LlmText", { text: "Okay." });
    yield makeFrame("LlmResponseEnd", {});
  }
}

/** A brain with no tools. */
export const quietBrain: AgentBrain = {
  systemPrompt: () => "Answer briefly.",
  tools: () => [],
  currentNodeId: () => "main",
  onToolCall: () => ({ type: "stay", result: {} }),
  isFinished: () => false,
  collectedVars: () => ({}),
};

/** Times (performance.now) of the frames a turn is measured by, first sighting of each frame. */
class StageClock implements Observer {
  readonly events: { kind: string; at: number }[] = [];
  readonly #seen = new Set<number>();
  onPush(e: FramePushEvent): void {
    const f = e.frame;
    let kind: string | undefined;
    switch (f.kind) {
      case "UserStoppedSpeaking":
        kind = "end_of_speech";
        break;
      case "LlmContext":
        if (f.draft === undefined) kind = "turn_end";
        break;
      case "LlmDraftSettled":
        if (f.confirmed) kind = "turn_end";
        break;
      case "LlmText":
        kind = "reply_text";
        break;
      case "TtsAudio":
        kind = "reply_audio";
        break;
      case "BotStartedSpeaking":
        kind = "bot_started";
        break;
    }
    if (kind === undefined || this.#seen.has(f.id)) return;
    this.#seen.add(f.id);
    this.events.push({ kind, at: performance.now() });
  }
  /** The first `kind` at or after `from`. */
  first(kind: string, from: number): number | undefined {
    return this.events.find((e) => e.kind === kind && e.at >= from)?.at;
  }
}

/** One configuration to measure. */
export interface TurnsCase {
  name: string;
  turns: TurnWindows;
  sttDelayMs: number;
  llmTtfbMs: number;
  /** The transcriber puts a full stop after every fragment (Whisper-style). */
  stopEveryPiece?: boolean;
}

/** What one caller turn gave. */
export interface TurnSample {
  utterance: string;
  pauseMs: number | undefined;
  /** A turn ended before the caller's last word. */
  premature: boolean;
  /** Last word to the bot's first audio message at the caller (ms). */
  firstAudioMs: number | undefined;
  /** Last word to its first voiced audio (ms). */
  firstVoiceMs: number | undefined;
  /** Server-side stages after the last word (ms). */
  stages: Record<string, number | undefined>;
}

/** A call on `c`; the caller says each utterance and waits for the answer. */
export async function runTurnsCase(
  c: TurnsCase,
  utterances: SpokenUtterance[],
): Promise<TurnSample[]> {
  const stt = new OracleStt(c.sttDelayMs, c.stopEveryPiece ?? false);
  const llm = new OkayLlm(c.llmTtfbMs);
  const clock = new StageClock();
  const sessions = new MemorySessionSource({ provider: "bench" });
  const run = await sessions.createRun("carrier", { carrier: "twilio" });
  let running: Promise<unknown> | undefined;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
    const { socket, response } = Deno.upgradeWebSocket(req);
    const transport = new WsMediaTransport(socketFromWebSocket(socket), createTwilioSerializer());
    running = buildCascadedTask({
      transport,
      stt,
      llm,
      tts: createEspeakTts(),
      brain: quietBrain,
      session: sessions,
      runId: run.runId,
      token: run.token,
      greeting: "Hello.",
      turns: c.turns,
      record: false,
      logger: silentLogger,
      taskParams: { idleTimeoutMs: null, observers: [clock] },
    }).run();
    return response;
  });
  const caller = await dial(`ws://127.0.0.1:${server.addr.port}/`);
  const out: TurnSample[] = [];
  try {
    await caller.quiet(600, 8000); // the greeting has played
    for (const u of utterances) out.push(await turn(u, caller, stt, clock));
  } finally {
    await caller.hangUp();
    await running;
    await server.shutdown();
  }
  return out;
}

async function turn(
  u: SpokenUtterance,
  caller: Caller,
  stt: OracleStt,
  clock: StageClock,
): Promise<TurnSample> {
  // The caller speaks now: piece i's voice ends endSample / 8 ms after t0.
  const t0 = performance.now() + 40;
  stt.plan(u.pieces.map((p) => ({ text: p.text, endAt: t0 + (p.endSample * 1000) / SPEECH_RATE })));
  const lastWord = t0 + (u.pieces.at(-1)!.endSample * 1000) / SPEECH_RATE;
  const since = caller.received.length;
  await caller.say(u.pcm, t0);
  // Silence after the words, until the answer has played (or nothing came for long).
  await caller.silence(() => {
    const answered = caller.received.slice(since).some((m) => m.at > lastWord);
    return answered && performance.now() - caller.lastAt() > 400;
  }, 6000);
  const mine = caller.received.slice(since);
  const first = mine[0]?.at;
  const voiced = mine.find((m) => m.voiced)?.at;
  const endOfSpeech = clock.first("end_of_speech", lastWord);
  const turnEnds = clock.events.filter((e) => e.kind === "turn_end" && e.at >= t0);
  const premature = turnEnds.some((e) => e.at < lastWord);
  const end = turnEnds.find((e) => e.at >= lastWord)?.at;
  const after = (kind: string) => end === undefined ? undefined : clock.first(kind, end);
  const rel = (at: number | undefined) => at === undefined ? undefined : Math.round(at - lastWord);
  return {
    utterance: u.script.pieces.join(" / "),
    pauseMs: u.script.pausesMs[0],
    premature,
    firstAudioMs: rel(first),
    firstVoiceMs: rel(voiced),
    stages: {
      end_of_speech: rel(endOfSpeech),
      turn_end: rel(end),
      reply_text: rel(after("reply_text")),
      reply_audio: rel(after("reply_audio")),
      bot_started: rel(after("bot_started")),
    },
  };
}

/** The caller's end of a Twilio media stream. */
export interface Caller {
  received: { at: number; voiced: boolean }[];
  lastAt(): number;
  say(pcm: Int16Array, t0: number): Promise<void>;
  /** Send silence (real time) until `done` or `maxMs`. */
  silence(done: () => boolean, maxMs: number): Promise<void>;
  /** Send silence until no audio came for `quietMs`. */
  quiet(quietMs: number, maxMs: number): Promise<void>;
  hangUp(): Promise<void>;
}

/** Dial `url` as Twilio's media stream (connected, start), ready to talk in real time. */
export async function dial(url: string): Promise<Caller> {
  const ws = new WebSocket(url);
  await new Promise((resolve, reject) => {
    ws.onopen = resolve;
    ws.onerror = reject;
  });
  const received: Caller["received"] = [];
  ws.onmessage = (e) => {
    const m = JSON.parse(String(e.data));
    if (m.event !== "media") return;
    const pcm = ulawDecode(Uint8Array.fromBase64(m.media.payload));
    received.push({ at: performance.now(), voiced: rms(pcm) > 300 });
  };
  const send = (o: unknown) => ws.send(JSON.stringify(o));
  send({ event: "connected", protocol: "Call", version: "1.0.0" });
  send({
    event: "start",
    streamSid: "MZ1",
    start: {
      streamSid: "MZ1",
      callSid: "CA1",
      customParameters: {},
      mediaFormat: { encoding: "audio/x-mulaw", sampleRate: 8000, channels: 1 },
    },
  });
  const FRAME = SPEECH_RATE / 50;
  const silentFrame = ulawEncode(new Int16Array(FRAME)).toBase64();
  // Frames go out when they are whole (each 20 ms after the one before, on an absolute
  // schedule, so timer lateness does not pile up).
  let next = performance.now();
  const frame = async (payload: string, at: number) => {
    const wait = at - performance.now();
    if (wait > 1) await sleep(wait);
    send({ event: "media", streamSid: "MZ1", media: { track: "inbound", payload } });
  };
  const lastAt = () => received.at(-1)?.at ?? 0;
  const silence = async (done: () => boolean, maxMs: number) => {
    const end = performance.now() + maxMs;
    while (!done() && performance.now() < end) {
      next = Math.max(next + 20, performance.now() - 20);
      await frame(silentFrame, next);
    }
  };
  return {
    received,
    lastAt,
    async say(pcm, t0) {
      const mu = ulawEncode(pcm);
      for (let i = 0; i < mu.length; i += FRAME) {
        const part = new Uint8Array(FRAME).fill(0xff);
        part.set(mu.subarray(i, Math.min(mu.length, i + FRAME)));
        next = t0 + ((i + FRAME) * 1000) / SPEECH_RATE;
        await frame(part.toBase64(), next);
      }
    },
    silence,
    quiet: (quietMs, maxMs) =>
      silence(() => received.length > 0 && performance.now() - lastAt() >= quietMs, maxMs),
    async hangUp() {
      send({ event: "stop", streamSid: "MZ1", stop: { callSid: "CA1" } });
      await sleep(50);
      ws.close();
    },
  };
}

/** median and p90 of the defined values, and how many there were. */
function stat(xs: (number | undefined)[]): { p50: number; p90: number; n: number } | undefined {
  const v = xs.filter((x): x is number => x !== undefined);
  if (v.length === 0) return undefined;
  return { p50: percentile(v, 50), p90: percentile(v, 90), n: v.length };
}

/** Summary of one case's samples. */
export function summarizeTurns(samples: TurnSample[]) {
  const paused = samples.filter((s) => s.pauseMs !== undefined);
  const answered = samples.filter((s) => !s.premature);
  const stages: Record<string, unknown> = {};
  for (const k of Object.keys(answered[0]?.stages ?? {})) {
    stages[k] = stat(answered.map((s) => s.stages[k]));
  }
  return {
    premature_turns: paused.filter((s) => s.premature).length,
    paused_utterances: paused.length,
    premature_rate: paused.length === 0
      ? 0
      : Math.round((paused.filter((s) => s.premature).length / paused.length) * 1000) / 1000,
    last_word_to_first_audio_ms: stat(answered.map((s) => s.firstAudioMs)),
    last_word_to_first_voiced_audio_ms: stat(answered.map((s) => s.firstVoiceMs)),
    stages_after_last_word_ms: stages,
  };
}

/** The cases the bench runs. */
export function turnsCases(): TurnsCase[] {
  const adaptive = { ...DEFAULT_TURN_WINDOWS };
  return [
    { name: "fixed_800ms_instant", turns: FIXED_800_WINDOWS, sttDelayMs: 0, llmTtfbMs: 0 },
    { name: "adaptive_instant", turns: adaptive, sttDelayMs: 0, llmTtfbMs: 0 },
    {
      name: "fixed_800ms_300ms_services",
      turns: FIXED_800_WINDOWS,
      sttDelayMs: 300,
      llmTtfbMs: 300,
    },
    { name: "adaptive_300ms_services", turns: adaptive, sttDelayMs: 300, llmTtfbMs: 300 },
    // The weak spot: a transcriber that makes every fragment a sentence.
    {
      name: "adaptive_instant_fragments_stopped",
      turns: adaptive,
      sttDelayMs: 0,
      llmTtfbMs: 0,
      stopEveryPiece: true,
    },
    {
      name: "adaptive_complete_500ms_fragments_stopped",
      turns: { ...adaptive, completeMs: 500 },
      sttDelayMs: 0,
      llmTtfbMs: 0,
      stopEveryPiece: true,
    },
  ];
}

/**
 * The turns group: every case over the paused set (once, or twice when not `quick`) and the
 * whole sentences; WAVs of the utterances go to `.tmp/turns/` for listening.
 */
export async function runTurnsBench(quick: boolean, only?: string[]) {
  const scripts = [
    ...pausedScripts(quick ? 1 : 2),
    ...WHOLE_SENTENCES.map((s) => ({ pieces: [s], pausesMs: [] })),
  ];
  const utterances = await Promise.all(scripts.map((s) => speakUtterance(s)));
  await Deno.mkdir(".tmp/turns", { recursive: true });
  await Promise.all(
    utterances.map((u, i) =>
      Deno.writeFile(`.tmp/turns/utterance-${i}.wav`, encodeWav(u.pcm, SPEECH_RATE))
    ),
  );
  const cases: Record<string, unknown> = {};
  const samples: Record<string, TurnSample[]> = {};
  for (const c of turnsCases()) {
    if (only && !only.includes(c.name)) continue;
    console.error(`bench: turns ${c.name} (${utterances.length} caller turns)...`);
    const s = await runTurnsCase(c, utterances);
    samples[c.name] = s;
    cases[c.name] = {
      turns: c.turns,
      stt_delay_ms: c.sttDelayMs,
      llm_ttfb_ms: c.llmTtfbMs,
      ...(c.stopEveryPiece ? { stt_stops_every_fragment: true } : {}),
      ...summarizeTurns(s),
    };
  }
  return {
    note: "one call per case; caller = espeak-ng, paced in real time over a Twilio socket; " +
      "real eSpeak NG voice; timings are on a shared 2-core machine",
    utterances: scripts.length,
    cases,
    samples,
  };
}

if (import.meta.main) {
  const names = Deno.args.filter((a) => !a.startsWith("--"));
  const r = await runTurnsBench(Deno.args.includes("--quick"), names.length ? names : undefined);
  for (const [name, list] of Object.entries(r.samples)) {
    for (const t of list) console.error(name, JSON.stringify(t));
  }
  console.log(JSON.stringify({ ...r, samples: undefined }, null, 2));
}
