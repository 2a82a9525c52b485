/**
 * Acoustic echo canceller for one call: removes the agent's own voice, as it comes back from a
 * speakerphone or a leaky handset, from the caller's audio.
 *
 * Per block of about 8 ms (64 samples at 8 kHz, 128 at 16 kHz):
 * 1. A two-path multi-delay block frequency-domain NLMS filter ({@link MdfFilter}) covering
 *    `maxDelayMs` of bulk delay plus `tailMs` of echo tail subtracts the linear echo; a
 *    {@link DriftTracker} shifts it along as the far end's clock drifts against ours.
 * 2. Double-talk detection: once the filter has converged, a block whose residual is well
 *    above what the filter leaves in single talk holds the caller's speech; the residual
 *    models stop learning and adaptation slows. Before that, the caller is told from the echo
 *    by level and by what the filter has heard so far ({@link EchoEvidence}: on a leg with no
 *    echo, the caller talking over the greeting passes as if there were no canceller).
 * 3. A residual echo suppressor per band ({@link ResidualSuppressor}): a power model of what
 *    the linear filter leaves, learnt from the reference in single talk, sets each band's gain,
 *    so a reverb tail or drift residue is attenuated while the caller passes where they
 *    dominate. Before the filter has converged, the microphone is held at the floor while the
 *    agent speaks, unless the detector hears the caller.
 *
 * The output lags the input by two blocks ({@link EchoCanceller.latency} samples; one without
 * the suppressor). Frames may be any length; nothing is allocated per frame.
 *
 * @example
 * ```ts
 * import { EchoCanceller } from "@flowcat/flowcat/audio";
 * const aec = new EchoCanceller({ sampleRate: 8000 });
 * declare const mic: Int16Array, sent: Int16Array; // the caller's frame, what we played then
 * const clean = aec.process(mic, sent);
 * console.log(aec.erleDb);
 * ```
 * @module
 */

import { FlowcatError } from "../errors.ts";
import { type MdfBlockEnergy, MdfFilter } from "./aec_mdf.ts";
import { DriftTracker } from "./aec_drift.ts";
import { ResidualSuppressor } from "./aec_suppress.ts";
import { EchoEvidence } from "./aec_evidence.ts";

/** Options of an {@link EchoCanceller}. */
export interface EchoCancellerOptions {
  /** Sample rate of both signals (8000 and 16000 are the telephone rates). */
  sampleRate: number;
  /** Longest bulk delay from the reference to its echo, in ms (default 300). */
  maxDelayMs?: number;
  /** Echo tail after the bulk delay, in ms (default 160: a small room rings about that long). */
  tailMs?: number;
  /** Run the residual echo suppressor (default true). */
  suppress?: boolean;
  /** Deepest attenuation of the suppressor, in dB (default 40). */
  suppressDb?: number;
  /** Follow clock drift between the reference and the microphone (default true). */
  trackDrift?: boolean;
}

/**
 * Energy ratio of microphone to the loudest recent reference block above which, before the filter
 * has converged, the block is the caller's voice rather than echo (3 dB: an echo path louder than
 * that is a speaker pressed to the microphone).
 */
const GEIGEL = 0.5;
/**
 * Blocks the double-talk hangover lasts before convergence (about 96 ms): once heard, a caller's
 * word must pass whole, or the VAD's 200 ms start window never fills.
 */
const EARLY_HANG = 12;

/** Per-call echo canceller over the caller's audio and the reference (what was played). */
export class EchoCanceller {
  /** Sample rate of the signals. */
  readonly sampleRate: number;
  /** Delay the canceller adds, in samples (two blocks; one without the suppressor). */
  readonly latency: number;
  readonly #mdf: MdfFilter;
  readonly #drift: DriftTracker | undefined;
  readonly #b: number;
  readonly #suppress: boolean;
  readonly #gMin: number;
  readonly #mic: Float32Array;
  readonly #ref: Float32Array;
  readonly #err: Float32Array;
  readonly #res: ResidualSuppressor | undefined;
  readonly #out: Float32Array;
  /** The pre-convergence gate's gains over the block the suppressor gives out next. */
  #lateG0 = 1;
  #lateG1 = 1;
  #fill = 0;
  #ring: Int16Array;
  #ringRead = 0;
  #ringWrite = 0;
  readonly #e: MdfBlockEnergy = { mic: 0, echo: 0, error: 0 };
  /** Blocks since the reference was last active (its echo may still be coming). */
  #sinceFar = Infinity;
  readonly #hangBlocks: number;
  /** Loudest reference block within the echo window (decaying). */
  #farPeak = 0;
  #eta = 1;
  #echoPeak = 0;
  readonly #peakDecay: number;
  #sy = 0;
  #sr = 0;
  #sd = 0;
  #se = 0;
  #converged = false;
  /** Single-talk blocks with echo seen so far, and how many end the pre-convergence gate. */
  #learnt = 0;
  /** Before convergence: whether the microphone holds an echo or the caller. */
  readonly #evidence: EchoEvidence;
  readonly #gateBlocks: number;
  #dt = 0;
  #dtLoud = 0;
  #strongDt = 0;
  #gain = 1;
  #erleIn = 0;
  #erleOut = 0;

