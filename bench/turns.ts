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
 * Configurations: a fixed window (800 ms of silence, nothing else) and the adaptive default
 * (core/turn_end.ts), each with instant services and with 300 ms ones. Timings share two cores
 * with whatever else runs: read them as a comparison on one machine at one time.
 * @module
 */

import { buildCascadedTask } from "../core/builders.ts";
import { encodeWav } from "../core/audio/wav.ts";
import { silentLogger } from "../core/log.ts";
import type { FramePushEvent, Observer } from "../core/observers.ts";
import { DEFAULT_TURN_WINDOWS, type TurnWindows } from "../core/turn_end.ts";
import { createEspeakTts } from "../providers/espeak/tts.ts";
import { MemorySessionSource } from "../server/session_store.ts";
import { createTwilioSerializer } from "../telephony/serializers/twilio.ts";
import { socketFromWebSocket, WsMediaTransport } from "../telephony/ws_transport.ts";
import { percentile } from "./core.ts";
import { type Caller, dial, OkayLlm, OracleStt, quietBrain } from "./turn_doubles.ts";
import {
  pausedScripts,
  speakUtterance,
  SPEECH_RATE,
  type SpokenUtterance,
  WHOLE_SENTENCES,
} from "./turn_speech.ts";

/** The fixed-window baseline: 800 ms of silence ends every turn, nothing else counts. */
export const FIXED_800_WINDOWS: Readonly<TurnWindows> = Object.freeze({
  pauseMs: 800,
  completeMs: 0,
  unsureMs: 0,
  incompleteMs: 0,
  speculate: false,
});

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
