/**
 * A rate-limited {@link Logger} for floods: the first record of a message in an interval is
 * logged at once; the rest of that interval are counted and said in one line when it ends
 * (`answer webhook refused (1999 more in the last 10 s)`). While the flood goes on, that is
 * one line per interval; once it stops, the next record is logged at once again.
 *
 * Records are grouped by level and message (keep variable parts in the fields); the summary
 * carries the fields of the last record counted, plus `suppressed` and `intervalSeconds`.
 *
 * @example
 * ```ts
 * declare const log: Parameters<typeof rateLimitedLogger>[0];
 * const refusals = rateLimitedLogger(log, { intervalMs: 10_000 });
 * refusals.warn("answer webhook refused", { carrier: "twilio" });
 * // at shutdown: say what is still counted
 * refusals.close();
 * ```
 * @module
 */

import type { Logger, LogLevel } from "./log.ts";

/** Options of {@link rateLimitedLogger}. */
export interface RateLimitOptions {
  /** Length of an interval in ms (default 10000). */
  intervalMs?: number;
  /** Monotonic clock in ms (default `performance.now`). */
  now?: () => number;
}

/** A {@link Logger} that limits each message to one line (plus a count) per interval. */
export interface RateLimitedLogger extends Logger {
  /** Say the counts still pending and stop the timers (the logger stays usable). */
  close(): void;
}

type Level = Exclude<LogLevel, "silent">;

interface Window {
  level: Level;
  message: string;
  startedAt: number;
  until: number;
  suppressed: number;
  fields: Record<string, unknown> | undefined;
  timer: ReturnType<typeof setTimeout> | undefined;
}

/** Wrap `logger` so that a flood of one message costs one line per interval. */
export function rateLimitedLogger(
  logger: Logger,
  options: RateLimitOptions = {},
): RateLimitedLogger {
  const intervalMs = options.intervalMs ?? 10_000;
  const now = options.now ?? (() => performance.now());
  const windows = new Map<string, Window>();

  const flush = (w: Window) => {
    if (w.timer !== undefined) clearTimeout(w.timer);
    w.timer = undefined;
    if (w.suppressed === 0) return;
    const t = now();
    const seconds = Math.max(0.1, Math.round((t - w.startedAt) / 100) / 10);
    logger[w.level](`${w.message} (${w.suppressed} more in the last ${seconds} s)`, {
      ...w.fields,
      suppressed: w.suppressed,
      intervalSeconds: seconds,
    });
    // The flood may go on: the next interval starts now and is counted, not logged.
    w.startedAt = t;
    w.until = t + intervalMs;
    w.suppressed = 0;
    w.fields = undefined;
  };

  const record = (level: Level, message: string, fields?: Record<string, unknown>) => {
    const key = `${level}\u0000${message}`;
    const t = now();
    let w = windows.get(key);
    // A count still pending from the last interval is said first (and opens the next one).
    if (w !== undefined && t >= w.until) flush(w);
    if (w === undefined || t >= w.until) {
      w = {
        level,
        message,
        startedAt: t,
        until: t + intervalMs,
        suppressed: 0,
        fields: undefined,
        timer: undefined,
      };
      windows.set(key, w);
      logger[level](message, fields);
      return;
    }
    const open = w;
    open.suppressed++;
    open.fields = fields;
    if (open.timer === undefined) {
      open.timer = setTimeout(() => flush(open), Math.max(0, open.until - t));
      // A count waiting to be said must not keep the process (or a test) alive.
      Deno.unrefTimer(open.timer);
    }
  };

  return {
    debug: (m, f) => record("debug", m, f),
    info: (m, f) => record("info", m, f),
    warn: (m, f) => record("warn", m, f),
    error: (m, f) => record("error", m, f),
    close() {
      for (const w of windows.values()) flush(w);
      windows.clear();
    },
  };
}
