/**
 * Live-timer count for the capacity benchmark's server: wraps the global `setTimeout` and
 * `setInterval` (and their clears) so that, until {@link TimerCount.untrack}, every timer is
 * counted from creation until it fires or is cleared. Install it before the server's modules
 * make timers (the main thread: before importing them; a worker: its instrument module).
 * @module
 */

/** The timer functions as the wrapper sees them. */
export type TimerFn = (fn: (...a: unknown[]) => void, ms?: number, ...args: unknown[]) => number;

/** The counter {@link countTimers} installs. */
export interface TimerCount {
  /** Ids of the timers alive now (while tracking). */
  readonly live: Set<number>;
  /** Stop counting (and forget what was counted). */
  untrack(): void;
  /** The unwrapped `setTimeout`, for the benchmark's own waits. */
  readonly realSetTimeout: TimerFn;
}

/** Wrap this isolate's timer functions; call once. */
export function countTimers(): TimerCount {
  const live = new Set<number>();
  let tracking = true;
  const g = globalThis as unknown as Record<string, unknown>;
  const realSetTimeout = g.setTimeout as TimerFn;
  const realSetInterval = g.setInterval as TimerFn;
  const realClearTimeout = g.clearTimeout as (id?: number) => void;
  const realClearInterval = g.clearInterval as (id?: number) => void;
  g.setTimeout = (fn: (...a: unknown[]) => void, ms?: number, ...args: unknown[]): number => {
    if (!tracking) return realSetTimeout(fn, ms, ...args);
    const id: number = realSetTimeout(
      (...a: unknown[]) => {
        live.delete(id);
        fn(...a);
      },
      ms,
      ...args,
    );
    live.add(id);
    return id;
  };
  g.setInterval = (fn: (...a: unknown[]) => void, ms?: number, ...args: unknown[]): number => {
    const id = realSetInterval(fn, ms, ...args);
    if (tracking) live.add(id);
    return id;
  };
  g.clearTimeout = (id?: number) => {
    if (id !== undefined) live.delete(id);
    realClearTimeout(id);
  };
  g.clearInterval = (id?: number) => {
    if (id !== undefined) live.delete(id);
    realClearInterval(id);
  };
  return {
    live,
    untrack() {
      tracking = false;
      live.clear();
    },
    realSetTimeout,
  };
}
