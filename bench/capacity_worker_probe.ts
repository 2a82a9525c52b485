/**
 * The capacity server's instrument for worker threads (`startWorkers({ instrument })`): imported
 * by each worker before it makes its server, it counts the worker's timers and, on request,
 * installs the latency split of bench/capacity_trace.ts there. The main thread asks through
 * `WorkerPool.probe(arg)`:
 *
 * - `trace-on <warm-up frames>`: install the split (once);
 * - `trace`: the samples so far, `{ pipeline, pacing }` in ms, and start afresh;
 * - `timers`: live timers now; `untrack`: stop counting them.
 * @module
 */

import { countTimers } from "./capacity_timers.ts";
import { installTrace, takeTrace } from "./capacity_trace.ts";

const timers = countTimers();
let traced = false;

/** Answer one request of the main thread (see the module doc). */
export function probe(arg: string): unknown {
  const [cmd, value] = arg.split(" ");
  switch (cmd) {
    case "trace-on":
      if (!traced) installTrace(Number(value));
      traced = true;
      return true;
    case "trace":
      return takeTrace();
    case "timers":
      return timers.live.size;
    case "untrack":
      timers.untrack();
      return true;
    default:
      return undefined;
  }
}
