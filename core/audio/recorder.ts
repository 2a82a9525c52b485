/**
 * Pure call-recorder core: taps the input leg (caller) and output leg (bot) audio, puts both on
 * one timeline, and mixes them to a mono 16-bit WAV.
 *
 * Alignment rules, per leg:
 * - each leg is resampled (streaming, {@link Resampler}) to the recording rate and is treated
 *   as a sequential stream: its frames never overlap each other;
 * - a frame's pipeline timestamp (ns) places it on the timeline relative to the recording start
 *   (`startNs`, default: the timestamp of the first frame either leg brings). When that place
 *   is later than the end of what the leg has written by more than `gapToleranceMs`, the gap
 *   is silence; when it is earlier (bursty TTS frames stamped close together, jitter), the
 *   frame simply follows the previous one;
 * - a frame without a timestamp follows the previous one.
 *
 * The two legs are summed with saturation. Storage is in one-second chunks, allocated only where
 * a leg has audio, so long silences cost nothing and nothing is ever copied to grow.
 *
 * @example
 * ```ts
 * import { AudioRecorder } from "@flowcat/flowcat/audio";
 * import type { FrameOf } from "@flowcat/flowcat";
 * declare const frame: FrameOf<"InputAudio">;
 * declare const callerPcm8k: Int16Array;
 * declare const botPcm24k: Int16Array;
 * const rec = new AudioRecorder({ sampleRate: 16000 });
 * rec.addInput({ pcm: callerPcm8k, sampleRate: 8000, numChannels: 1 }, frame.pts);
 * rec.addOutput({ pcm: botPcm24k, sampleRate: 24000, numChannels: 1 }, frame.pts);
 * const wav = rec.toWav();
 * ```
 * @module
 */

import { FlowcatError } from "../errors.ts";
import type { AudioFrame } from "../frames.ts";
import { Resampler } from "./resample.ts";
import { encodeWav, WAV_HEADER_BYTES, wavHeader } from "./wav.ts";

/** Options of an {@link AudioRecorder}. */
export interface AudioRecorderOptions {
  /** Rate of the recording in Hz (default 16000). */
  sampleRate?: number;
  /** Recording start on the pipeline clock, ns (default: pts of the first frame added). */
  startNs?: number;
  /** Longest recording kept, in seconds (default 3600); later audio is dropped and counted. */
  maxSeconds?: number;
  /** Timestamp gaps up to this long are ignored rather than filled with silence (default 30). */
  gapToleranceMs?: number;
}

/** Which leg of a call a frame belongs to. */
export type RecorderLeg = "input" | "output";

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** One leg's samples at the recording rate, in lazily allocated fixed-size chunks. */
class Track {
  readonly chunks: (Int16Array | undefined)[] = [];
  length = 0;
  resampler: Resampler | undefined;
  constructor(readonly chunkSize: number) {}

  write(pos: number, data: Int16Array): void {
    const cs = this.chunkSize;
    let p = pos;
    let i = 0;
    while (i < data.length) {
      const c = Math.floor(p / cs);
      const off = p - c * cs;
      const n = Math.min(cs - off, data.length - i);
      const chunk = this.chunks[c] ??= new Int16Array(cs);
      chunk.set(data.subarray(i, i + n), off);
      i += n;
      p += n;
    }
    this.length = Math.max(this.length, pos + data.length);
  }
}

/** Average interleaved channels down to mono (a no-op view for mono). */
function toMono(audio: AudioFrame): Int16Array {
  const ch = audio.numChannels;
  if (ch === 1) return audio.pcm;
  const n = Math.floor(audio.pcm.length / ch);
  const out = new Int16Array(n);
  for (let i = 0; i < n; i++) {
    let acc = 0;
    for (let c = 0; c < ch; c++) acc += audio.pcm[i * ch + c];
    out[i] = Math.round(acc / ch);
  }
  return out;
}

/**
 * Records both legs of a call and produces one mono WAV. Synchronous and allocation-light:
 * meant to be driven by a processor or observer tapping InputAudio and OutputAudio frames.
 */
export class AudioRecorder {
  /** Rate of the recording in Hz. */
  readonly sampleRate: number;
  readonly #maxSamples: number;
  readonly #tolerance: number;
  #startNs: number | undefined;
  #input: Track;
  #output: Track;
  #dropped = 0;

