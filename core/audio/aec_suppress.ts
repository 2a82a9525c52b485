/**
 * Residual echo suppressor of the echo canceller, per frequency band: what the linear filter
 * leaves of the echo (a reverb tail it does not model, a path it has not fully learnt or that
 * drifts, G.711 noise) is attenuated band by band, so the caller's voice passes in the bands
 * where it dominates.
 *
 * Per block (B samples), over a 2B-point short-time spectrum (square-root Hann window, half
 * overlap, so all-pass gains give the input back, B samples late), in bands of 4 bins:
 * - an echo power model predicts the residual's power in each band from the reference's power
 *   in that band over the last K blocks (a power-domain NLMS filter, one weight per block and
 *   band, learnt in single talk against the residual's actual power), plus a decaying tail for
 *   a room that rings on past the span. It needs no phase coherence, so it predicts what the
 *   linear filter cannot cancel: diffuse reverb, and residual left by drift;
 * - the gain is `1 - over * predicted / residual`, floored, falling by at most 10.5 dB a block
 *   and rising at a rate that is fast while the caller talks over the agent.
 * Blocks whose gains were all 1 two in a row pass the residual through unchanged, so with no
 * echo the audio is bit-exact, B samples late.
 * @module
 */

import { RealFft } from "./fft.ts";

/** Options of a {@link ResidualSuppressor}. */
export interface ResidualSuppressorOptions {
  /** Deepest attenuation per band, in dB (default 40). */
  floorDb?: number;
  /** Blocks of reference history the echo power model spans (default 46). */
  partitions?: number;
  /** How fast a room's ringing past the span decays: ms to fall by 1/e in power (default 150). */
  tailMs?: number;
  /** Overestimation of the predicted residual echo (default 6). */
  over?: number;
}

/** What the canceller knows about a block, for the suppressor. */
export interface SuppressorState {
  /** The reference was active within the echo window (echo may be present). */
  far: boolean;
  /** Single talk with echo: the echo power model learns from this block. */
  learn: boolean;
  /** The caller talks over the agent: gains recover fast. */
  doubleTalk: boolean;
  /**
   * The linear filter mispredicted this block (its residual is the microphone's full echo, which
   * the model, learnt on residuals, does not expect): gains may fall but not rise.
   */
  hold?: boolean;
}

const BAND = 4;
/**
 * The most a gain falls in one block (10.5 dB): fast enough to meet an echo's onset, but one block
 * the model over-predicts (its weights just stepped up on the caller's words) does not cut a hole
 * in a word the caller is saying; a hole of one block is enough to break the VAD's start window.
 */
const FALL = 0.3;

/** Per-band residual echo suppressor over blocks of B samples (output B samples late). */
export class ResidualSuppressor {
  /** Block length in samples. */
  readonly block: number;
  /** Bands of the spectrum. */
  readonly bands: number;
  readonly #k: number;
  readonly #fft: RealFft;
  readonly #win: Float32Array;
  readonly #frame: Float32Array;
  readonly #prevErr: Float32Array;
  readonly #prevRef: Float32Array;
  readonly #overlap: Float32Array;
  readonly #er: Float32Array;
  readonly #ei: Float32Array;
  /** Reference band powers of the last K blocks, a ring of K x bands. */
  readonly #x: Float64Array;
  #head = 0;
  /** Sum over the ring of the squared band powers, per band (the NLMS normaliser). */
  readonly #xx: Float64Array;
  /** Echo power model weights, K x bands (block lag major). */
  readonly #a: Float64Array;
  readonly #tail: Float64Array;
  readonly #span: Float64Array;
  readonly #pe: Float64Array;
  readonly #gain: Float32Array;
  readonly #decay: number;
  readonly #floor: number;
  readonly #over: number;
  /** Blocks in a row whose gains were all 1 (2 means the output is the input, delayed). */
  #unity = 2;

