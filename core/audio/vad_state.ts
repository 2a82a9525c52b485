/**
 * The voice-activity state machine shared by the VAD analyzers, plus the volume measure they
 * gate on.
 *
 * States: `quiet` -> (speech) -> `starting` -> (speech for `startSecs`) -> `speaking` ->
 * (no speech) -> `stopping` -> (no speech for `stopSecs`) -> `quiet`. Speech while `stopping`
 * goes straight back to `speaking`. While `starting`, a pause longer than `startGapSecs` goes
 * back to `quiet`; a shorter one (a syllable's dip, a block the echo suppressor held down) is
 * skipped: `startSecs` counts speech, not the pauses in it. Time is counted from the audio
 * itself (whole microseconds, so sums of frame lengths do not drift), not from calls, so any
 * frame size works; `startSecs` and `stopSecs` are reached at the nearest whole frame.
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

/** Options of a {@link VadStateMachine} beyond its {@link VadParams}. */
export interface VadStateOptions {
  /**
   * While `starting`, a pause up to this long (seconds of no-speech decisions in a row) does not
   * send the machine back to `quiet`; the pause does not count toward `startSecs` (default
   * {@link DEFAULT_START_GAP_SECS}; 0: any pause restarts the count).
   */
  startGapSecs?: number;
}

/**
 * Default {@link VadStateOptions.startGapSecs}: 0, contiguous speech (as pipecat counts its start
 * window). Silero's analyzer tolerates more ({@link SILERO_START_GAP_SECS}).
 */
export const DEFAULT_START_GAP_SECS: number = 0;

/**
 * {@link VadStateOptions.startGapSecs} of the Silero analyzer: 64 ms, two of its 32 ms windows,
 * shorter than the 100 ms of silence Silero's own segmenter needs to end speech. The model's
 * probability dips for a window inside a word, more so on a caller an echo suppressor has cut.
 */
export const SILERO_START_GAP_SECS: number = 0.064;

/**
 * Whether `count` µs reach a `target` µs window, to the nearest whole frame of `frame` µs (a tie
 * goes to the later frame): with Silero's 32 ms windows 0.2 s is six windows (192 ms), not seven
 * (224 ms); 20 ms frames land on multiples of 10 ms as before.
 */
function reached(count: number, target: number, frame: number): boolean {
  return count >= target || count + frame / 2 > target;
}

/** Start/stop hysteresis over speech / no-speech decisions. */
export class VadStateMachine {
  #params: VadParams;
  #state: VadState = "quiet";
  #startUs = 0;
  #stopUs = 0;
  /** No-speech time in a row while `starting`. */
  #gapUs = 0;
  readonly #startGapUs: number;

  /** Make a machine in state `quiet`. */
  constructor(params: VadParams = DEFAULT_VAD_PARAMS, opts: VadStateOptions = {}) {
    this.#params = validateVadParams(params);
    const gap = opts.startGapSecs ?? DEFAULT_START_GAP_SECS;
    if (!(gap >= 0 && gap <= 10)) {
      throw new FlowcatError("config", `vad: startGapSecs must be 0-10 s (got ${gap})`);
    }
    this.#startGapUs = Math.round(gap * 1e6);
  }

  /** The longest pause tolerated while starting, seconds. */
  get startGapSecs(): number {
    return this.#startGapUs / 1e6;
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
          this.#gapUs = 0;
        }
        break;
      case "starting":
        if (speech) {
          this.#startUs += us;
          this.#gapUs = 0;
        } else if ((this.#gapUs += us) > this.#startGapUs) this.#state = "quiet";
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
    if (this.#state === "starting" && reached(this.#startUs, startUs, us)) this.#state = "speaking";
    if (this.#state === "stopping" && reached(this.#stopUs, stopUs, us)) this.#state = "quiet";
    return this.#state;
  }

  /** Back to `quiet`. */
  reset(): void {
    this.#state = "quiet";
    this.#startUs = 0;
    this.#stopUs = 0;
    this.#gapUs = 0;
  }
}
