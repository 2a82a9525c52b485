/**
 * The echo-cancellation test set: espeak-ng speech as the agent's voice sent over G.711, played
 * on the caller's clock (which may drift), through an echo path (bench/aec_paths.ts: a bulk
 * delay, then a synthetic room or handset, or sox reverbs of a few rooms, band-limited to the
 * telephone band), the echo sent back over G.711 with a little line noise, and a second
 * espeak-ng voice as the caller talking over the agent (double talk). Deterministic: the same
 * speech and seeds give the same set. Also the measures: ERLE, convergence time, and VAD
 * starts (barge-ins) over an output.
 * @module
 */

import { decodeWav } from "../core/audio/wav.ts";
import { resample } from "../core/audio/resample.ts";
import { ulawDecode, ulawEncode } from "../core/audio/g711.ts";
import {
  type EchoPathKind,
  echoReturnLossDb,
  echoThrough,
  noiseSource,
  ulaw,
} from "./aec_paths.ts";
import { EnergyVad } from "../core/audio/vad_energy.ts";
import { EchoCanceller, type EchoCancellerOptions } from "../core/audio/aec.ts";
import { DEFAULT_VAD_PARAMS } from "../core/frames.ts";

/** The agent's lines: about ten seconds of speech. */
export const AGENT_TEXT =
  "Thank you for calling the billing department. Your account shows a balance " +
  "of forty two dollars, due on the fifteenth of next month. If you would like to pay now, " +
  "I can take a card over the phone, or send you a link by text message. You can also set up " +
  "automatic payments, so you never miss a due date again.";
/** The caller's barge-in. */
export const CALLER_TEXT = "Sorry, wait a moment, I already paid that last week.";

/** One case: what the canceller gets, and the parts it was made of. */
export interface AecCase {
  /** Describes rate, path and delay. */
  name: string;
  /** Sample rate of every signal. */
  rate: number;
  /** Bulk delay of the echo path in ms. */
  delayMs: number;
  /** The reference: what was sent to the caller. */
  ref: Int16Array;
  /** Microphone with only the echo (and line noise): single talk. */
  micEcho: Int16Array;
  /** Microphone with the echo and the caller speaking over it: double talk. */
  micTalk: Int16Array;
  /** Sample where the caller's speech starts in `micTalk`. */
  talkStart: number;
}

/** Speech from espeak-ng at `rate`, or undefined where espeak-ng cannot run. */
export async function espeakAt(
  text: string,
  voice: string,
  rate: number,
): Promise<Int16Array | undefined> {
  const perm = await Deno.permissions.query({ name: "run", command: "espeak-ng" });
  if (perm.state !== "granted") return undefined;
  try {
    const out = await new Deno.Command("espeak-ng", {
      args: ["--stdout", "-v", voice, "-s", "165", text],
      stdout: "piped",
      stderr: "null",
    }).output();
    if (!out.success) return undefined;
    const wav = decodeWav(out.stdout);
    return resample(wav.pcm, wav.sampleRate, rate);
  } catch {
    return undefined;
  }
}

/** RMS of a signal. */
function rmsOf(x: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < x.length; i++) s += x[i] * x[i];
  return Math.sqrt(s / Math.max(1, x.length));
}

/** Scaled copy with the given RMS. */
function withRms(x: Float64Array, target: number): Float64Array {
  const g = target / (rmsOf(x) || 1);
  return x.map((v) => v * g);
}

/** Options of {@link aecCases}. */
export interface AecSetOptions {
  /** The far end's clock runs fast by this many parts per million (default 0). */
  driftPpm?: number;
  /** The echo paths (default room and handset; sox paths make the set undefined without sox). */
  paths?: readonly EchoPathKind[];
  /** When the caller starts talking over the agent, in seconds (default 4: after convergence). */
  talkAtSecs?: number;
  /** No echo comes back at all (a handset that does not leak): only line noise and the caller. */
  noEcho?: boolean;
}

const spoken = new Map<number, { ref: Int16Array; caller: Int16Array } | undefined>();

/** The speech of the set at `rate`: the agent's reference and the caller's words. */
async function voices(rate: number) {
  if (!spoken.has(rate)) spoken.set(rate, await speak(rate));
  return spoken.get(rate);
}

/** The speech of the set at `rate`, from espeak-ng. */
async function speak(rate: number) {
  const agent = await espeakAt(AGENT_TEXT, "en-us", rate);
  const caller = await espeakAt(CALLER_TEXT, "en-gb-x-rp", rate);
  if (agent === undefined || caller === undefined) return undefined;
  // TTS at about -20 dBFS.
  return { ref: ulaw(withRms(Float64Array.from(agent), 3277)), caller };
}

/** What the caller's phone played: the reference through G.711, on a clock `ppm` fast. */
function playedAt(ref: Int16Array, ppm: number): Float64Array {
  const g711 = ulawDecode(ulawEncode(ref));
  const out = new Float64Array(ref.length), step = 1 + ppm * 1e-6;
  for (let i = 0; i < out.length; i++) {
    const x = i * step, k = Math.floor(x), f = x - k;
    out[i] = k + 1 < g711.length ? g711[k] * (1 - f) + g711[k + 1] * f : 0;
  }
  return out;
}

