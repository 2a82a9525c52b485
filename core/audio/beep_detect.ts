/**
 * Answering-machine beep detector: a Goertzel bank that finds a single steady tone (the
 * "leave a message after the tone" beep) in a stream of any frame size, at 8 kHz or more.
 *
 * The audio is cut into 20 ms blocks. A block holds a tone when its energy reaches
 * `minLevelDbfs` and one frequency of the bank (`minHz` to `maxHz`, every `stepHz`) carries at
 * least `minPurity` of it. Speech spreads its energy over many harmonics, noise over
 * everything, and a DTMF key over two tones (about half each), so none of them passes. A beep is
 * a run of such blocks whose frequency stays within `maxDriftHz` of the first one, lasting at
 * least `minBeepMs`. It is reported once, when it ends: the first block without the tone, or
 * `maxBeepMs` into the tone (a dial tone or a fax never ends). Then the caller can speak. The
 * start and end are known to a block (20 ms).
 *
 * The bank's spacing (25 Hz by default) keeps any tone within half a step of a filter, where
 * it still reads as about 0.9 pure in a 20 ms block. The bank runs only on blocks loud enough
 * to hold a beep, so silence costs one energy sum per block.
 *
 * @example
 * ```ts
 * import { BeepDetector } from "@flowcat/flowcat/audio";
 * declare const pcm8k: Int16Array;
 * const det = new BeepDetector({ sampleRate: 8000 });
 * for (const beep of det.process(pcm8k)) {
 *   console.log(`${beep.freqHz} Hz beep ended at ${beep.endMs} ms: speak now`);
 * }
 * ```
 * @module
 */

import { FlowcatError } from "../errors.ts";

/** Options of a {@link BeepDetector}. */
export interface BeepDetectorOptions {
  /** Samples per second (default 8000; at least 8000). */
  sampleRate?: number;
  /** Lowest beep frequency looked for, Hz (default 300). */
  minHz?: number;
  /** Highest beep frequency looked for, Hz (default 2100; below half the sample rate). */
  maxHz?: number;
  /** Spacing of the Goertzel bank, Hz (default 25). */
  stepHz?: number;
  /** Shortest beep, ms (default 120). */
  minBeepMs?: number;
  /** A tone this long is reported without waiting for its end, ms (default 3000). */
  maxBeepMs?: number;
  /** Least RMS level of a beep block, dB relative to full scale (default -40). */
  minLevelDbfs?: number;
  /** Least share of a block's energy at the tone's frequency (default 0.7). */
  minPurity?: number;
  /** How far the tone may wander from its first block's frequency, Hz (default 50). */
  maxDriftHz?: number;
}

/** One beep heard. */
export interface Beep {
  /** Frequency of the bank filter that heard it, Hz (within `stepHz / 2` of the tone). */
  freqHz: number;
  /** Start, ms since the first sample fed. */
  startMs: number;
  /** End (the start of the first block without it), ms since the first sample fed. */
  endMs: number;
}

const BLOCK_MS = 20;
const NONE: readonly Beep[] = Object.freeze([]);

/** Streaming beep detector for one audio stream. */
export class BeepDetector {
  /** Samples per second this detector expects. */
  readonly sampleRate: number;
  readonly #n: number;
  readonly #freqs: Float64Array;
  readonly #coeff: Float64Array;
  readonly #block: Float64Array;
  readonly #minEnergy: number;
  readonly #purity: number;
  readonly #drift: number;
  readonly #minBlocks: number;
  readonly #maxBlocks: number;
  #fill = 0;
  /** Blocks analysed so far. */
  #blocks = 0;
  /** The tone being followed: its first block, frequency and length in blocks. */
  #toneStart = -1;
  #toneHz = 0;
  #toneBlocks = 0;
  /** The tone in progress was already reported (it reached maxBeepMs). */
  #reported = false;

