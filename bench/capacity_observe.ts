/**
 * What observing a server costs it: the same capacity point (N Twilio calls of echoed audio,
 * bench/capacity_point.ts) with the server unobserved, and observed as in production (traces
 * exported over OTLP with `OTEL_DENO=true`, `/metrics` scraped every second), in alternating
 * order over several rounds, compared as server CPU time per echoed frame. Metrics are always
 * collected (server/server_metrics.ts); "off" means nobody scrapes them.
 *
 * ```sh
 * deno task bench --only observe --quick
 * ```
 * @module
 */

import { writeBenchConfig } from "./capacity_child.ts";
import { type CapacityPoint, measurePoint } from "./capacity_point.ts";
import { type MachineInfo, machineInfo } from "./capacity_stats.ts";

/** Options of {@link runObserveBench}. */
export interface ObserveOptions {
  /** Concurrent calls per point (default 100). */
  calls?: number;
  /** Seconds of audio per point (default 10). */
  durationS?: number;
  /** Off/on pairs, the order alternating (default 3). */
  rounds?: number;
  scratchDir?: string;
  log?: (line: string) => void;
}

/** The comparison. */
export interface ObserveResult {
  date: string;
  machine: MachineInfo;
  deno: typeof Deno.version;
  calls: number;
  duration_s: number;
  /** Server CPU microseconds per echoed frame, each run, in run order. */
  off_us_per_frame: number[];
  on_us_per_frame: number[];
  /** Medians, and on / off. */
  off_median: number;
  on_median: number;
  ratio: number;
  /** End-to-end p99 latency (ms) of each run. */
  off_p99_ms: number[];
  on_p99_ms: number[];
  points: CapacityPoint[];
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Run the comparison; writes nothing. */
export async function runObserveBench(opts: ObserveOptions = {}): Promise<ObserveResult> {
  const log = opts.log ?? ((l: string) => console.error(l));
  const calls = opts.calls ?? 100;
  const durationS = opts.durationS ?? 10;
  const rounds = opts.rounds ?? 3;
  const configPath = await writeBenchConfig(opts.scratchDir ?? ".tmp/capacity", calls * 4);
  const off: CapacityPoint[] = [];
  const on: CapacityPoint[] = [];
  const points: CapacityPoint[] = [];
  for (let r = 0; r < rounds; r++) {
    // Alternate which goes first, so a drift in the machine's load hits both alike.
    const order = r % 2 === 0 ? [false, true] : [true, false];
    for (const observe of order) {
      log(`observe: round ${r + 1}/${rounds}, ${observe ? "observed" : "unobserved"}...`);
      const p = await measurePoint({ calls, workers: 1, durationS, configPath, observe, log });
      (observe ? on : off).push(p);
      points.push(p);
      log(
        `  ${p.server.cpu_us_per_frame} us/frame, server cpu ${p.server.cpu_percent}%, ` +
          `p99 ${p.latency_ms.p99} ms, lost ${p.frames_lost}`,
      );
    }
  }
  const us = (ps: CapacityPoint[]) => ps.map((p) => p.server.cpu_us_per_frame ?? NaN);
  const offMedian = median(us(off));
  const onMedian = median(us(on));
  return {
    date: new Date().toISOString(),
    machine: machineInfo(),
    deno: Deno.version,
    calls,
    duration_s: durationS,
    off_us_per_frame: us(off),
    on_us_per_frame: us(on),
    off_median: offMedian,
    on_median: onMedian,
    ratio: Math.round((onMedian / offMedian) * 1000) / 1000,
    off_p99_ms: off.map((p) => p.latency_ms.p99),
    on_p99_ms: on.map((p) => p.latency_ms.p99),
    points,
  };
}
