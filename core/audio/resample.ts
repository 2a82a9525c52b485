/**
 * Streaming rational resampler: polyphase FIR, Kaiser-windowed sinc low-pass.
 *
 * Any pair of integer rates works whose ratio reduces to `up / down` with both at most 2048
 * (8k <-> 16k <-> 24k <-> 48k, 44.1k -> 16k, ...). The filter is designed at `up * inRate`:
 *
 * - passband: 0 .. 0.85 x the lower Nyquist frequency (3.4 kHz when 8 kHz is involved,
 *   6.8 kHz for 16 kHz), ripple well under 0.01 dB;
 * - stop band: from the lower Nyquist frequency up, attenuated by at least 60 dB, so nothing
 *   above the new Nyquist folds back (downsampling) and no image survives (upsampling);
 * - latency: the linear-phase group delay, {@link Resampler.delay} output samples (about 3 ms
 *   when 8 kHz is involved, 1.5 ms when the lower rate is 16 kHz).
 *
 * Cost: taps per output sample ({@link Resampler.tapsPerOutput}) are 49 for 8k -> 16k and 147
 * for 24k -> 8k with the default (strict) band, 25 and 74 with the centered band that
 * {@link transitionFor} picks for telephony. The inner loop runs in WebAssembly SIMD (four taps
 * per instruction, ./fir.wat) where the runtime has it: about 2.5 and 3 microseconds per 20 ms
 * frame for those telephony legs (the JavaScript loop, `kernel: "js"`: 5 and 11).
 *
 * Both edges are options. State (the last taps of input and the output phase) is carried
 * across calls, so feeding 20 ms frames gives exactly the samples a one-shot call over the
 * whole signal gives: no clicks at frame edges. Filters are cached per ratio and shared.
 *
 * @example
 * ```ts
 * import { Resampler } from "@flowcat/flowcat/audio";
 * const up = new Resampler(8000, 16000);
 * const out = up.process(new Int16Array(160)); // 320 samples
 * ```
 * @module
 */

import { FlowcatError } from "../errors.ts";
import { firRun, loadBank, type WasmBank } from "./fir_kernel.ts";

/** Filter options of a {@link Resampler}. */
export interface ResamplerOptions {
  /** Passband edge as a fraction of the lower Nyquist frequency, in (0, 1); default 0.85. */
  passband?: number;
  /** Attenuation in dB reached at the lower Nyquist frequency and beyond; default 60. */
  stopbandDb?: number;
  /**
   * Where the transition band lies. `"strict"` (default): between the passband edge and the
   * lower Nyquist frequency, so nothing above Nyquist survives. `"centered"`: symmetric around
   * the lower Nyquist frequency (a half-band / Nyquist-M filter): half the taps, and for integer
   * interpolation one phase in `up` is a single tap; aliases and images land only in the
   * transition band above the passband edge. Right for band-limited telephony audio (G.711
   * carries 300-3,400 Hz), not for full-band music.
   */
  transition?: "strict" | "centered";
  /**
   * Inner loop: `"auto"` (default) runs the WebAssembly SIMD kernel (four taps per instruction,
   * float32) where the runtime has it, `"js"` always the JavaScript loop (float64). Both give
   * the same samples within one unit of rounding.
   */
  kernel?: "auto" | "js";
}

/**
 * The transition band that suits a stream between these rates: `"centered"` when either side is
 * narrowband (8 kHz or less: telephony audio carries nothing above 3.4 kHz, so the centered
 * filter's aliases and images fall outside what the caller hears), `"strict"` otherwise.
 *
 * @example
 * ```ts
 * const down = new Resampler(24000, 8000, { transition: transitionFor(24000, 8000) }); // 74 taps
 * ```
 */
export function transitionFor(inRate: number, outRate: number): "strict" | "centered" {
  return Math.min(inRate, outRate) <= 8000 ? "centered" : "strict";
}