/** One case from its echo: levelled, line noise, G.711 back, and the caller from `talkAt` s on. */
function caseOf(
  name: string,
  rate: number,
  delayMs: number,
  ref: Int16Array,
  caller: Int16Array,
  echo: Float64Array,
  erlDb: number,
  seed: number,
  talkAt: number,
): AecCase {
  const echoLevel = withRms(echo, erlDb === Infinity ? 0 : rmsOf(ref) * 10 ** (-erlDb / 20));
  const rnd = noiseSource(1000 + seed);
  const noiseRms = 32768 * 10 ** (-70 / 20) * Math.sqrt(3);
  const talkStart = Math.round(talkAt * rate);
  const talk = withRms(Float64Array.from(caller), rmsOf(ref) * 10 ** (-4 / 20));
  const single = new Float64Array(echo.length), double = new Float64Array(echo.length);
  for (let i = 0; i < echo.length; i++) {
    const base = echoLevel[i] + noiseRms * rnd();
    single[i] = base;
    const t = i - talkStart;
    double[i] = base + (t >= 0 && t < talk.length ? talk[t] : 0);
  }
  return {
    name,
    rate,
    delayMs,
    ref,
    micEcho: ulaw(single),
    micTalk: ulaw(double),
    talkStart: talkStart + speechOnset(caller, rate),
  };
}

/**
 * The set at `rate`: each path of `opts.paths` at each bulk delay, the far end's clock
 * `opts.driftPpm` off; undefined where espeak-ng (or sox, for a sox path) cannot run.
 */
export async function aecCases(
  rate: number,
  delaysMs: readonly number[] = [40, 120, 200, 300],
  opts: AecSetOptions = {},
): Promise<AecCase[] | undefined> {
  const v = await voices(rate);
  if (v === undefined) return undefined;
  const ppm = opts.driftPpm ?? 0;
  const played = playedAt(v.ref, ppm);
  const talkAt = opts.talkAtSecs ?? 4;
  const tag = `${rate / 1000}k${ppm !== 0 ? ` ${ppm > 0 ? "+" : ""}${ppm}ppm` : ""}${
    talkAt !== 4 ? ` talk@${talkAt}s` : ""
  }${opts.noEcho ? " no-echo" : ""}`;
  const cases: AecCase[] = [];
  let seed = 1;
  for (const kind of opts.paths ?? ["room", "handset"] as const) {
    for (const delayMs of delaysMs) {
      const echo = await echoThrough(played, kind, rate, delayMs, seed);
      if (echo === undefined) return undefined;
      const erl = opts.noEcho ? Infinity : echoReturnLossDb(kind);
      const name = `${tag} ${kind} ${delayMs}ms`;
      cases.push(caseOf(name, rate, delayMs, v.ref, v.caller, echo, erl, seed++, talkAt));
    }
  }
  return cases;
}

/** First sample of a 10 ms block above -45 dBFS (espeak-ng leads with silence). */
export function speechOnset(x: Int16Array, rate: number): number {
  const n = Math.round(rate / 100);
  for (let i = 0; i + n <= x.length; i += n) {
    if (rmsOf(x.subarray(i, i + n)) > 32768 * 10 ** (-45 / 20)) return i;
  }
  return 0;
}

/** ERLE in dB of `out` against `mic` over [from, to) samples. */
export function erleDb(mic: Int16Array, out: Int16Array, from: number, to: number): number {
  let a = 0, b = 0;
  for (let i = from; i < to; i++) {
    a += mic[i] * mic[i];
    b += out[i] * out[i];
  }
  return 10 * Math.log10(a / Math.max(b, 1));
}

/**
 * Seconds until the ERLE over every later 0.5 s window with echo in it stays at or above
 * `goalDb`; Infinity if it never does.
 */
export function convergenceSecs(mic: Int16Array, out: Int16Array, rate: number, goalDb: number) {
  const w = Math.round(rate / 2), floor = (32768 * 10 ** (-40 / 20)) ** 2 * w;
  let last = -1;
  for (let i = 0; i + w <= mic.length; i += w) {
    let e = 0;
    for (let j = i; j < i + w; j++) e += mic[j] * mic[j];
    if (e > floor && erleDb(mic, out, i, i + w) < goalDb) last = i;
  }
  return last < 0 ? 0 : (last + w) / rate;
}

/** Times (seconds) at which the project's default energy VAD starts speech over `pcm`. */
export function vadStarts(pcm: Int16Array, rate: number): number[] {
  const vad = new EnergyVad({ sampleRate: rate, params: DEFAULT_VAD_PARAMS });
  const n = rate / 50, starts: number[] = [];
  let prev = vad.state;
  for (let i = 0; i + n <= pcm.length; i += n) {
    const s = vad.analyze({ pcm: pcm.subarray(i, i + n), sampleRate: rate, numChannels: 1 });
    if (s === "speaking" && prev !== "speaking" && prev !== "stopping") starts.push((i + n) / rate);
    prev = s;
  }
  return starts;
}

/**
 * `mic` through a fresh canceller against `ref`, in 20 ms frames: the output aligned to the input
 * (its latency dropped), and the canceller, for its state.
 */
export function cancelInFrames(
  mic: Int16Array,
  ref: Int16Array,
  rate: number,
  opts: Omit<EchoCancellerOptions, "sampleRate"> = {},
): { out: Int16Array; aec: EchoCanceller } {
  const aec = new EchoCanceller({ ...opts, sampleRate: rate });
  const n = rate / 50, out = new Int16Array(mic.length);
  for (let i = 0; i + n <= mic.length; i += n) {
    aec.process(mic.subarray(i, i + n), ref.subarray(i, i + n), out.subarray(i, i + n));
  }
  return { out: out.slice(aec.latency), aec };
}
