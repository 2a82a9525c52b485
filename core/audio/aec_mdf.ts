/**
 * The adaptive part of the echo canceller: a multi-delay block frequency-domain filter (MDF,
 * partitioned-block NLMS with overlap-save) in two copies.
 *
 * The echo path is modelled as K partitions of B taps each; the far-end (reference) spectra of
 * the last K blocks are kept, and the echo estimate of a block is the sum of partition k's
 * filter times the reference spectrum k blocks back. A background filter adapts on every block
 * where the reference is active, with a proportionate step (partitions that hold most of the
 * echo path's energy adapt fastest: a bulk delay leaves the early partitions empty, so this
 * converges much faster than a uniform step). A foreground filter produces the output; it takes
 * the background's coefficients when the background has clearly been cancelling better, and
 * gives them back when the background diverges (as double talk makes it). The two-path scheme
 * is what keeps the caller's speech from being learnt as echo.
 *
 * The gradient constraint (zeroing the wrapped-around half of a partition's impulse response)
 * is applied to two partitions per block in turn, so it costs four FFTs per block, not 2K.
 *
 * The loops over every partition and bin (the two estimates, the NLMS step, the partitions'
 * energies, the drift rotation) run in the WebAssembly SIMD kernel of ./aec_kernel.ts where it
 * loads; the spectra live in the kernel's memory as rows padded to a multiple of 4 bins.
 * @module
 */

import { RealFft } from "./fft.ts";
import { aecArena } from "./aec_kernel.ts";
import { type AecLoops, aecLoops } from "./aec_loops.ts";

/**
 * Share of a partition's energy the taps the drift shift moved past either end must hold to be
 * carried into the neighbouring partition rather than dropped.
 */
const CARRY = 0.01;
/** Share of the strongest partition's energy a partition must hold for its taps to be carried. */
const SHARE = 0.01;

/** Energies of one block, for the double-talk detector and the suppressor. */
export interface MdfBlockEnergy {
  /** Microphone (near end) energy. */
  mic: number;
  /** Foreground echo estimate energy. */
  echo: number;
  /** Foreground error (the cancelled signal) energy. */
  error: number;
}

/** Options of an {@link MdfFilter}. */
export interface MdfOptions {
  /** Use the WebAssembly SIMD kernel where it loads (default true; false: JavaScript loops). */
  simd?: boolean;
}

/** Two-path partitioned-block frequency-domain NLMS. */
export class MdfFilter {
  /** Block length in samples (half the FFT length). */
  readonly block: number;
  /** Number of partitions. */
  readonly partitions: number;
  /** Floats per partition row: the B + 1 bins padded to a multiple of 4. */
  readonly stride: number;
  /** True when the WebAssembly SIMD kernel runs the partitioned loops. */
  readonly simd: boolean;
  readonly #fft: RealFft;
  readonly #bins: number;
  readonly #loops: AecLoops;
  /** Per-partition NLMS steps handed to the kernel. */
  readonly #gains: Float32Array;
  /** Reference spectra, partition-major ring of K x bins. */
  readonly #xr: Float32Array;
  readonly #xi: Float32Array;
  #head = 0;
  readonly #fr: Float32Array;
  readonly #fi: Float32Array;
  readonly #br: Float32Array;
  readonly #bi: Float32Array;
  /** Mean reference power per bin over the partitions (the NLMS normaliser). */
  readonly #power: Float64Array;
  readonly #prop: Float64Array;
  readonly #win: Float32Array;
  readonly #tmp: Float32Array;
  readonly #yr: Float32Array;
  readonly #yi: Float32Array;
  readonly #er: Float32Array;
  readonly #ei: Float32Array;
  readonly #eb: Float32Array;
  /** Taps carried over a partition boundary by the constraint. */
  readonly #spill: Float32Array;
  /** Per-partition views of the reference and background spectra (made once, not per block). */
  readonly #xrView: Float32Array[] = [];
  readonly #xiView: Float32Array[] = [];
  readonly #brView: Float32Array[] = [];
  readonly #biView: Float32Array[] = [];
  #sf = 0;
  #sb = 0;
  #constrainAt = 0;
  /** Energy of the background's strongest partition, as of the last adaptation step. */
  #peak = 0;
  /** Drift shift applied so far, in samples, and as of each partition's last constraint. */
  #shifted = 0;
  readonly #shiftedAt: Float64Array;
  readonly #rotRe: Float32Array;
  readonly #rotIm: Float32Array;
  /** Adaptation step (0..1). */
  step = 0.9;
  /** Times the background was given the foreground's coefficients back (it had diverged). */
  restores = 0;

