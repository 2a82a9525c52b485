/**
 * In-band DTMF detector (Goertzel), streaming over frames of any size, at 8 kHz or 16 kHz (any
 * rate from 8 kHz up works).
 *
 * Windows of 12.75 ms (102 samples at 8 kHz, 204 at 16 kHz), taken every half window
 * (6.4 ms), are measured at the eight keypad frequencies. A window holds a key when:
 * - the strongest row and column tones each reach `minLevelDbfs` (peak amplitude);
 * - each is at least `dominanceDb` above the other tones of its group;
 * - twist is within limits: the column tone at most `normalTwistDb` weaker than the row tone,
 *   at most `reverseTwistDb` stronger;
 * - the two tones carry at least `minToneRatio` of the window energy. This rejects speech and
 *   noise, and also windows only partly filled with tone (their ratio is the filled fraction).
 *
 * A key is reported once per press, when four consecutive windows hold it; the press ends after
 * five windows without it. So tones of 32 ms and longer are always detected and tones of 24 ms
 * or less never (ITU-T Q.24: accept >= 40 ms, reject < 23 ms); a pause of 40 ms separates two
 * presses of one key, and a dropout of 10 ms inside a tone does not. Frequency deviation is
 * not checked separately (the 78 Hz window resolution accepts +-1.5 % comfortably). Prefer
 * RFC 4733 events where the far end sends them.
 *
 * @example
 * ```ts
 * import { DtmfDetector } from "@flowcat/flowcat/audio";
 * import { FrameOf } from "@flowcat/flowcat";
 * declare const frame: FrameOf<"InputAudio">;
 * const det = new DtmfDetector({ sampleRate: 8000 });
 * for (const key of det.process(frame.audio.pcm)) console.log("pressed", key);
 * ```
 * @module
 */

import { FlowcatError } from "../errors.ts";
import type { KeypadEntry } from "../frames.ts";
import { DTMF_COL_FREQS, DTMF_KEYPAD, DTMF_ROW_FREQS } from "./dtmf_keys.ts";

/** Options of a {@link DtmfDetector}. */
export interface DtmfDetectorOptions {
  /** Samples per second (default 8000; at least 8000). */
  sampleRate?: number;
  /** Minimum peak level of each tone, dB relative to 32768 (default -33, about -30 dBm0). */
  minLevelDbfs?: number;
  /** Column tone weaker than row tone by at most this (default 8 dB). */
  normalTwistDb?: number;
  /** Column tone stronger than row tone by at most this (default 4 dB). */
  reverseTwistDb?: number;
  /** Each winning tone at least this far above the rest of its group (default 6 dB). */
  dominanceDb?: number;
  /** Least share of block energy in the two tones (default 0.75). */
  minToneRatio?: number;
}

const BLOCK_SECONDS = 0.01275;
const HITS_TO_PRESS = 4;
const MISSES_TO_RELEASE = 5;
const NONE: readonly KeypadEntry[] = Object.freeze([]);
const FREQS = [...DTMF_ROW_FREQS, ...DTMF_COL_FREQS];

/** Streaming DTMF detector for one audio stream. */
export class DtmfDetector {
  /** Samples per second this detector expects. */
  readonly sampleRate: number;
  readonly #n: number;
  readonly #hop: number;
  readonly #coeff = new Float64Array(8);
  readonly #power = new Float64Array(8);
  readonly #block: Float64Array;
  readonly #minPower: number;
  readonly #normalTwist: number;
  readonly #reverseTwist: number;
  readonly #dominance: number;
  readonly #ratio: number;
  #fill = 0;
  #last: KeypadEntry | null = null;
  #run = 0;
  #pressed: KeypadEntry | null = null;
  #misses = 0;