  /** Make a recorder (see {@link AudioRecorderOptions}). */
  constructor(opts: AudioRecorderOptions = {}) {
    const rate = opts.sampleRate ?? 16000;
    if (!Number.isInteger(rate) || rate <= 0) {
      throw new FlowcatError("config", `recorder: bad sample rate ${rate}`);
    }
    const maxSeconds = opts.maxSeconds ?? 3600;
    if (!(maxSeconds > 0)) {
      throw new FlowcatError("config", `recorder: bad maxSeconds ${maxSeconds}`);
    }
    this.sampleRate = rate;
    this.#maxSamples = Math.floor(maxSeconds * rate);
    this.#tolerance = Math.round(((opts.gapToleranceMs ?? 30) * rate) / 1000);
    this.#startNs = opts.startNs;
    this.#input = new Track(rate);
    this.#output = new Track(rate);
  }

  /** Add caller audio, stamped with its pipeline-clock time in ns. */
  addInput(audio: AudioFrame, ptsNs?: number): void {
    this.add("input", audio, ptsNs);
  }

  /** Add bot audio, stamped with its pipeline-clock time in ns. */
  addOutput(audio: AudioFrame, ptsNs?: number): void {
    this.add("output", audio, ptsNs);
  }

  /** Add audio to one leg. */
  add(leg: RecorderLeg, audio: AudioFrame, ptsNs?: number): void {
    const track = leg === "input" ? this.#input : this.#output;
    if (!Number.isInteger(audio.sampleRate) || audio.sampleRate <= 0 || audio.numChannels < 1) {
      throw new FlowcatError(
        "protocol",
        `recorder: bad audio (${audio.sampleRate} Hz, ${audio.numChannels} ch)`,
      );
    }
    if (ptsNs !== undefined && this.#startNs === undefined) this.#startNs = ptsNs;
    let pcm = toMono(audio);
    if (audio.sampleRate !== this.sampleRate) {
      if (track.resampler?.inRate !== audio.sampleRate) {
        track.resampler = new Resampler(audio.sampleRate, this.sampleRate);
      }
      pcm = track.resampler.processLent(pcm); // copied into the track's chunks below
    }
    let pos = track.length;
    if (ptsNs !== undefined) {
      const at = Math.round(((ptsNs - (this.#startNs ?? ptsNs)) * this.sampleRate) / 1e9);
      if (at > pos + this.#tolerance) pos = at;
      else if (pos === 0 && at < 0) {
        // Audio from before the recording started: keep only its tail.
        pcm = pcm.subarray(Math.min(pcm.length, -at));
      }
    }
    const room = this.#maxSamples - pos;
    if (room < pcm.length) {
      this.#dropped += pcm.length - Math.max(0, room);
      if (room <= 0) return;
      pcm = pcm.subarray(0, room);
    }
    track.write(pos, pcm);
  }

  /** Length of the recording so far, in seconds. */
  get durationSecs(): number {
    return Math.max(this.#input.length, this.#output.length) / this.sampleRate;
  }

  /** Samples dropped because the recording reached `maxSeconds`. */
  get droppedSamples(): number {
    return this.#dropped;
  }

  /** Mix both legs into `out` (which must hold the mixed length) or a new buffer. */
  mix(out?: Int16Array): Int16Array {
    const n = Math.max(this.#input.length, this.#output.length);
    const dst = out ?? new Int16Array(n);
    if (dst.length < n) throw new FlowcatError("other", `recorder: out holds ${dst.length} < ${n}`);
    const cs = this.sampleRate;
    for (let c = 0; c * cs < n; c++) {
      const a = this.#input.chunks[c];
      const b = this.#output.chunks[c];
      const only = a ?? b;
      const base = c * cs;
      const len = Math.min(cs, n - base);
      if (a && b) {
        for (let i = 0; i < len; i++) {
          dst[base + i] = Math.max(-32768, Math.min(32767, a[i] + b[i]));
        }
      } else if (only) {
        dst.set(only.subarray(0, len), base);
      } else {
        dst.fill(0, base, base + len);
      }
    }
    return n === dst.length ? dst : dst.subarray(0, n);
  }

  /** The mixed recording as mono 16-bit PCM WAV bytes (one allocation). */
  toWav(): Uint8Array {
    const n = Math.max(this.#input.length, this.#output.length);
    if (!LITTLE_ENDIAN) return encodeWav(this.mix(), this.sampleRate);
    const bytes = new Uint8Array(WAV_HEADER_BYTES + n * 2);
    bytes.set(wavHeader(n * 2, this.sampleRate));
    this.mix(new Int16Array(bytes.buffer, WAV_HEADER_BYTES, n));
    return bytes;
  }

  /** Drop everything recorded; the next frame (or `startNs`) starts a new timeline. */
  reset(startNs?: number): void {
    this.#startNs = startNs;
    this.#input = new Track(this.sampleRate);
    this.#output = new Track(this.sampleRate);
    this.#dropped = 0;
  }
}