  /** A filter of `partitions` blocks of `block` samples (a power of two). */
  constructor(block: number, partitions: number, options: MdfOptions = {}) {
    this.block = block;
    this.partitions = partitions;
    this.#fft = new RealFft(2 * block, { simd: options.simd });
    const bins = (this.#bins = block + 1);
    const stride = (this.stride = (bins + 3) & ~3);
    const n = partitions * stride;
    const arena = aecArena(6 * n + 6 * stride + partitions + 3, options.simd);
    this.#loops = aecLoops(arena);
    this.simd = arena.kernel !== undefined;
    this.#xr = arena.take(n);
    this.#xi = arena.take(n);
    this.#fr = arena.take(n);
    this.#fi = arena.take(n);
    this.#br = arena.take(n);
    this.#bi = arena.take(n);
    this.#yr = arena.take(stride);
    this.#yi = arena.take(stride);
    this.#er = arena.take(stride);
    this.#ei = arena.take(stride);
    this.#rotRe = arena.take(stride);
    this.#rotIm = arena.take(stride);
    this.#gains = arena.take(partitions);
    this.#power = new Float64Array(bins);
    this.#prop = new Float64Array(partitions);
    this.#win = new Float32Array(2 * block);
    this.#tmp = new Float32Array(2 * block);
    this.#eb = new Float32Array(block);
    this.#spill = new Float32Array(2 * block);
    this.#shiftedAt = new Float64Array(partitions);
    for (let p = 0; p < partitions; p++) {
      const o = p * stride;
      this.#xrView.push(this.#xr.subarray(o, o + bins));
      this.#xiView.push(this.#xi.subarray(o, o + bins));
      this.#brView.push(this.#br.subarray(o, o + bins));
      this.#biView.push(this.#bi.subarray(o, o + bins));
    }
  }

  /** Forget everything learnt (a new call, or a reset). */
  reset(): void {
    for (
      const a of [this.#xr, this.#xi, this.#fr, this.#fi, this.#br, this.#bi, this.#win]
    ) a.fill(0);
    this.#power.fill(0);
    this.#sf = this.#sb = this.#shifted = 0;
    this.#shiftedAt.fill(0);
  }

  /**
   * One block: `ref` and `mic` (B samples each) in, the foreground's cancelled signal into
   * `out` (B samples). `adapt` scales the background's step (0 freezes it). Returns the block's
   * energies in `energy`.
   */
  process(
    ref: Float32Array,
    mic: Float32Array,
    out: Float32Array,
    adapt: number,
    energy: MdfBlockEnergy,
  ): void {
    const b = this.block;
    const px = this.#pushReference(ref);

    // Foreground: the output.
    this.#estimate(this.#fr, this.#fi);
    let pd = 0, py = 0, pe = 0;
    const tmp = this.#tmp;
    for (let i = 0; i < b; i++) {
      const y = tmp[b + i];
      const e = mic[i] - y;
      out[i] = e;
      pd += mic[i] * mic[i];
      py += y * y;
      pe += e * e;
    }
    energy.mic = pd;
    energy.echo = py;
    energy.error = pe;

    // Background: its error drives the adaptation.
    this.#estimate(this.#br, this.#bi);
    const eb = this.#eb;
    let peb = 0;
    for (let i = 0; i < b; i++) {
      eb[i] = mic[i] - tmp[b + i];
      peb += eb[i] * eb[i];
    }
    const active = px > b * 100; // reference above about -50 dBFS
    this.#sf = 0.7 * this.#sf + 0.3 * pe;
    this.#sb = 0.7 * this.#sb + 0.3 * peb;
    if (active && this.#sb < 0.6 * this.#sf) {
      // The background cancels clearly better: the output takes its coefficients.
      this.#fr.set(this.#br);
      this.#fi.set(this.#bi);
      this.#sf = this.#sb;
    } else if (this.#sb > 4 * this.#sf + b) {
      // The background has diverged (double talk, most likely): back to the foreground.
      this.#br.set(this.#fr);
      this.#bi.set(this.#fi);
      this.#sb = this.#sf;
      this.restores++;
      return;
    }
    if (active && adapt > 0) this.#adapt(adapt * this.step);
  }

  /**
   * One block while the reference has been silent for longer than the filter spans: no echo can
   * be predicted, so the reference's history is kept (for when the agent speaks again) and the
   * microphone passes to `out` unfiltered, without the estimates or an adaptation step.
   */
  pass(ref: Float32Array, mic: Float32Array, out: Float32Array, energy: MdfBlockEnergy): void {
    this.#pushReference(ref);
    let pd = 0;
    for (let i = 0; i < this.block; i++) {
      out[i] = mic[i];
      pd += mic[i] * mic[i];
    }
    energy.mic = energy.error = pd;
    energy.echo = 0;
  }

  /** Slide the overlap-save window and add the block's spectrum to the ring; returns its energy. */
  #pushReference(ref: Float32Array): number {
    const b = this.block, bins = this.#bins, k = this.partitions, fft = this.#fft;
    const win = this.#win, xr = this.#xr, xi = this.#xi, pw = this.#power;
    // Overlap-save window of the reference: the previous block, then this one.
    let px = 0;
    for (let i = 0; i < b; i++) {
      win[i] = win[b + i];
      win[b + i] = ref[i];
      px += ref[i] * ref[i];
    }
    const oldest = (this.#head + 1) % k; // the slot about to be overwritten
    const ob = oldest * this.stride;
    for (let j = 0; j < bins; j++) pw[j] -= (xr[ob + j] * xr[ob + j] + xi[ob + j] * xi[ob + j]) / k;
    this.#head = oldest;
    fft.forward(win, this.#xrView[oldest], this.#xiView[oldest]);
    for (let j = 0; j < bins; j++) {
      pw[j] += (xr[ob + j] * xr[ob + j] + xi[ob + j] * xi[ob + j]) / k;
      if (pw[j] < 0) pw[j] = 0;
    }
    return px;
  }

  /**
   * The background filter's coefficients, partition-major: K rows of `stride` floats, the B + 1
   * bins then zeros (read only).
   */
  get background(): { re: Float32Array; im: Float32Array; stride: number } {
    return { re: this.#br, im: this.#bi, stride: this.stride };
  }

  /**
   * Delay both filters' echo paths by `samples` (a fraction of a sample, or a few; negative
   * advances), as a phase rotation of every partition: what clock drift does to the path.
   */
  shift(samples: number): void {
    this.#shifted += samples;
    const bins = this.#bins, stride = this.stride, rr = this.#rotRe, ri = this.#rotIm;
    const w = (-Math.PI * samples) / this.block; // -2 pi k s / 2B per bin k
    for (let j = 0; j < bins; j++) {
      rr[j] = Math.cos(w * j);
      ri[j] = Math.sin(w * j);
    }
    this.#loops.rotate(this.#fr, this.#fi, this.partitions, stride, rr, ri);
    this.#loops.rotate(this.#br, this.#bi, this.partitions, stride, rr, ri);
  }

  /** Echo estimate of `wr`/`wi` over the reference history, in the second half of #tmp. */
  #estimate(wr: Float32Array, wi: Float32Array): void {
    const yr = this.#yr, yi = this.#yi;
    this.#loops.estimate(
      wr,
      wi,
      this.#xr,
      this.#xi,
      this.#head,
      this.partitions,
      this.stride,
      yr,
      yi,
    );
    this.#fft.inverse(yr, yi, this.#tmp);
  }

  /** Proportionate NLMS step of the background filter on its last error. */
  #adapt(mu: number): void {
    const b = this.block, bins = this.#bins, stride = this.stride, k = this.partitions;
    const fft = this.#fft, tmp = this.#tmp, er = this.#er, ei = this.#ei, eb = this.#eb;
    const wr = this.#br, wi = this.#bi, xr = this.#xr, xi = this.#xi, pw = this.#power;
    for (let i = 0; i < b; i++) {
      tmp[i] = 0;
      tmp[b + i] = eb[i];
    }
    fft.forward(tmp, er, ei);
    // Step per partition in proportion to the energy it already holds, plus a floor so empty
    // partitions still learn.
    const prop = this.#prop, gains = this.#gains;
    this.#loops.energies(wr, wi, k, stride, gains);
    let max = 0;
    for (let p = 0; p < k; p++) {
      prop[p] = Math.sqrt(gains[p]);
      if (prop[p] > max) max = prop[p];
    }
    this.#peak = max * max;
    let sum = 0;
    for (let p = 0; p < k; p++) sum += prop[p] += 0.1 * max + 1e-9;
    // Normalise by the mean power over the bins too, so quiet bins do not get huge steps.
    let mean = 0;
    for (let j = 0; j < bins; j++) mean += pw[j];
    const floor = 1e-2 * (mean / bins) + 1;
    for (let j = 0; j < bins; j++) {
      const g = 1 / (pw[j] + floor);
      er[j] *= g;
      ei[j] *= g;
    }
    for (let p = 0; p < k; p++) gains[p] = (mu * prop[p]) / sum;
    this.#loops.adapt(wr, wi, xr, xi, this.#head, k, stride, er, ei, gains);
    for (let c = 0; c < 2; c++) {
      this.#constrain(this.#constrainAt);
      this.#constrainAt = (this.#constrainAt + 1) % k;
    }
  }

  /**
   * Zero the second half of one background partition's impulse response. When the drift shift
   * (a rotation within each partition) has moved taps past either end since this partition's last
   * constraint, those taps belong to the neighbouring partition: zeroing them would make it learn
   * them again from nothing (a handset's strong taps crossing a border as the far end's clock
   * drifts cost 10 dB for a second or two), so they move there instead. Only the few taps the
   * shift moved, in its direction: the rest of the second half is the gradient's wrapped-around
   * part, and carrying that too double-counts the neighbour's own steps.
   */
  #constrain(p: number): void {
    const b = this.block, tmp = this.#tmp, wr = this.#brView[p], wi = this.#biView[p];
    const moved = this.#shifted - this.#shiftedAt[p];
    this.#shiftedAt[p] = this.#shifted;
    // Past the end (a growing delay) into the next partition's first taps, or before the start
    // (wrapped round to the end) into the previous partition's last taps; with the interpolated
    // shift's spread, a tap or two more than it moved.
    const n = Math.min(b >> 1, Math.ceil(Math.abs(moved)) + 2);
    const to = moved > 0 ? p + 1 : p - 1;
    let carries = Math.abs(moved) >= 0.05 && to >= 0 && to < this.partitions;
    if (carries) {
      // Only a partition holding a sizeable part of the echo path has taps worth carrying.
      let own = 0;
      for (let j = 0; j < wr.length; j++) own += wr[j] * wr[j] + wi[j] * wi[j];
      carries = own > SHARE * this.#peak;
    }
    this.#fft.inverse(wr, wi, tmp);
    if (carries) {
      const from = moved > 0 ? b : 2 * b - n;
      let kept = 0, over = 0;
      for (let i = 0; i < b; i++) kept += tmp[i] * tmp[i];
      for (let i = from; i < from + n; i++) over += tmp[i] * tmp[i];
      if (over > CARRY * kept) this.#carry(to, from, moved > 0 ? 0 : b - n, n);
    }
    tmp.fill(0, b);
    this.#fft.forward(tmp, wr, wi);
  }

  /**
   * Carry `tmp[from, from + n)` to background partition `q`'s impulse response at `at`: a tap the
   * neighbour has already learnt as large keeps its value (adding would count it twice).
   */
  #carry(q: number, from: number, at: number, n: number): void {
    const spill = this.#spill, tmp = this.#tmp;
    const wr = this.#brView[q], wi = this.#biView[q];
    this.#fft.inverse(wr, wi, spill);
    for (let i = 0; i < n; i++) {
      const v = tmp[from + i];
      if (Math.abs(v) > Math.abs(spill[at + i])) spill[at + i] = v;
    }
    this.#fft.forward(spill, wr, wi);
  }
}