/** Default passband edge (fraction of the lower Nyquist frequency). */
export const DEFAULT_PASSBAND = 0.85;
/** Default stop-band attenuation in dB. */
export const DEFAULT_STOPBAND_DB = 60;
const MAX_FACTOR = 2048;

interface Bank {
  /** `taps` coefficients per phase, phase-major, reversed for a forward dot product. */
  readonly coeffs: Float64Array;
  /** Per phase, the first tap that is not zero (a Nyquist-M filter has whole zero phases). */
  readonly first: Int32Array;
  /** Per phase, one past the last tap that is not zero. */
  readonly last: Int32Array;
  readonly taps: number;
  /** Centre of the linear-phase prototype, in working-rate samples (its group delay). */
  readonly center: number;
  /** The bank in the SIMD kernel's memory; `null` where there is no kernel; loaded on first use. */
  wasm?: WasmBank | null;
}

const banks = new Map<string, Bank>();
const EMPTY = new Float64Array(0);

function gcd(a: number, b: number): number {
  while (b) [a, b] = [b, a % b];
  return a;
}

/** Zeroth-order modified Bessel function of the first kind (power series). */
function besselI0(x: number): number {
  let sum = 1;
  let term = 1;
  const q = (x * x) / 4;
  for (let k = 1; k < 64 && term > sum * 1e-12; k++) {
    term *= q / (k * k);
    sum += term;
  }
  return sum;
}

function kaiserBeta(db: number): number {
  if (db > 50) return 0.1102 * (db - 8.7);
  if (db >= 21) return 0.5842 * (db - 21) ** 0.4 + 0.07886 * (db - 21);
  return 0;
}

/**
 * Kaiser-windowed sinc prototype for up/down at `inRate`, split into `up` phases. The taps are
 * scaled so that each phase has unity DC gain on average (the zero stuffing loses a factor up).
 */
function designBank(
  up: number,
  down: number,
  inRate: number,
  pass: number,
  db: number,
  centered: boolean,
): Bank {
  const key = `${up}/${down}/${pass}/${db}/${centered}`;
  const cached = banks.get(key);
  if (cached) return cached;
  const work = up * inRate;
  const nyq = Math.min(inRate, (inRate * up) / down) / 2;
  const fPass = pass * nyq;
  const fStop = centered ? 2 * nyq - fPass : nyq;
  const dw = (2 * Math.PI * (fStop - fPass)) / work;
  const minLen = Math.ceil((db - 7.95) / (2.285 * dw)) + 1;
  const taps = Math.max(1, Math.ceil(minLen / up));
  const length = taps * up;
  // A centered design puts the sinc's zeros on every up-th tap from the centre; an odd
  // prototype (the last stored tap left zero) centres it on a tap, so that one phase is
  // exactly the single centre tap.
  const proto = centered && length % 2 === 0 ? length - 1 : length;
  const fc = (fPass + fStop) / 2 / work; // cycles per working-rate sample
  const beta = kaiserBeta(db);
  const i0b = besselI0(beta);
  const center = (proto - 1) / 2;
  const h = new Float64Array(length);
  let sum = 0;
  for (let n = 0; n < proto; n++) {
    const x = n - center;
    const sinc = x === 0 ? 2 * fc : Math.sin(2 * Math.PI * fc * x) / (Math.PI * x);
    const r = proto > 1 ? (2 * x) / (proto - 1) : 0;
    const w = besselI0(beta * Math.sqrt(Math.max(0, 1 - r * r))) / i0b;
    h[n] = sinc * w;
    sum += h[n];
  }
  const coeffs = new Float64Array(length);
  let peak = 0;
  for (let p = 0; p < up; p++) {
    for (let j = 0; j < taps; j++) {
      const c = (h[p + (taps - 1 - j) * up] * up) / sum;
      coeffs[p * taps + j] = c;
      peak = Math.max(peak, Math.abs(c));
    }
  }
  // Taps below 1e-9 of the peak (sinc zeros, -180 dB) are skipped, not multiplied.
  const first = new Int32Array(up);
  const last = new Int32Array(up);
  for (let p = 0; p < up; p++) {
    let a = 0;
    let b = taps;
    while (a < b && Math.abs(coeffs[p * taps + a]) < peak * 1e-9) a++;
    while (b > a && Math.abs(coeffs[p * taps + b - 1]) < peak * 1e-9) b--;
    first[p] = a;
    last[p] = b;
  }
  const bank = { coeffs, first, last, taps, center };
  banks.set(key, bank);
  return bank;
}

