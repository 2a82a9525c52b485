/**
 * One process-wide (per isolate) 20 ms clock that paces every RTP session's outbound packets:
 * one timer for all calls, rescheduled against absolute deadlines so it does not drift (a
 * `setInterval` slips by the timer's lateness every period). After a stall (the event loop was
 * busy) the next deadline restarts from now; each session then catches its timestamps up.
 *
 * @example
 * ```ts
 * import { joinRtpClock, leaveRtpClock } from "@flowcat/flowcat/sip";
 * declare function sendWhatIsDue(now: number): boolean;
 * const tick = (now: number) => sendWhatIsDue(now);
 * joinRtpClock(tick); // ... leaveRtpClock(tick) when the call ends
 * ```
 * @module
 */

/** The packet period: 20 ms of G.711 (`ptime:20`). */
export const RTP_TICK_MS = 20;

/** Called on every tick with `performance.now()`. */
export type RtpTick = (now: number) => void;

const members = new Set<RtpTick>();
let timer: ReturnType<typeof setTimeout> | undefined;
let deadline = 0;

function tick(): void {
  timer = undefined;
  const now = performance.now();
  for (const m of members) m(now);
  if (members.size === 0) return;
  deadline += RTP_TICK_MS;
  // More than a period late: the loop stalled; start over from now rather than fire a burst.
  if (deadline < now - RTP_TICK_MS) deadline = now + RTP_TICK_MS;
  timer = setTimeout(tick, Math.max(0, deadline - performance.now()));
}

/** Call `member` every {@link RTP_TICK_MS} until {@link leaveRtpClock}. */
export function joinRtpClock(member: RtpTick): void {
  members.add(member);
  if (timer === undefined) {
    deadline = performance.now() + RTP_TICK_MS;
    timer = setTimeout(tick, RTP_TICK_MS);
  }
}

/** Stop calling `member`; the timer stops with the last one. */
export function leaveRtpClock(member: RtpTick): void {
  members.delete(member);
  if (members.size === 0 && timer !== undefined) {
    clearTimeout(timer);
    timer = undefined;
  }
}

/** Sessions on the clock now (for tests and stats). */
export function rtpClockMembers(): number {
  return members.size;
}
