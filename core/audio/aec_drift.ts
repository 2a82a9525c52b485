/**
 * Clock drift tracking for the echo canceller. When the caller's phone plays and records on a
 * clock that runs a little fast or slow against ours, the echo path's delay creeps: 100 ppm at
 * 8 kHz is 0.8 samples a second, and a path off by a tenth of a sample already leaves a
 * residual only 15 dB down at 3 kHz. The adaptive filter follows such a creep only with a lag
 * it cannot close.
 *
 * The tracker measures how far the learnt echo path has moved: every `interval` blocks it
 * compares the background filter with a snapshot taken the previous time, and the phase of
 * their cross-spectrum, which a pure delay turns into a straight line through zero, gives the
 * shift (weighted least squares over the bins). Less what it shifted the filter by itself over
 * the interval, that is the drift it has not yet followed; a first-order loop adds a fraction of
 * it to its rate. Between measurements it shifts both filters by its rate (a phase rotation)
 * every few blocks, so the filter no longer has to learn the creep. Intervals with double talk,
 * a diverged background, or filters too unlike each other (still converging) are not measured.
 * @module
 */

import type { MdfFilter } from "./aec_mdf.ts";

/** Options of a {@link DriftTracker}. */
export interface DriftTrackerOptions {
  /** Blocks between measurements (default 32). */
  interval?: number;
  /** Fraction of the measured residual drift taken per measurement (default 0.5). */
  gain?: number;
  /** Largest drift followed, in ppm (default 1000). */
  maxPpm?: number;
}

/** Follows the drift of one {@link MdfFilter}'s echo path and shifts the filter along. */
export class DriftTracker {
  readonly #block: number;
  readonly #bins: number;
  readonly #interval: number;
  readonly #gain: number;
  readonly #maxRate: number;
  readonly #snapRe: Float32Array;
  readonly #snapIm: Float32Array;
  #snapped = false;
  #restores = 0;
  #blocks = 0;
  #clean = 0;
  /** Shift applied to the filter since the snapshot, in samples. */
  #applied = 0;
  /** Shift due but not yet applied, in samples. */
  #pending = 0;
  /** Path delay change per block, in samples (negative: the echo comes sooner and sooner). */
  #rate = 0;

  /** A tracker for `filter` (see {@link DriftTrackerOptions}). */
  constructor(filter: MdfFilter, opts: DriftTrackerOptions = {}) {
    this.#block = filter.block;
    this.#bins = filter.block + 1;
    this.#interval = opts.interval ?? 32;
    this.#gain = opts.gain ?? 0.5;
    this.#maxRate = ((opts.maxPpm ?? 1000) * 1e-6) * filter.block;
    this.#snapRe = new Float32Array(filter.partitions * filter.stride);
    this.#snapIm = new Float32Array(filter.partitions * filter.stride);
  }

  /**
   * The far end's clock against ours, in ppm, as followed so far: positive when it runs fast
   * (it plays our audio sooner and sooner, so the echo's delay shrinks).
   */
  get driftPpm(): number {
    return (-this.#rate / this.#block) * 1e6;
  }

  /** Forget the drift and the snapshot. */
  reset(): void {
    this.#rate = this.#pending = this.#applied = 0;
    this.#blocks = this.#clean = 0;
    this.#snapped = false;
  }

  /**
   * After each block of `filter`: `clean` says the block was single talk with the reference
   * active (a block the filter learnt the echo path from).
   */
  update(filter: MdfFilter, clean: boolean): void {
    this.#pending += this.#rate;
    if ((this.#blocks & 3) === 3 && this.#pending !== 0) {
      filter.shift(this.#pending);
      this.#applied += this.#pending;
      this.#pending = 0;
    }
    this.#blocks++;
    if (clean) this.#clean++;
    if (this.#blocks < this.#interval) return;
    const w = filter.background;
    if (
      this.#snapped && filter.restores === this.#restores && this.#clean * 4 >= this.#blocks * 3
    ) {
      const moved = this.#measure(w.re, w.im, w.stride);
      if (!Number.isNaN(moved)) {
        const r = this.#rate + (this.#gain * (moved - this.#applied)) / this.#blocks;
        this.#rate = Math.max(-this.#maxRate, Math.min(this.#maxRate, r));
      }
    }
    this.#snapRe.set(w.re);
    this.#snapIm.set(w.im);
    this.#snapped = true;
    this.#restores = filter.restores;
    this.#blocks = this.#clean = 0;
    this.#applied = 0;
  }

  /**
   * How far (samples) the path `re`/`im` lies behind the snapshot, from the slope of the phase of
   * their cross-spectrum; NaN when the two are too unlike to say.
   */
  #measure(re: Float32Array, im: Float32Array, stride: number): number {
    const bins = this.#bins, sr = this.#snapRe, si = this.#snapIm;
    let num = 0, den = 0, cross = 0, pNow = 0, pSnap = 0;
    for (let j = 1; j < bins - 1; j++) {
      let cr = 0, ci = 0;
      for (let o = j; o < re.length; o += stride) {
        // now x conj(snapshot)
        cr += re[o] * sr[o] + im[o] * si[o];
        ci += im[o] * sr[o] - re[o] * si[o];
        pNow += re[o] * re[o] + im[o] * im[o];
        pSnap += sr[o] * sr[o] + si[o] * si[o];
      }
      const mag = Math.hypot(cr, ci), w = (Math.PI * j) / this.#block;
      cross += mag;
      // The phase is -w * shift: weighted least squares for the shift through zero.
      num += mag * w * Math.atan2(ci, cr);
      den += mag * w * w;
    }
    // Most of the filters' energy must be alike (a converged path, shifted), not still forming.
    if (den === 0 || cross < 0.7 * Math.sqrt(pNow * pSnap)) return NaN;
    return -num / den;
  }
}