  /** A canceller (see {@link EchoCancellerOptions}). */
  constructor(opts: EchoCancellerOptions) {
    const rate = opts.sampleRate;
    const maxDelay = opts.maxDelayMs ?? 300, tail = opts.tailMs ?? 160;
    if (!(rate >= 4000 && rate <= 48000) || !(maxDelay >= 0) || !(tail > 0)) {
      throw new FlowcatError(
        "config",
        `echo canceller: sampleRate 4000..48000, maxDelayMs >= 0, tailMs > 0 (got ${rate}, ${maxDelay}, ${tail})`,
      );
    }
    this.sampleRate = rate;
    const b = (this.#b = 2 ** Math.round(Math.log2(rate * 0.008)));
    const partitions = Math.ceil(((maxDelay + tail) * rate) / 1000 / b);
    this.#mdf = new MdfFilter(b, partitions);
    if (opts.trackDrift ?? true) this.#drift = new DriftTracker(this.#mdf);
    this.#hangBlocks = partitions + 2;
    this.#peakDecay = Math.exp(-b / (0.1 * rate)); // 100 ms
    this.#gateBlocks = Math.round((2 * rate) / b);
    this.#evidence = new EchoEvidence(b, rate, maxDelay);
    this.#suppress = opts.suppress ?? true;
    this.latency = this.#suppress ? 2 * b : b;
    const floorDb = opts.suppressDb ?? 40;
    this.#gMin = 10 ** (-floorDb / 20);
    this.#mic = new Float32Array(b);
    this.#ref = new Float32Array(b);
    this.#err = new Float32Array(b);
    this.#out = new Float32Array(b);
    // The suppressor's power model is cheap per block: it reaches 300 ms past the bulk delay,
    // as far as a living room rings, where the linear filter stops at the tail.
    const modelled = Math.ceil(((maxDelay + Math.max(tail, 300)) * rate) / 1000 / b);
    if (this.#suppress) {
      this.#res = new ResidualSuppressor(b, rate, { floorDb, partitions: modelled });
    }
    this.#ring = new Int16Array(4 * b);
    this.#ringWrite = b; // the block being gathered, as silence (the suppressor adds another)
  }

  /** Echo return loss enhancement over the recent single talk, in dB (NaN before any). */
  get erleDb(): number {
    return this.#erleOut > 0 ? 10 * Math.log10(this.#erleIn / this.#erleOut) : NaN;
  }

  /** What the linear filter alone removes in single talk, in dB (NaN before any). */
  get linearErleDb(): number {
    return this.#se > 0 ? 10 * Math.log10(this.#sd / this.#se) : NaN;
  }

  /** The caller's clock against ours as followed so far, in ppm (positive: theirs is fast). */
  get driftPpm(): number {
    return this.#drift?.driftPpm ?? 0;
  }

  /** True once the adaptive filter has converged. */
  get converged(): boolean {
    return this.#converged;
  }

  /** True while the caller talks over the agent (as of the last block). */
  get doubleTalk(): boolean {
    return this.#dt > 0;
  }

  /**
   * Cancel the echo of `ref` (what was played to the caller over the same span) from `mic`.
   * Returns the cleaned audio, `mic.length` samples, `latency` samples late; into `out` when given.
   */
  process(mic: Int16Array, ref: Int16Array, out?: Int16Array): Int16Array {
    const n = mic.length;
    const result = out ?? new Int16Array(n);
    if (this.#ring.length < n + 2 * this.#b) this.#grow(n + 2 * this.#b);
    const b = this.#b;
    for (let i = 0; i < n; i++) {
      this.#mic[this.#fill] = mic[i];
      this.#ref[this.#fill] = i < ref.length ? ref[i] : 0;
      if (++this.#fill === b) {
        this.#fill = 0;
        this.#block();
      }
    }
    const ring = this.#ring, mask = ring.length - 1;
    for (let i = 0; i < n; i++) result[i] = ring[(this.#ringRead + i) & mask];
    this.#ringRead += n;
    return result;
  }

  /** Forget the echo path and the state (the far end changed). */
  reset(): void {
    this.#mdf.reset();
    this.#drift?.reset();
    this.#res?.reset();
    this.#converged = false;
    this.#learnt = 0;
    this.#evidence.reset();
    this.#eta = 1;
    this.#echoPeak = 0;
    this.#sy = this.#sr = 0;
    this.#sd =
      this.#se =
      this.#erleIn =
      this.#erleOut =
        0;
    this.#dt = this.#strongDt = 0;
    this.#gain = 1;
    this.#sinceFar = Infinity;
    this.#farPeak = 0;
  }

  #block(): void {
    const b = this.#b, e = this.#e, ref = this.#ref;
    let px = 0;
    for (let i = 0; i < b; i++) px += ref[i] * ref[i];
    if (px > b * 100) this.#sinceFar = 0;
    else this.#sinceFar++;
    const farRecent = this.#sinceFar <= this.#hangBlocks;
    this.#farPeak = Math.max(px, this.#farPeak * (1 - 1 / this.#hangBlocks));
    const adapt = this.#strongDt > 0 ? 0.1 : 1;
    // With the reference silent over the whole span there is no echo to predict: the filter only
    // keeps the reference's history, at a fraction of the cost (half a call, or more, is the
    // caller talking while the agent listens).
    if (farRecent) this.#mdf.process(ref, this.#mic, this.#err, adapt, e);
    else this.#mdf.pass(ref, this.#mic, this.#err, e);
    const louderOut = e.error > e.mic;
    // The estimate is wrong, not just small: it adds more than it removes and is a sizeable part
    // of the microphone (a stray tap predicting echo that is not there yet, or coefficients just
    // swapped in that do not fit). A small estimate under a louder microphone (the caller talking
    // in the agent's pause) also leaves the error a little above the microphone, as any two
    // unrelated signals add: that is no misprediction, and must not hold the suppressor's gains
    // down, or it chops the caller's onset.
    const mispredicted = louderOut && e.echo > 0.25 * e.mic;
    if (louderOut) {
      // Never make the caller's audio louder: pass the microphone instead.
      this.#err.set(this.#mic);
      e.error = e.mic;
    }

    // Double talk: a residual far above what the converged filter leaves in single talk.
    const floor = b * 1000; // about -60 dBFS
    // The filter's misadjustment spreads residual echo over its whole span, into the echo's own
    // pauses: the expected residual follows a decaying peak of the echo estimate, not the block.
    this.#echoPeak = Math.max(e.echo, this.#echoPeak * this.#peakDecay);
    const expected = this.#eta * this.#echoPeak;
    // The caller's voice also makes the microphone louder than the echo has lately been; a
    // block the filter mispredicted (a coefficient swap gone wrong) does not.
    const louder = e.mic > this.#echoPeak;
    // Before convergence the residual alone cannot tell the caller from the echo yet (the young
    // filter's ratio is not capped: it leaves more than the estimate); two other things can.
    // Level: an echo is quieter than what was played (a loss of at least 3 dB), so a louder
    // microphone is the caller (a Geigel detector). And what the filter has heard so far: a
    // microphone it explains none of, after a while, is the caller ({@link EchoEvidence}).
    const heard = this.#converged
      ? undefined
      : this.#evidence.update(e.mic, e.error, px / b, farRecent, floor);
    const leaves = heard === undefined
      ? expected
      : this.#sy > 0
      ? (this.#sr / this.#sy) * this.#echoPeak
      : Infinity;
    const dtNow = farRecent && (e.error > 4 * leaves + floor ||
      (heard !== undefined && (e.mic > GEIGEL * this.#farPeak + floor || heard.unexplained)));
    this.#dt = dtNow ? (heard === undefined ? 6 : EARLY_HANG) : Math.max(0, this.#dt - 1);
    this.#dtLoud = dtNow && louder ? 6 : Math.max(0, this.#dtLoud - 1);
    if (heard !== undefined && this.#dt > 0 && heard.noEcho) {
      // On a leg where no echo was found, the young filter has none to take out: while the caller
      // talks, its estimate is only the agent's voice misapplied, so the caller passes as it came.
      this.#err.set(this.#mic);
      e.error = e.mic;
    }
    // Adaptation slows only on clear evidence: the two-path filter already rides out most double
    // talk, and a false alarm in single talk would slow convergence.
    const strong = this.#converged && farRecent && e.error > 16 * expected + floor;
    this.#strongDt = strong ? 6 : Math.max(0, this.#strongDt - 1);
    // Single talk only, with the detector's hangover: the caller's words must not count as echo.
    const single = farRecent && this.#dt === 0 && e.mic > floor;
    if (single) {
      if (e.echo > floor) {
        // A ratio of smoothed energies, not a mean of ratios: pauses would bias that upward.
        this.#sy = 0.95 * this.#sy + 0.05 * e.echo;
        this.#sr = 0.95 * this.#sr + 0.05 * e.error;
        this.#eta = Math.min(1, this.#sr / this.#sy);
      }
      this.#sd = 0.97 * this.#sd + 0.03 * e.mic;
      this.#se = 0.97 * this.#se + 0.03 * e.error;
      // Latched: a path change is the filter's and the suppressor's to follow (both keep
      // adapting); dropping back to the pre-convergence gate would mute a caller talking.
      if (this.#sd > 4 * (this.#se + 1)) this.#converged = true;
      // A path the filter cannot model well (a long reverb, drifting clocks) may never reach
      // 6 dB: after two seconds of echo the suppressor takes over from the gate regardless, or
      // the gate would mute a caller who talks over the agent for the whole call.
      if (++this.#learnt >= this.#gateBlocks) this.#converged = true;
    }

    this.#drift?.update(this.#mdf, single && e.echo > floor);

    // Residual echo suppression, per band; its output is the block before this one.
    let out = this.#err, g0 = 1, g1 = 1;
    if (this.#res !== undefined) {
      this.#res.process(this.#err, ref, {
        far: farRecent,
        // Before convergence only a block the filter partly explains is known to be echo: the
        // model must not learn a caller's words, said over the greeting, as the echo's level.
        learn: single && (heard === undefined || heard.explained),
        doubleTalk: this.#dtLoud > 0,
        hold: mispredicted,
      }, this.#out);
      out = this.#out;
      // Before the filter has converged the suppressor has learnt little: the microphone is held
      // at the floor while the agent speaks, unless the detector above hears the caller.
      const target = farRecent && !this.#converged && this.#dt === 0 ? this.#gMin : 1;
      const prev = this.#gain;
      // Down at once; up at once when the caller was just heard (the block's gain still glides
      // there), fast while they talk, slowly when it may be an echo burst.
      this.#gain = target < prev || dtNow
        ? target
        : prev + (this.#dt > 0 || !farRecent ? 0.5 : 0.1) * (target - prev);
      g0 = this.#lateG0;
      g1 = this.#lateG1;
      this.#lateG0 = prev;
      this.#lateG1 = this.#gain;
    }
    const ring = this.#ring, mask = ring.length - 1;
    let pout = 0;
    for (let i = 0; i < b; i++) {
      const v = g0 === 1 && g1 === 1 ? out[i] : out[i] * (g0 + ((g1 - g0) * (i + 1)) / b);
      pout += v * v;
      ring[(this.#ringWrite + i) & mask] = v > 32767 ? 32767 : v < -32768 ? -32768 : Math.round(v);
    }
    this.#ringWrite += b;
    if (single) {
      this.#erleIn = 0.97 * this.#erleIn + 0.03 * e.mic;
      this.#erleOut = 0.97 * this.#erleOut + 0.03 * (pout + 1);
    }
  }

  /** A bigger output ring (a longer frame than before), keeping what is queued. */
  #grow(min: number): void {
    let size = this.#ring.length;
    while (size < min) size *= 2;
    const old = this.#ring, oldMask = old.length - 1;
    const ring = new Int16Array(size);
    for (let i = this.#ringRead; i < this.#ringWrite; i++) {
      ring[i & (size - 1)] = old[i & oldMask];
    }
    this.#ring = ring;
  }
}
