/**
 * NoiseFilter: opt-in noise suppression of the caller's InputAudio with RNNoise.
 *
 * Each InputAudio frame is resampled to 48 kHz (the project {@link Resampler}), denoised in
 * 480-sample frames by {@link RnnoiseDenoiser}, and resampled back to its own rate, then sent
 * on as a new InputAudio frame (same meta, new id). Frames of a multiple of 10 ms come out
 * one for one with the same length. The path adds RNNoise's 20 ms plus the two resamplers'
 * delay (about 3 ms each way at 8 kHz, 1.5 ms at 16 kHz); 48 kHz input skips the resamplers.
 *
 * On 8 kHz telephone speech it silences the noise in pauses and helps in loud noise, but it
 * also colours clean speech (see docs/audio.md), so it is opt-in: add it for noisy callers.
 *
 * Put it right after the input transport, before the VAD. Once in the pipeline it is on
 * unless `enabled: false`; `UpdateSettings` with target `filter` (or `all`) and
 * `{ enabled: boolean }` turns it off and on during a call. If the wasm cannot be loaded, the filter reports a non-fatal Error
 * and passes audio through untouched.
 *
 * @example
 * ```ts
 * import { NoiseFilter } from "@flowcat/flowcat/processors/noise-filter";
 * // Pipeline: [transportIn, new NoiseFilter(), vad, stt, llm, tts, transportOut]
 * ```
 *
 * Permissions: none.
 * @module
 */

import { Resampler } from "../audio/resample.ts";
import { RNNOISE_RATE, RnnoiseDenoiser, type RnnoiseModuleLike } from "../audio/rnnoise.ts";
import { errorMessage } from "../errors.ts";
import {
  type AudioFrame,
  cloneFrame,
  type Direction,
  type Frame,
  type FrameOf,
  type StartParams,
  type StopReason,
} from "../frames.ts";
import { FrameProcessor, type Link, type ProcessorSetup } from "../processor.ts";

/** Options of a {@link NoiseFilter}. */
export interface NoiseFilterOptions {
  /** Start enabled (default true). */
  enabled?: boolean;
  /** An RNNoise module to use instead of the default build. */
  module?: RnnoiseModuleLike;
  /** Processor name (default `NoiseFilter`). */
  name?: string;
}

/** Denoises downstream InputAudio; forwards everything else. */
export class NoiseFilter extends FrameProcessor {
  readonly #module: RnnoiseModuleLike | undefined;
  #enabled: boolean;
  #dn: RnnoiseDenoiser | undefined;
  #up: Resampler | undefined;
  #down: Resampler | undefined;

  /** Make a filter (see {@link NoiseFilterOptions}). */
  constructor(opts: NoiseFilterOptions = {}) {
    super(opts.name ?? "NoiseFilter");
    this.#enabled = opts.enabled ?? true;
    this.#module = opts.module;
  }

  /** True while audio is being denoised. */
  get enabled(): boolean {
    return this.#enabled && this.#dn !== undefined;
  }

  /** RNNoise's voice probability for the last 10 ms analysed (0 before any). */
  get voiceProbability(): number {
    return this.#dn?.voiceProbability ?? 0;
  }

  /** Loads RNNoise and makes this call's denoiser. */
  override async start(_s: ProcessorSetup, _p: StartParams, link: Link): Promise<void> {
    try {
      this.#dn = await RnnoiseDenoiser.create({ module: this.#module });
    } catch (err) {
      link.pushError(`noise filter off: ${errorMessage(err)}`, false);
    }
  }

  /** Denoises InputAudio when enabled; handles `UpdateSettings` for `filter`. */
  override processFrame(frame: Frame, direction: Direction, link: Link): void {
    if (direction === "downstream") {
      if (frame.kind === "InputAudio" && this.#enabled && this.#dn !== undefined) {
        const audio = this.#denoise(frame.audio);
        if (audio === undefined) return link.push(frame, direction);
        if (audio.pcm.length === 0) return;
        const out = cloneFrame(frame) as FrameOf<"InputAudio">;
        out.audio = audio;
        return link.push(out, direction);
      }
      if (
        frame.kind === "UpdateSettings" && (frame.target === "filter" || frame.target === "all")
      ) {
        const on = frame.settings.enabled;
        if (typeof on === "boolean" && on !== this.#enabled) {
          this.#enabled = on;
          // A fresh start after a pause: no stale samples from before it.
          this.#dn?.reset();
          this.#up?.reset();
          this.#down?.reset();
        }
      }
    }
    link.push(frame, direction);
  }

  /** Frees the denoiser. */
  override stop(_reason: StopReason): void {
    this.#dn?.destroy();
    this.#dn = undefined;
  }

  /** Denoised audio at the frame's own rate; undefined for audio it does not handle. */
  #denoise(audio: AudioFrame): AudioFrame | undefined {
    if (audio.numChannels !== 1) return undefined;
    const rate = audio.sampleRate;
    if (rate === RNNOISE_RATE) {
      return { pcm: this.#dn!.process(audio.pcm), sampleRate: rate, numChannels: 1 };
    }
    if (this.#up?.inRate !== rate) {
      this.#up = new Resampler(rate, RNNOISE_RATE);
      this.#down = new Resampler(RNNOISE_RATE, rate);
    }
    const clean = this.#dn!.process(this.#up.process(audio.pcm));
    return { pcm: this.#down!.process(clean), sampleRate: rate, numChannels: 1 };
  }
}
