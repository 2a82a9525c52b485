/**
 * One process-wide (per isolate) ticker that paces every playing {@link TransportOutput}: one
 * interval timer for all calls instead of a `setTimeout` per 20 ms chunk per call. It runs only
 * while some output is playing.
 *
 * @example
 * ```ts
 * import { joinPlayoutClock } from "./playout_clock.ts";
 * declare function sendWhatIsDue(now: number): boolean;
 * joinPlayoutClock((now) => sendWhatIsDue(now)); // return false when done playing
 * ```
 * @module
 */

/** Tick period in milliseconds: well under a chunk, so a chunk is never sent late by more. */
export const PLAYOUT_TICK_MS = 10;

/** Called on every tick with `performance.now()`; returns false to leave the clock. */
export type PlayoutService = (now: number) => boolean;

const members = new Set<PlayoutService>();
let timer: ReturnType<typeof setInterval> | undefined;

function tick(): void {
  const now = performance.now();
  for (const m of members) {
    if (!m(now)) members.delete(m);
  }
  if (members.size === 0) stopTimer();
}

function stopTimer(): void {
  if (timer !== undefined) clearInterval(timer);
  timer = undefined;
}

/** Serve `service` on every tick until it returns false or {@link leavePlayoutClock}. */
export function joinPlayoutClock(service: PlayoutService): void {
  members.add(service);
  timer ??= setInterval(tick, PLAYOUT_TICK_MS);
}

/** Stop serving `service` (the timer stops with the last one). */
export function leavePlayoutClock(service: PlayoutService): void {
  members.delete(service);
  if (members.size === 0) stopTimer();
}

/** Outputs on the clock now (for tests and stats). */
export function playoutClockMembers(): number {
  return members.size;
}
