/**
 * The echo-cancellation test set: espeak-ng speech as the agent's voice sent over G.711, echo
 * paths made of a bulk delay and a synthetic room or handset impulse response band-limited to
 * the telephone band, the echo sent back over G.711 with a little line noise, and a second
 * espeak-ng voice as the caller talking over the agent (double talk). Deterministic: the same
 * speech and seeds give the same set. Also the measures: ERLE, convergence time, and VAD
 * starts (barge-ins) over an output.
 * @module
 */

import { decodeWav } from "../core/audio/wav.ts";
import { resample } from "../core/audio/resample.ts";
import { ulawDecode, ulawEncode } from "../core/audio/g711.ts";
import { EnergyVad } from "../core/audio/vad_energy.ts";
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

/** A small deterministic PRNG (mulberry32) giving values in [-1, 1). */
function noiseSource(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2147483648 - 1;
  };
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

/** One biquad section over `x`, in place (RBJ cookbook high- or low-pass, Q 0.707). */
function biquad(x: Float64Array, rate: number, freq: number, kind: "hp" | "lp"): void {
  const w = (2 * Math.PI * freq) / rate, c = Math.cos(w), a = Math.sin(w) / (2 * 0.7071);
  const b1 = kind === "lp" ? 1 - c : -(1 + c), b0 = kind === "lp" ? b1 / 2 : -b1 / 2;
  const a0 = 1 + a, a1 = -2 * c, a2 = 1 - a;
  let x1 = 0, x2 = 0, y1 = 0, y2 = 0;
  for (let i = 0; i < x.length; i++) {
    const y = (b0 * x[i] + b1 * x1 + b0 * x2 - a1 * y1 - a2 * y2) / a0;
    x2 = x1, x1 = x[i], y2 = y1, y1 = y;
    x[i] = y;
  }
}

/** Echo path taps after the bulk delay: a room (decaying noise) or a handset (short, ringing). */
function echoTaps(kind: "room" | "handset", rate: number, seed: number): Float64Array {
  const n = Math.round(0.064 * rate), rnd = noiseSource(seed);
  const h = new Float64Array(n);
  const tau = (kind === "room" ? 0.012 : 0.003) * rate;
  for (let i = 0; i < n; i++) h[i] = rnd() * Math.exp(-i / tau);
  h[0] += kind === "handset" ? 1 : 0.5; // the direct path
  return h;
}

/** G.711 mu-law round trip. */
function ulaw(x: Float64Array): Int16Array {
  const pcm = new Int16Array(x.length);
  for (let i = 0; i < x.length; i++) pcm[i] = Math.max(-32768, Math.min(32767, Math.round(x[i])));
  return ulawDecode(ulawEncode(pcm));
}

/** Options of {@link aecCases}. */
export interface AecSetOptions {
  /** The far end's clock runs fast by this many parts per million (default 0). */
  driftPpm?: number;
  /**
   * Make the echo path with sox instead (reverb and band-limit after the bulk delay); the set is
   * undefined where sox cannot run.
   */
  sox?: boolean;
}

/** The speech of the set at `rate`: the agent's reference and the caller's words. */
async function voices(rate: number) {
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

/** The echo through a synthetic path: bulk delay, room or handset taps, telephone band. */
function syntheticEcho(
  played: Float64Array,
  kind: "room" | "handset",
  rate: number,
  d: number,
  seed: number,
): Float64Array {
  const taps = echoTaps(kind, rate, seed);
  const echo = new Float64Array(played.length);
  for (let i = d; i < echo.length; i++) {
    let acc = 0;
    const top = Math.min(taps.length, i - d + 1);
    for (let j = 0; j < top; j++) acc += taps[j] * played[i - d - j];
    echo[i] = acc;
  }
  biquad(echo, rate, 300, "hp");
  biquad(echo, rate, 3400, "lp");
  return echo;
}

/** The echo made by sox: bulk delay (pad), a small room's reverb (wet only), telephone band. */
async function soxEcho(
  played: Float64Array,
  rate: number,
  delayMs: number,
): Promise<Float64Array | undefined> {
  const perm = await Deno.permissions.query({ name: "run", command: "sox" });
  if (perm.state !== "granted") return undefined;
  const raw = ["-t", "raw", "-r", `${rate}`, "-e", "signed", "-b", "16", "-c", "1"];
  const child = new Deno.Command("sox", {
    args: [
      ...raw,
      "-",
      ...raw,
      "-",
      "pad",
      `${delayMs / 1000}`,
      "reverb",
      "-w",
      "40",
      "50",
      "30",
      "highpass",
      "300",
      "lowpass",
      "3400",
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const pcm = ulaw(played);
  // Read while writing: sox streams, and a full stdout pipe would block its stdin.
  const output = child.output();
  const writer = child.stdin.getWriter();
  await writer.write(new Uint8Array(pcm.buffer));
  await writer.close();
  const out = await output;
  if (!out.success) return undefined;
  const wet = new Int16Array(out.stdout.buffer, 0, out.stdout.byteLength >> 1);
  const echo = new Float64Array(played.length);
  for (let i = 0; i < echo.length && i < wet.length; i++) echo[i] = wet[i];
  return echo;
}

/** One case from its echo: levelled, line noise, G.711 back, and the caller from 4 s on. */
function caseOf(
  name: string,
  rate: number,
  delayMs: number,
  ref: Int16Array,
  caller: Int16Array,
  echo: Float64Array,
  erlDb: number,
  seed: number,
): AecCase {
  const echoLevel = withRms(echo, rmsOf(ref) * 10 ** (-erlDb / 20));
  const rnd = noiseSource(1000 + seed);
  const noiseRms = 32768 * 10 ** (-70 / 20) * Math.sqrt(3);
  const talkStart = Math.round(4 * rate);
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
 * The set at `rate`: room (10 dB below the agent) and handset (6 dB below) paths at each bulk
 * delay, or sox reverbs (10 dB below) with `sox`; undefined where espeak-ng (or sox) cannot run.
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
  const tag = `${rate / 1000}k${ppm !== 0 ? ` drift ${ppm}ppm` : ""}`;
  const cases: AecCase[] = [];
  let seed = 1;
  for (const kind of opts.sox ? ["sox reverb"] as const : ["room", "handset"] as const) {
    for (const delayMs of delaysMs) {
      const d = Math.round((delayMs * rate) / 1000);
      const echo = kind === "sox reverb"
        ? await soxEcho(played, rate, delayMs)
        : syntheticEcho(played, kind, rate, d, seed);
      if (echo === undefined) return undefined;
      const erl = kind === "handset" ? 6 : 10;
      cases.push(
        caseOf(`${tag} ${kind} ${delayMs}ms`, rate, delayMs, v.ref, v.caller, echo, erl, seed++),
      );
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
