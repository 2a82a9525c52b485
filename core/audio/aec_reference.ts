/**
 * The echo canceller's reference on a timeline: the audio that left for the caller, placed where
 * the playout clock says it plays, read back span by span as the caller's audio arrives.
 *
 * Writes land at their playout time (resampled to the canceller's rate); gaps are silence. Reads
 * follow the caller's audio sample by sample from an anchor set by the first read's arrival
 * time, so arrival jitter and bursts do not shift the alignment. A new anchor is set only when
 * the count runs ahead of the clock (audio cannot arrive before it was spoken) or falls behind
 * it by more than a burst can explain (`gapMs`: the caller's audio stopped for a while).
 * The canceller's filter absorbs the rest of the delay (network, jitter buffers, the room).
 * @module
 */

import { Resampler } from "./resample.ts";
import type { AudioFrame } from "../frames.ts";

/** Reference audio on the playout timeline, at one sample rate. */
export class EchoReference {
  /** Rate the reference is kept and read at. */
  readonly sampleRate: number;
  readonly #ring: Int16Array;
  readonly #mask: number;
  readonly #gap: number;
  /** performance.now() ms of timeline sample 0 (set by the first write or read). */
  #origin = NaN;
  /** Timeline sample up to which the ring holds written (or zeroed) audio. */
  #written = 0;
  /** Timeline sample the next read starts at; NaN before the first read. */
  #readAt = NaN;
  #up: Resampler | undefined;

  /** A reference at `sampleRate`, holding about two seconds. */
  constructor(sampleRate: number, gapMs = 1000) {
    this.sampleRate = sampleRate;
    let size = 1;
    while (size < sampleRate * 2) size *= 2;
    this.#ring = new Int16Array(size);
    this.#mask = size - 1;
    this.#gap = (gapMs * sampleRate) / 1000;
  }

  /** Timeline sample of a performance.now() time. */
  #at(ms: number): number {
    if (Number.isNaN(this.#origin)) this.#origin = ms;
    return Math.round(((ms - this.#origin) * this.sampleRate) / 1000);
  }

  /** Place `audio` (mono, any rate) on the timeline from `playAtMs`. */
  write(audio: AudioFrame, playAtMs: number): void {
    let pcm = audio.pcm;
    if (audio.sampleRate !== this.sampleRate) {
      if (this.#up?.inRate !== audio.sampleRate) {
        this.#up = new Resampler(audio.sampleRate, this.sampleRate);
      }
      pcm = this.#up.process(pcm);
    }
    const start = this.#at(playAtMs), ring = this.#ring, mask = this.#mask;
    // Silence over any gap since the last write; a write may overlap the last one's end (after a
    // barge-in the timeline restarts): the newer audio wins, as only it was played.
    for (let i = this.#written; i < start; i++) ring[i & mask] = 0;
    for (let i = 0; i < pcm.length; i++) ring[(start + i) & mask] = pcm[i];
    this.#written = Math.max(this.#written, start + pcm.length);
  }

  /** The reference for the `out.length` samples of caller audio that arrived at `nowMs`. */
  read(out: Int16Array, nowMs: number): Int16Array {
    const n = out.length;
    const due = this.#at(nowMs) - n;
    const ahead = this.#readAt - due;
    if (Number.isNaN(ahead) || ahead > this.sampleRate / 50 || ahead < -this.#gap) {
      this.#readAt = due;
    }
    const from = this.#readAt, ring = this.#ring, mask = this.#mask;
    const oldest = this.#written - ring.length;
    for (let i = 0; i < n; i++) {
      const t = from + i;
      out[i] = t < this.#written && t >= oldest ? ring[t & mask] : 0;
    }
    this.#readAt += n;
    return out;
  }
}
