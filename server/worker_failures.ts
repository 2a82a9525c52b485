/**
 * What a worker thread of `--workers N` does when an error escapes every handler in it (an
 * uncaught exception in a timer, an unhandled rejection): the same as a single-process server,
 * which reports the error and exits, except that the process is bigger than the worker. The
 * worker logs one `worker failed` line and sends a fatal error report (to the configured DSN)
 * naming the calls it was running, then tells the main thread, which stops it, counts it
 * (`flowcat_worker_failures_total`) and fails loudly: it drains the other workers and exits 1,
 * for the supervisor to restart the whole server. A worker in an unknown state is not kept
 * serving, and a half-working pool does not hide behind a healthy port.
 * @module
 */

import { errorMessage } from "../core/errors.ts";
import type { Logger } from "../core/log.ts";
import type { ErrorReporter } from "./error_reporting.ts";

/** What escaped, in which worker, and the calls it ended. */
export interface WorkerFailure {
  /** The worker's index. */
  index: number;
  /** `uncaught_error` or `unhandled_rejection`. */
  where: "uncaught_error" | "unhandled_rejection";
  /** The error's message (no stack). */
  message: string;
  /** Run ids of the calls the worker was running. */
  calls: number[];
}

/** The main thread's line for a failed worker (it then drains the others and exits 1). */
export function describeWorkerFailure(f: WorkerFailure): string {
  const calls = f.calls.length > 0 ? `, ending call(s) ${f.calls.join(", ")}` : "";
  return `worker ${f.index} failed (${f.where.replace("_", " ")}: ${f.message}${calls}); ` +
    "draining the other workers and exiting";
}

/** Options of {@link reportUncaughtInWorker}. */
export interface WorkerWatchOptions {
  /** The worker's index. */
  index: number;
  /** The worker's logger. */
  logger: Logger;
  /** Where fatal errors are reported, when reporting is on. */
  errors?: ErrorReporter;
  /** Run ids of the calls running now. */
  calls: () => number[];
  /** Tell the main thread (after the report was flushed, at most 2 s). */
  failed: (f: WorkerFailure) => void;
}

/**
 * From now on, the first error escaping every handler of this worker is logged, reported and
 * handed to `failed`; later ones are only logged (the worker is being stopped).
 */
export function reportUncaughtInWorker(o: WorkerWatchOptions): void {
  let first = true;
  const onEscape = async (err: unknown, where: WorkerFailure["where"]) => {
    const f: WorkerFailure = {
      index: o.index,
      where,
      message: errorMessage(err),
      calls: o.calls(),
    };
    o.logger.error("worker failed", {
      worker: o.index,
      where,
      error: f.message,
      calls: f.calls.join(","),
    });
    if (!first) return;
    first = false;
    if (o.errors !== undefined) {
      o.errors.unexpected(err, {
        where,
        worker: String(o.index),
        calls: f.calls.join(",") || "none",
      }, "fatal");
      await o.errors.flush(2000);
    }
    o.failed(f);
  };
  onEscapedError((err, where) => void onEscape(err, where));
}

/**
 * Call `handle` with every error that escapes every handler of this isolate (an exception thrown
 * from a callback, a rejection nobody handled) instead of Deno's default (print and exit).
 */
export function onEscapedError(
  handle: (err: unknown, where: WorkerFailure["where"]) => void,
): void {
  globalThis.addEventListener("error", (e) => {
    e.preventDefault();
    handle(e.error, "uncaught_error");
  });
  globalThis.addEventListener("unhandledrejection", (e) => {
    e.preventDefault();
    handle(e.reason, "unhandled_rejection");
  });
}
