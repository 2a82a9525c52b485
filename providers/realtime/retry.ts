/**
 * Bounded retries with exponential backoff for realtime reconnects: the first try at once, then
 * `backoffMs`, `2 × backoffMs`, ... between tries; an abort stops waiting at once.
 * @module
 */

import { errorMessage } from "../../core/errors.ts";
import type { Logger } from "../../core/log.ts";

/** How {@link retryWithBackoff} tries. */
export interface RetryOptions {
  attempts: number;
  backoffMs: number;
  signal: AbortSignal;
  /** Logged per failed try as `<what> failed` with the attempt and error. */
  what: string;
  log: Logger;
}

/** What came of the tries: a value, the last error, or `aborted` (stop asked meanwhile). */
export type RetryOutcome<T> =
  | { ok: true; value: T }
  | { ok: false; error: unknown }
  | { ok: false; aborted: true };

/** Run `attempt(i)` until one resolves, at most `attempts` times. */
export async function retryWithBackoff<T>(
  o: RetryOptions,
  attempt: (i: number) => Promise<T>,
): Promise<RetryOutcome<T>> {
  let error: unknown;
  for (let i = 0; i < o.attempts; i++) {
    const delayMs = i === 0 ? 0 : o.backoffMs * 2 ** (i - 1);
    if (delayMs > 0 && !(await abortableDelay(delayMs, o.signal))) {
      return { ok: false, aborted: true };
    }
    if (o.signal.aborted) return { ok: false, aborted: true };
    try {
      return { ok: true, value: await attempt(i) };
    } catch (err) {
      error = err;
      o.log.warn(`${o.what} failed`, { attempt: i + 1, error: errorMessage(err) });
    }
  }
  return { ok: false, error };
}

/** Wait `ms`; resolves false at once when `signal` aborts (the timer is cleared). */
export function abortableDelay(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
