/**
 * The voice-activity state machine shared by the VAD analyzers, plus the volume measure they
 * gate on.
 *
 * States: `quiet` -> (speech) -> `starting` -> (speech for `startSecs`) -> `speaking` ->
 * (no speech) -> `stopping` -> (no speech for `stopSecs`) -> `quiet`. Speech while `stopping`
 * goes straight back to `speaking`; silence while `starting` goes straight back to `quiet`.
 * Time is counted from the audio itself (whole microseconds, so sums of frame lengths do not
 * drift), not from calls, so any frame size works.
 *
 * @example
 * ```ts
 * import { VadStateMachine } from "@flowcat/flowcat/audio";
 * const sm = new VadStateMachine({ confidence: 0.7, startSecs: 0.2, stopSecs: 0.8, minVolume: 0.6 });
 * sm.update(true, 0.02); // "starting"
 * ```
 * @module
 */

import { DEFAULT_VAD_PARAMS, type VadParams, type VadState } from "../frames.ts";
import { FlowcatError } from "../errors.ts";

/** Level (dBFS RMS) that maps to volume 0. */
export const VOLUME_FLOOR_DBFS: number = -60;
/** Level (dBFS RMS) that maps to volume 1. */
export const VOLUME_CEIL_DBFS: number = -20;

/**
 * Normalised volume 0..1 of int16 samples: RMS level mapped linearly from
 * {@link VOLUME_FLOOR_DBFS} (0) to {@link VOLUME_CEIL_DBFS} (1), clamped. With the default
 * `minVolume` 0.6 the speech gate sits at -36 dBFS; typical telephone speech is -20 to -30.
 */
export function volumeOf(pcm: Int16Array): number {
  if (pcm.length === 0) return 0;
  let acc = 0;
  for (let i = 0; i < pcm.length; i++) acc += pcm[i] * pcm[i];
  return volumeOfMeanSquare(acc / pcm.length);
}

/** {@link volumeOf} from a mean square in int16 units. */
export function volumeOfMeanSquare(meanSquare: number): number {
  if (!(meanSquare > 0)) return 0;
  const db = 10 * Math.log10(meanSquare / (32768 * 32768));
  const v = (db - VOLUME_FLOOR_DBFS) / (VOLUME_CEIL_DBFS - VOLUME_FLOOR_DBFS);
  return Math.max(0, Math.min(1, v));
}

/** Check VadParams ranges; throws a {@link FlowcatError} (`config`). */
export function validateVadParams(p: VadParams): VadParams {
  const ok = p.confidence >= 0 && p.confidence <= 1 && p.startSecs >= 0 && p.stopSecs >= 0 &&
    p.minVolume >= 0 && p.minVolume <= 1;
  if (!ok) throw new FlowcatError("config", `vad: params out of range ${JSON.stringify(p)}`);
  return { ...p };
}

/** Start/stop hysteresis over speech / no-speech decisions. */
export class VadStateMachine {
  #params: VadParams;
  #state: VadState = "quiet";
  #startUs = 0;
  #stopUs = 0;

  /** Make a machine in state `quiet`. */
  constructor(params: VadParams = DEFAULT_VAD_PARAMS) {
    this.#params = validateVadParams(params);
  }

  /** Current parameters (a copy). */
  get params(): VadParams {
    return { ...this.#params };
  }

  /** Current state. */
  get state(): VadState {
    return this.#state;
  }

  /** Replace the parameters; the state is kept. */
  setParams(params: VadParams): void {
    this.#params = validateVadParams(params);
  }

  /** Advance by `seconds` of audio that was (or was not) judged speech; returns the state. */
  update(speech: boolean, seconds: number): VadState {
    const us = Math.round(seconds * 1e6);
    const startUs = Math.round(this.#params.startSecs * 1e6);
    const stopUs = Math.round(this.#params.stopSecs * 1e6);
    switch (this.#state) {
      case "quiet":
        if (speech) {
          this.#state = "starting";
          this.#startUs = us;
        }
        break;
      case "starting":
        if (speech) this.#startUs += us;
        else this.#state = "quiet";
        break;
      case "speaking":
        if (!speech) {
          this.#state = "stopping";
          this.#stopUs = us;
        }
        break;
      case "stopping":
        if (speech) this.#state = "speaking";
        else this.#stopUs += us;
        break;
    }
    if (this.#state === "starting" && this.#startUs >= startUs) this.#state = "speaking";
    if (this.#state === "stopping" && this.#stopUs >= stopUs) this.#state = "quiet";
    return this.#state;
  }

  /** Back to `quiet`. */
  reset(): void {
    this.#state = "quiet";
    this.#startUs = 0;
    this.#stopUs = 0;
  }
}
