/**
 * Before the echo canceller's filter has converged, its residual cannot yet tell the caller's voice
 * from the echo of the agent's; this tells them apart by what the filter has heard so far.
 *
 * - **Explained**: the filter already removes part of the microphone (1 dB, smoothed): there is
 *   an echo, and it is being learnt.
 * - **Unexplained**: the filter has heard the microphone over the agent's voice for a while
 *   (0.4 s) and removes none of it (under 0.5 dB): that is the caller, not an echo. On a leg
 *   with no echo at all (a handset that does not leak), that is everything the caller says.
 * - **No echo (yet)**: a loud block of the agent's voice, then a silent microphone over the whole
 *   span in which its echo would have begun: the next sound on the microphone is taken as the
 *   caller at once, unless the filter finds it explained.
 * @module
 */

/** Smoothed microphone to residual energy that shows the filter has found an echo (1 dB). */
const EXPLAINED = 1.26;
/** Below this (0.5 dB), once the filter has heard enough, it has found no echo. */
const UNEXPLAINED = 1.12;
/** Mean square of a reference sample whose echo would be audible (about -35 dBFS). */
const LOUD_FAR = 339_000;

/** What the evidence says of one block. */
export interface EchoEvidenceVerdict {
  /** The filter removes part of the microphone: echo is present. */
  explained: boolean;
  /** The microphone is the caller: the filter has found no echo in it. */
  unexplained: boolean;
  /** No echo has been found on this leg: its microphone was silent after loud reference, or
   * the filter has heard it long enough and explains none of it. */
  noEcho: boolean;
}

/** Per-call evidence, block by block, of whether the microphone holds an echo. */
export class EchoEvidence {
  readonly #heardBlocks: number;
  readonly #delayBlocks: number;
  readonly #verdict: EchoEvidenceVerdict = { explained: false, unexplained: false, noEcho: false };
  #xm = 0;
  #xe = 0;
  #heard = 0;
  #blocks = 0;
  #loudFarAt = -1;
  #noEcho = false;

  /**
   * Evidence over blocks of `block` samples at `rate`; an echo begins within `maxDelayMs` of the
   * reference that caused it.
   */
  constructor(block: number, rate: number, maxDelayMs: number) {
    this.#heardBlocks = Math.round((0.4 * rate) / block);
    this.#delayBlocks = Math.ceil((maxDelayMs * rate) / 1000 / block) + 3;
  }

  /**
   * One block: the microphone's and the residual's energy, the reference's mean square, whether
   * the agent spoke within the echo window, and the energy under which the microphone is silent.
   * The verdict object is reused from block to block.
   */
  update(
    mic: number,
    error: number,
    farMeanSquare: number,
    farRecent: boolean,
    silent: number,
  ): EchoEvidenceVerdict {
    const v = this.#verdict;
    v.explained = v.unexplained = false;
    if (farRecent && mic > silent) {
      this.#xm = 0.9 * this.#xm + 0.1 * mic;
      this.#xe = 0.9 * this.#xe + 0.1 * error;
      v.explained = this.#xm > EXPLAINED * this.#xe;
      if (v.explained) this.#noEcho = false;
      v.unexplained = this.#xm < UNEXPLAINED * this.#xe &&
        (++this.#heard >= this.#heardBlocks || this.#noEcho);
    }
    if (mic > silent) this.#loudFarAt = -1;
    else if (farMeanSquare > LOUD_FAR && this.#loudFarAt < 0) this.#loudFarAt = this.#blocks;
    if (this.#loudFarAt >= 0 && this.#blocks - this.#loudFarAt >= this.#delayBlocks) {
      this.#noEcho = true;
    }
    this.#blocks++;
    v.noEcho = this.#noEcho || v.unexplained;
    return v;
  }

  /** Forget everything heard (a new echo path). */
  reset(): void {
    this.#xm = this.#xe = this.#heard = 0;
    this.#loudFarAt = -1;
    this.#noEcho = false;
  }
}
