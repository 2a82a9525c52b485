/**
 * Echo paths of the echo-cancellation test set: what happens to the agent's voice between the
 * caller's loudspeaker and their microphone. Synthetic paths (a bulk delay and a decaying-noise
 * room or ringing handset response, band-limited to the telephone band) and sox paths (a bulk
 * delay, then sox's reverb for a few rooms, or the telephone band-limit alone).
 * @module
 */

import { ulawDecode, ulawEncode } from "../core/audio/g711.ts";

/** The echo paths of the set. */
export type EchoPathKind =
  | "room"
  | "handset"
  | "sox band"
  | "sox small room"
  | "sox living room"
  | "sox speakerphone";

/** Every path kind, synthetic first. */
export const ECHO_PATHS: readonly EchoPathKind[] = [
  "room",
  "handset",
  "sox band",
  "sox small room",
  "sox living room",
  "sox speakerphone",
];

/**
 * The sox effect of each sox path, after the bulk delay: the reverb (reverberance %, HF damping
 * %, room scale %; `-w` wet only), then the telephone band. Reverb tails, as -20 dB from the
 * first arrival: small room about 150 ms, living room about 300 ms, speakerphone (dry voice plus
 * a room) about 100 ms.
 */
const SOX_EFFECTS: Record<string, string[]> = {
  "sox band": [],
  "sox small room": ["reverb", "-w", "40", "50", "30"],
  "sox living room": ["reverb", "-w", "60", "50", "70"],
  "sox speakerphone": ["reverb", "50", "50", "50"],
};

/** How far below the agent each path's echo is, in dB (echo return loss). */
export function echoReturnLossDb(kind: EchoPathKind): number {
  return kind === "handset" || kind === "sox band" ? 6 : 10;
}

/** A small deterministic PRNG (mulberry32) giving values in [-1, 1). */
export function noiseSource(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2147483648 - 1;
  };
}

/** G.711 mu-law round trip. */
export function ulaw(x: ArrayLike<number>): Int16Array {
  const pcm = new Int16Array(x.length);
  for (let i = 0; i < x.length; i++) pcm[i] = Math.max(-32768, Math.min(32767, Math.round(x[i])));
  return ulawDecode(ulawEncode(pcm));
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

/** The echo through a synthetic path: bulk delay, room or handset taps, telephone band. */
function syntheticEcho(
  played: Float64Array,
  kind: "room" | "handset",
  rate: number,
  delayMs: number,
  seed: number,
): Float64Array {
  const taps = echoTaps(kind, rate, seed), d = Math.round((delayMs * rate) / 1000);
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

/** The echo made by sox: bulk delay (pad), the path's effect, telephone band. */
async function soxEcho(
  played: Float64Array,
  rate: number,
  delayMs: number,
  effect: string[],
): Promise<Float64Array | undefined> {
  const perm = await Deno.permissions.query({ name: "run", command: "sox" });
  if (perm.state !== "granted") return undefined;
  const raw = ["-t", "raw", "-r", `${rate}`, "-e", "signed", "-b", "16", "-c", "1"];
  const band = ["highpass", "300", "lowpass", "3400"];
  let child;
  try {
    child = new Deno.Command("sox", {
      args: ["-D", ...raw, "-", ...raw, "-", "pad", `${delayMs / 1000}`, ...effect, ...band],
      stdin: "piped",
      stdout: "piped",
      stderr: "null",
    }).spawn();
  } catch {
    return undefined;
  }
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

/**
 * The echo of `played` (what the caller's loudspeaker played) through a path of `kind` after
 * `delayMs` of bulk delay, before levelling; undefined where sox is needed and cannot run.
 */
export function echoThrough(
  played: Float64Array,
  kind: EchoPathKind,
  rate: number,
  delayMs: number,
  seed: number,
): Promise<Float64Array | undefined> {
  if (kind === "room" || kind === "handset") {
    return Promise.resolve(syntheticEcho(played, kind, rate, delayMs, seed));
  }
  return soxEcho(played, rate, delayMs, SOX_EFFECTS[kind]);
}