  /** Make a detector (see {@link BeepDetectorOptions}). */
  constructor(opts: BeepDetectorOptions = {}) {
    const rate = opts.sampleRate ?? 8000;
    const minHz = opts.minHz ?? 300;
    const maxHz = opts.maxHz ?? 2100;
    const step = opts.stepHz ?? 25;
    if (!Number.isInteger(rate) || rate < 8000) {
      throw new FlowcatError("config", `beep: sample rate ${rate} unsupported (need >= 8000)`);
    }
    if (!(minHz > 0) || !(maxHz > minHz) || maxHz >= rate / 2 || !(step > 0)) {
      throw new FlowcatError(
        "config",
        `beep: need 0 < minHz < maxHz < ${
          rate / 2
        } and stepHz > 0 (got ${minHz}, ${maxHz}, ${step})`,
      );
    }
    const minBeepMs = opts.minBeepMs ?? 120;
    const maxBeepMs = opts.maxBeepMs ?? 3000;
    if (!(minBeepMs >= BLOCK_MS) || !(maxBeepMs >= minBeepMs)) {
      throw new FlowcatError("config", "beep: need 20 <= minBeepMs <= maxBeepMs");
    }
    this.sampleRate = rate;
    this.#n = Math.round((rate * BLOCK_MS) / 1000);
    this.#block = new Float64Array(this.#n);
    const count = Math.floor((maxHz - minHz) / step) + 1;
    this.#freqs = new Float64Array(count);
    this.#coeff = new Float64Array(count);
    for (let i = 0; i < count; i++) {
      this.#freqs[i] = minHz + i * step;
      this.#coeff[i] = 2 * Math.cos((2 * Math.PI * this.#freqs[i]) / rate);
    }
    const minRms = 32768 * 10 ** ((opts.minLevelDbfs ?? -40) / 20);
    this.#minEnergy = minRms * minRms * this.#n;
    this.#purity = opts.minPurity ?? 0.7;
    this.#drift = opts.maxDriftHz ?? 50;
    this.#minBlocks = Math.ceil(minBeepMs / BLOCK_MS);
    this.#maxBlocks = Math.floor(maxBeepMs / BLOCK_MS);
  }

  /** True while a tone long enough to be a beep is going on (it is reported when it ends). */
  get inBeep(): boolean {
    return this.#toneStart >= 0 && this.#toneBlocks >= this.#minBlocks && !this.#reported;
  }

  /**
   * Feed the next samples; returns the beeps that ended within them (usually none: then a
   * shared empty array, so the common case allocates nothing).
   */
  process(pcm: Int16Array): readonly Beep[] {
    let out: Beep[] | undefined;
    const n = this.#n;
    for (let i = 0; i < pcm.length; i++) {
      this.#block[this.#fill++] = pcm[i];
      if (this.#fill < n) continue;
      this.#fill = 0;
      const beep = this.#analyse();
      if (beep !== undefined) (out ??= []).push(beep);
    }
    return out ?? NONE;
  }

  /** Forget any tone in progress and restart the clock (a new stream). */
  reset(): void {
    this.#fill = 0;
    this.#blocks = 0;
    this.#toneStart = -1;
    this.#toneBlocks = 0;
    this.#reported = false;
  }

  /** Analyse the full block; returns a beep that just ended, if any. */
  #analyse(): Beep | undefined {
    const index = this.#blocks++;
    const hz = this.#toneOf();
    if (hz !== undefined && this.#toneStart >= 0 && Math.abs(hz - this.#toneHz) <= this.#drift) {
      this.#toneBlocks++;
      if (this.#toneBlocks === this.#maxBlocks && !this.#reported) {
        this.#reported = true;
        return this.#beep(index + 1);
      }
      return undefined;
    }
    // The tone followed so far (if any) ended at this block.
    const ended = this.#toneStart >= 0 && this.#toneBlocks >= this.#minBlocks && !this.#reported
      ? this.#beep(index)
      : undefined;
    this.#toneStart = hz === undefined ? -1 : index;
    this.#toneHz = hz ?? 0;
    this.#toneBlocks = hz === undefined ? 0 : 1;
    this.#reported = false;
    return ended;
  }

  #beep(endBlock: number): Beep {
    return {
      freqHz: this.#toneHz,
      startMs: this.#toneStart * BLOCK_MS,
      endMs: endBlock * BLOCK_MS,
    };
  }

  /** The frequency of the block's single tone, or undefined when it has none. */
  #toneOf(): number | undefined {
    const x = this.#block;
    const n = this.#n;
    let energy = 0;
    for (let i = 0; i < n; i++) energy += x[i] * x[i];
    if (energy < this.#minEnergy) return undefined;
    let best = -1;
    let bestPower = 0;
    for (let k = 0; k < this.#coeff.length; k++) {
      const c = this.#coeff[k];
      let s1 = 0;
      let s2 = 0;
      for (let i = 0; i < n; i++) {
        const s0 = x[i] + c * s1 - s2;
        s2 = s1;
        s1 = s0;
      }
      const power = s1 * s1 + s2 * s2 - c * s1 * s2;
      if (power > bestPower) {
        bestPower = power;
        best = k;
      }
    }
    // A full-block sine of amplitude A: Goertzel power (A·N/2)², energy A²·N/2; ratio 1.
    const purity = (2 * bestPower) / (n * energy);
    return best >= 0 && purity >= this.#purity ? this.#freqs[best] : undefined;
  }
}