  /** Make a detector (see {@link DtmfDetectorOptions}). */
  constructor(opts: DtmfDetectorOptions = {}) {
    const rate = opts.sampleRate ?? 8000;
    if (!Number.isInteger(rate) || rate < 8000) {
      throw new FlowcatError("config", `dtmf: sample rate ${rate} unsupported (need >= 8000)`);
    }
    this.sampleRate = rate;
    this.#n = Math.round(rate * BLOCK_SECONDS);
    this.#hop = this.#n >> 1;
    this.#block = new Float64Array(this.#n);
    for (let i = 0; i < 8; i++) this.#coeff[i] = 2 * Math.cos((2 * Math.PI * FREQS[i]) / rate);
    // Goertzel power of a full-block sine of peak amplitude A is (A * N / 2)^2.
    const minAmp = 32768 * 10 ** ((opts.minLevelDbfs ?? -33) / 20);
    this.#minPower = ((minAmp * this.#n) / 2) ** 2;
    this.#normalTwist = 10 ** ((opts.normalTwistDb ?? 8) / 10);
    this.#reverseTwist = 10 ** ((opts.reverseTwistDb ?? 4) / 10);
    this.#dominance = 10 ** ((opts.dominanceDb ?? 6) / 10);
    this.#ratio = opts.minToneRatio ?? 0.75;
  }

  /**
   * Feed the next samples; returns the keys whose press was recognised within them (usually
   * none: then a shared empty array, so the common case allocates nothing).
   */
  process(pcm: Int16Array): readonly KeypadEntry[] {
    let keys = NONE;
    const n = this.#n;
    const block = this.#block;
    let i = 0;
    while (i < pcm.length) {
      const take = Math.min(n - this.#fill, pcm.length - i);
      for (let j = 0; j < take; j++) block[this.#fill + j] = pcm[i + j];
      this.#fill += take;
      i += take;
      if (this.#fill < n) break;
      const key = this.#step(this.#classify());
      if (key !== null) keys = keys === NONE ? [key] : [...keys, key];
      // Slide by half a window: the next analysis overlaps this one by 50 %.
      block.copyWithin(0, this.#hop, n);
      this.#fill = n - this.#hop;
    }
    return keys;
  }

  /** Forget any partial window and press in progress. */
  reset(): void {
    this.#fill = 0;
    this.#last = null;
    this.#run = 0;
    this.#pressed = null;
    this.#misses = 0;
  }

  /** The key held by the current window, or null. */
  #classify(): KeypadEntry | null {
    const x = this.#block;
    const n = this.#n;
    let energy = 0;
    for (let j = 0; j < n; j++) energy += x[j] * x[j];
    if (energy === 0) return null;
    const p = this.#power;
    for (let f = 0; f < 8; f++) {
      const c = this.#coeff[f];
      let s1 = 0;
      let s2 = 0;
      for (let j = 0; j < n; j++) {
        const s0 = x[j] + c * s1 - s2;
        s2 = s1;
        s1 = s0;
      }
      p[f] = s1 * s1 + s2 * s2 - c * s1 * s2;
    }
    let row = 0;
    for (let f = 1; f < 4; f++) if (p[f] > p[row]) row = f;
    let col = 4;
    for (let f = 5; f < 8; f++) if (p[f] > p[col]) col = f;
    const pr = p[row];
    const pc = p[col];
    if (pr < this.#minPower || pc < this.#minPower) return null;
    if (pr > pc * this.#normalTwist || pc > pr * this.#reverseTwist) return null;
    for (let f = 0; f < 8; f++) {
      if (f === row || f === col) continue;
      if (p[f] * this.#dominance > (f < 4 ? pr : pc)) return null;
    }
    // A tone filling the window has Goertzel power (N/2) x its share of the energy.
    if (pr + pc < this.#ratio * energy * (n / 2)) return null;
    return DTMF_KEYPAD[row][col - 4];
  }

  /** Advance the press state machine by one window; returns a newly pressed key. */
  #step(key: KeypadEntry | null): KeypadEntry | null {
    this.#run = key !== null && key === this.#last ? this.#run + 1 : key === null ? 0 : 1;
    this.#last = key;
    if (this.#pressed !== null) {
      if (key === this.#pressed) this.#misses = 0;
      else if (++this.#misses >= MISSES_TO_RELEASE) this.#pressed = null;
    }
    if (this.#pressed === null && key !== null && this.#run >= HITS_TO_PRESS) {
      this.#pressed = key;
      this.#misses = 0;
      return key;
    }
    return null;
  }
}
