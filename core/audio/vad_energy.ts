/**
 * Energy voice-activity detector: no model, RMS level with smoothing and hysteresis.
 *
 * Each frame's RMS level becomes a volume 0..1 ({@link volumeOf}: -60 dBFS -> 0, -20 dBFS -> 1),
 * smoothed exponentially with time constant `smoothingSecs`. A frame counts as speech when the
 * smoothed volume reaches `minVolume`, or, once speaking, stays above `minVolume` minus
 * `releaseMargin` (level hysteresis). {@link VadStateMachine} then applies `startSecs` and
 * `stopSecs` (time hysteresis). `confidence` is not used: an energy detector has no model
 * probability. It cannot tell speech from other loud sound; use Silero for that.
 *
 * @example
 * ```ts
 * import { EnergyVad } from "@flowcat/flowcat/audio";
 * import type { FrameOf } from "@flowcat/flowcat";
 * declare const frame: FrameOf<"InputAudio">;
 * const vad = new EnergyVad({ sampleRate: 16000 });
 * const state = vad.analyze(frame.audio); // "quiet" | "starting" | "speaking" | "stopping"
 * ```
 * @module
 */

import { type AudioFrame, DEFAULT_VAD_PARAMS, type VadParams, type VadState } from "../frames.ts";
import type { VadAnalyzer } from "../seams.ts";
import { FlowcatError } from "../errors.ts";
import { VadStateMachine, volumeOfMeanSquare } from "./vad_state.ts";

/** Options of an {@link EnergyVad}. */
export interface EnergyVadOptions {
  /** Rate reported by `sampleRate()` (default 16000); frames at any rate are analysed. */
  sampleRate?: number;
  /** Start/stop parameters (default {@link DEFAULT_VAD_PARAMS}). */
  params?: VadParams;
  /** Time constant of the volume smoothing in seconds (default 0.05). */
  smoothingSecs?: number;
  /** Volume hysteresis: once speaking, speech continues down to minVolume minus this (0.1). */
  releaseMargin?: number;
  /**
   * Longest pause tolerated inside the start window (default 0: contiguous; see
   * `VadStateOptions`). The 50 ms level smoothing already bridges most short dips.
   */
  startGapSecs?: number;
}

/** Energy-based {@link VadAnalyzer}; synchronous, allocation-free per frame. */
export class EnergyVad implements VadAnalyzer {
  readonly #rate: number;
  readonly #tau: number;
  readonly #margin: number;
  readonly #sm: VadStateMachine;
  #minVolume: number;
  #volume = 0;

  /** Make an energy VAD (see {@link EnergyVadOptions}). */
  constructor(opts: EnergyVadOptions = {}) {
    this.#rate = opts.sampleRate ?? 16000;
    this.#tau = opts.smoothingSecs ?? 0.05;
    this.#margin = opts.releaseMargin ?? 0.1;
    if (!(this.#rate > 0) || !(this.#tau >= 0) || !(this.#margin >= 0)) {
      throw new FlowcatError("config", "energy vad: sampleRate, smoothingSecs, releaseMargin");
    }
    this.#sm = new VadStateMachine(opts.params ?? DEFAULT_VAD_PARAMS, {
      ...(opts.startGapSecs !== undefined ? { startGapSecs: opts.startGapSecs } : {}),
    });
    this.#minVolume = (opts.params ?? DEFAULT_VAD_PARAMS).minVolume;
  }

  /** The rate this analyzer was configured for. */
  sampleRate(): number {
    return this.#rate;
  }

  /** Smoothed volume 0..1 after the last frame. */
  get volume(): number {
    return this.#volume;
  }

  /** Current state without analysing anything. */
  get state(): VadState {
    return this.#sm.state;
  }

  /** Analyse one frame (any rate; interleaved channels are treated as one stream). */
  analyze(audio: AudioFrame): VadState {
    const pcm = audio.pcm;
    if (pcm.length === 0) return this.#sm.state;
    const secs = pcm.length / audio.numChannels / audio.sampleRate;
    let acc = 0;
    for (let i = 0; i < pcm.length; i++) acc += pcm[i] * pcm[i];
    const v = volumeOfMeanSquare(acc / pcm.length);
    const alpha = this.#tau > 0 ? 1 - Math.exp(-secs / this.#tau) : 1;
    this.#volume += alpha * (v - this.#volume);
    const state = this.#sm.state;
    const min = this.#minVolume;
    const threshold = state === "speaking" || state === "stopping" ? min - this.#margin : min;
    return this.#sm.update(this.#volume >= threshold, secs);
  }

  /** Replace the start/stop parameters. */
  setParams(params: VadParams): void {
    this.#sm.setParams(params);
    this.#minVolume = params.minVolume;
  }

  /** Back to quiet with zero volume. */
  reset(): void {
    this.#sm.reset();
    this.#volume = 0;
  }
}