/**
 * A streaming resampler for one mono stream. Not shared between streams: it holds state.
 *
 * @example
 * ```ts
 * import { Resampler } from "@flowcat/flowcat/audio";
 * declare const ttsFrame: { pcm: Int16Array };
 * const down = new Resampler(24000, 8000);
 * const scratch = new Int16Array(160);
 * const out = down.process(ttsFrame.pcm, scratch); // 480 in, 160 out, no allocation
 * ```
 */
export class Resampler {
  /** Input rate in Hz. */
  readonly inRate: number;
  /** Output rate in Hz. */
  readonly outRate: number;
  /** Interpolation factor (outRate / inRate reduced: up / down). */
  readonly up: number;
  /** Decimation factor. */
  readonly down: number;
  #bank: Bank | undefined;
  #buf: Float64Array;
  /** History for the SIMD kernel (it keeps the input itself only during a call). */
  #hist: Float32Array | undefined;
  #wasm: WasmBank | undefined;
  /** Position of the next output, in units of 1/up input samples, relative to the next input. */
  #t = 0;
  /** The buffer {@link Resampler.processLent} lends (empty until first used). */
  #lent = new Int16Array(0);

  /** Make a resampler from `inRate` to `outRate` (integers, Hz). */
  constructor(inRate: number, outRate: number, opts: ResamplerOptions = {}) {
    if (!Number.isInteger(inRate) || !Number.isInteger(outRate) || inRate <= 0 || outRate <= 0) {
      throw new FlowcatError(
        "config",
        `resampler: rates must be positive integers (got ${inRate} -> ${outRate})`,
      );
    }
    const g = gcd(inRate, outRate);
    this.inRate = inRate;
    this.outRate = outRate;
    this.up = outRate / g;
    this.down = inRate / g;
    if (this.up > MAX_FACTOR || this.down > MAX_FACTOR) {
      throw new FlowcatError(
        "config",
        `resampler: ratio ${this.up}/${this.down} too large (${inRate} -> ${outRate})`,
      );
    }
    const pass = opts.passband ?? DEFAULT_PASSBAND;
    const db = opts.stopbandDb ?? DEFAULT_STOPBAND_DB;
    if (!(pass > 0 && pass < 1) || !(db >= 20 && db <= 180)) {
      throw new FlowcatError(
        "config",
        `resampler: passband must be in (0,1) and stopbandDb in [20,180]`,
      );
    }
    this.#bank = this.up === 1 && this.down === 1
      ? undefined
      : designBank(this.up, this.down, inRate, pass, db, opts.transition === "centered");
    const bank = this.#bank;
    if (bank && opts.kernel !== "js") {
      if (bank.wasm === undefined) {
        bank.wasm = loadBank(bank.coeffs, bank.first, bank.last, bank.taps, this.up) ?? null;
      }
      this.#wasm = bank.wasm ?? undefined;
    }
    // History only: the room for input grows on the first frame (an idle call holds no audio).
    if (this.#wasm) {
      this.#hist = new Float32Array(bank!.taps - 1);
      this.#buf = EMPTY;
    } else this.#buf = new Float64Array((bank?.taps ?? 1) - 1);
  }

  /** Number of FIR taps evaluated per output sample (cost measure). */
  get tapsPerOutput(): number {
    return this.#bank?.taps ?? 0;
  }

  /** Group delay of the filter, in output samples (the latency this resampler adds). */
  delay(): number {
    return this.#bank ? this.#bank.center / this.down : 0;
  }

