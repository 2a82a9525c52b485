/**
 * Notices a carrier media stream that has gone silent without closing: carriers stream audio
 * all through a call (about 50 messages a second, silence included), so a leg that sends none
 * for a while has lost its peer. The check rides the isolate-wide deadline heap
 * (core/deadlines.ts): one deadline per call, re-armed once per limit, nothing per message (the
 * transport already reads the clock for every audio message).
 *
 * @example
 * ```ts
 * import { SilenceWatch } from "./media_silence.ts";
 * let lastAudioAt = performance.now();
 * const watch = new SilenceWatch(30_000, () => lastAudioAt, (ms) => console.log(`silent ${ms} ms`));
 * watch.stop(); // the call ended
 * ```
 * @module
 */

import { cancelDeadline, type Deadline, scheduleDeadline } from "../core/deadlines.ts";

/** Watches one leg: calls `onSilent` once when no audio came for `limitMs`. */
export class SilenceWatch {
  readonly #limitMs: number;
  readonly #lastHeardAt: () => number;
  readonly #onSilent: (silentMs: number) => void;
  #deadline: Deadline | undefined;

  /**
   * Start watching: `lastHeardAt` gives when the leg's last audio came (performance.now() ms),
   * `onSilent` hears how long it has been silent once that reaches `limitMs`.
   */
  constructor(limitMs: number, lastHeardAt: () => number, onSilent: (silentMs: number) => void) {
    this.#limitMs = limitMs;
    this.#lastHeardAt = lastHeardAt;
    this.#onSilent = onSilent;
    this.#deadline = scheduleDeadline(limitMs, this.#check);
  }

  /** Stop watching (the call ended); safe to call more than once. */
  stop(): void {
    cancelDeadline(this.#deadline);
    this.#deadline = undefined;
  }

  /** Due once a limit after the last audio seen at the previous check. */
  #check = (): void => {
    const silentMs = performance.now() - this.#lastHeardAt();
    if (silentMs >= this.#limitMs) {
      this.#deadline = undefined;
      this.#onSilent(silentMs);
    } else {
      this.#deadline = scheduleDeadline(this.#limitMs - silentMs, this.#check);
    }
  };
}