  /** A suppressor of `block` samples at `sampleRate` (see {@link ResidualSuppressorOptions}). */
  constructor(block: number, sampleRate: number, opts: ResidualSuppressorOptions = {}) {
    this.block = block;
    const n = 2 * block, bins = block + 1;
    const bands = (this.bands = Math.ceil(bins / BAND));
    const k = (this.#k = opts.partitions ?? 46);
    this.#fft = new RealFft(n);
    this.#win = new Float32Array(n);
    for (let i = 0; i < n; i++) this.#win[i] = Math.sin((Math.PI * (i + 0.5)) / n);
    this.#frame = new Float32Array(n);
    this.#prevErr = new Float32Array(block);
    this.#prevRef = new Float32Array(block);
    this.#overlap = new Float32Array(block);
    this.#er = new Float32Array(bins);
    this.#ei = new Float32Array(bins);
    this.#x = new Float64Array(k * bands);
    this.#xx = new Float64Array(bands);
    this.#a = new Float64Array(k * bands);
    this.#tail = new Float64Array(bands);
    this.#span = new Float64Array(bands);
    this.#pe = new Float64Array(bands);
    this.#gain = new Float32Array(bands).fill(1);
    this.#decay = Math.exp(-block / (((opts.tailMs ?? 150) / 1000) * sampleRate));
    this.#floor = 10 ** (-(opts.floorDb ?? 40) / 20);
    this.#over = opts.over ?? 6;
  }

  /** Forget what was learnt (a new echo path). */
  reset(): void {
    this.#x.fill(0);
    this.#xx.fill(0);
    this.#a.fill(0);
    this.#tail.fill(0);
    this.#gain.fill(1);
  }

  /**
   * One block: the linear filter's residual `err` and the reference `ref` (B samples each) in,
   * the suppressed residual of the block before into `out` (B samples).
   */
  process(err: Float32Array, ref: Float32Array, state: SuppressorState, out: Float32Array): void {
    const b = this.block, bands = this.bands, k = this.#k, win = this.#win, frame = this.#frame;
    const er = this.#er, ei = this.#ei, x = this.#x, xx = this.#xx, a = this.#a;
    const tail = this.#tail, pe = this.#pe, gain = this.#gain;

    // The reference's band powers join the history (the oldest block leaves it).
    const head = (this.#head = (this.#head + 1) % k), xo = head * bands;
    for (let i = 0; i < b; i++) {
      frame[i] = this.#prevRef[i] * win[i];
      frame[b + i] = ref[i] * win[b + i];
    }
    this.#prevRef.set(ref);
    this.#fft.forward(frame, er, ei);
    bandPowers(er, ei, pe);
    for (let j = 0; j < bands; j++) {
      xx[j] += pe[j] * pe[j] - x[xo + j] * x[xo + j];
      if (xx[j] < 0) xx[j] = 0;
      x[xo + j] = pe[j];
    }

    // The residual echo the model predicts per band: over the span, and the ring of the room.
    const last = ((head + 1) % k) * bands; // the oldest block in the span
    const span = this.#span;
    span.fill(0);
    for (let p = 0; p < k; p++) {
      const xo2 = ((head - p + k) % k) * bands, ao = p * bands;
      for (let j = 0; j < bands; j++) span[j] += a[ao + j] * x[xo2 + j];
    }
    for (let j = 0; j < bands; j++) {
      tail[j] = this.#decay * (tail[j] + a[(k - 1) * bands + j] * x[last + j]);
    }

    let idle = !state.far && this.#unity >= 2;
    if (idle) {
      // Nothing to suppress and nothing held: the block before passes as it was.
      out.set(this.#prevErr);
      this.#prevErr.set(err);
      // What the windowed path would carry over, so it can take over from the next block.
      for (let i = 0; i < b; i++) this.#overlap[i] = err[i] * win[b + i] * win[b + i];
      return;
    }
    for (let i = 0; i < b; i++) {
      frame[i] = this.#prevErr[i] * win[i];
      frame[b + i] = err[i] * win[b + i];
    }
    this.#prevErr.set(err);
    this.#fft.forward(frame, er, ei);
    bandPowers(er, ei, pe);
    const floor = this.#floor,
      over = this.#over,
      rise = state.hold ? 0 : state.doubleTalk ? 0.5 : 0.1;
    idle = true;
    for (let j = 0; j < bands; j++) {
      const r = span[j] + tail[j];
      if (state.learn) {
        // Power-domain NLMS toward the residual's actual power; weights stay non-negative.
        const mu = (0.3 * (pe[j] - r)) / (xx[j] + 1e-9 * (1 + xx[j]) + 1);
        for (let p = 0; p < k; p++) {
          const i = p * bands + j, w = a[i] + mu * x[((head - p + k) % k) * bands + j];
          a[i] = w > 0 ? w : 0;
        }
      }
      // Power subtraction: the caller's voice keeps most of its level where it dominates.
      const keep = 1 - (over * r) / (pe[j] + 1e-3);
      const target = keep > floor * floor ? Math.sqrt(keep) : floor;
      const g0 = gain[j];
      const g = target < g0 ? Math.max(target, FALL * g0) : g0 + rise * (target - g0);
      gain[j] = g > 0.999 ? 1 : g;
      if (gain[j] !== 1) idle = false;
    }
    this.#unity = idle ? this.#unity + 1 : 0;
    for (let i = 0; i < er.length; i++) {
      const g = gain[(i / BAND) | 0];
      er[i] *= g;
      ei[i] *= g;
    }
    this.#fft.inverse(er, ei, frame);
    const ov = this.#overlap;
    for (let i = 0; i < b; i++) {
      out[i] = ov[i] + frame[i] * win[i];
      ov[i] = frame[b + i] * win[b + i];
    }
  }
}

/** Power per band of 4 bins of a spectrum. */
function bandPowers(re: Float32Array, im: Float32Array, out: Float64Array): void {
  out.fill(0);
  for (let i = 0; i < re.length; i++) out[(i / BAND) | 0] += re[i] * re[i] + im[i] * im[i];
}