  /** How many samples the next {@link process} call returns for `inputSamples` samples. */
  outputLength(inputSamples: number): number {
    if (!this.#bank) return inputSamples;
    const end = inputSamples * this.up;
    return this.#t < end ? Math.ceil((end - this.#t) / this.down) : 0;
  }

  /**
   * {@link process} into a buffer this resampler owns and reuses (grown when too small): no
   * allocation per chunk. The samples are lent: the next call overwrites them, so use them at
   * once (encode, copy into a packet) and copy what is kept; never make them a frame's, which
   * whoever receives it may keep (docs/decisions.md, "A frame owns its samples").
   */
  processLent(pcm: Int16Array): Int16Array {
    const n = this.outputLength(pcm.length);
    if (this.#lent.length < n) this.#lent = new Int16Array(n);
    return this.process(pcm, this.#lent);
  }

  /** Forget all history, as if newly made. */
  reset(): void {
    this.#t = 0;
    this.#buf.fill(0);
    this.#hist?.fill(0);
  }

  /**
   * Resample the next chunk of the stream. Writes into `out` when given (it must hold
   * {@link outputLength} samples) and returns the part written. Without a filter (equal rates)
   * and without `out`, returns `pcm` itself.
   */
  process(pcm: Int16Array, out?: Int16Array): Int16Array {
    const n = this.outputLength(pcm.length);
    if (out && out.length < n) {
      throw new FlowcatError("other", `resampler: out holds ${out.length} < ${n}`);
    }
    const dst = out ?? new Int16Array(n);
    const bank = this.#bank;
    if (!bank) {
      if (dst !== pcm && out) dst.set(pcm);
      return out ? dst.subarray(0, n) : pcm;
    }
    const len = pcm.length;
    if (this.#wasm) {
      const x = Math.floor(this.#t / this.up);
      firRun(this.#wasm, this.#hist!, pcm, x, this.#t - x * this.up, n, this.up, this.down, dst);
      this.#t += n * this.down - len * this.up;
      return n === dst.length ? dst : dst.subarray(0, n);
    }
    const { coeffs, first, last, taps } = bank;
    const hist = taps - 1;
    if (this.#buf.length < hist + len) {
      const grown = new Float64Array(hist + len);
      grown.set(this.#buf.subarray(0, hist));
      this.#buf = grown;
    }
    const buf = this.#buf;
    for (let i = 0; i < len; i++) buf[hist + i] = pcm[i];
    const up = this.up;
    const down = this.down;
    let t = this.#t;
    // Output o needs input floor(t / up) as its newest tap and phase t mod up; both are
    // stepped instead of divided.
    let x = Math.floor(t / up);
    let phase = t - x * up;
    const stepX = Math.floor(down / up);
    const stepPhase = down - stepX * up;
    for (let o = 0; o < n; o++) {
      const c = phase * taps;
      let acc = 0;
      const end = c + last[phase];
      for (let k = c + first[phase], b = x + first[phase]; k < end; k++, b++) {
        acc += coeffs[k] * buf[b];
      }
      dst[o] = acc >= 32767 ? 32767 : acc <= -32768 ? -32768 : Math.round(acc);
      x += stepX;
      phase += stepPhase;
      if (phase >= up) {
        phase -= up;
        x++;
      }
    }
    t = x * up + phase;
    this.#t = t - len * up;
    buf.copyWithin(0, len, len + hist);
    return n === dst.length ? dst : dst.subarray(0, n);
  }
}

/**
 * One-shot resampling of a whole buffer (a fresh {@link Resampler}; output delayed by its
 * {@link Resampler.delay}, length `ceil(pcm.length * outRate / inRate)`).
 *
 * @example
 * ```ts
 * import { resample } from "@flowcat/flowcat/audio";
 * declare const pcm8k: Int16Array;
 * const pcm16k = resample(pcm8k, 8000, 16000);
 * ```
 */
export function resample(
  pcm: Int16Array,
  inRate: number,
  outRate: number,
  opts?: ResamplerOptions,
): Int16Array {
  if (inRate === outRate) return pcm.slice();
  return new Resampler(inRate, outRate, opts).process(pcm);
}
