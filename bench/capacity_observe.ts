/**
 * What observing a server costs it: the same capacity point (N Twilio calls of echoed audio,
 * bench/capacity_point.ts) with the server unobserved, and observed as in production (traces and
 * metrics exported over OTLP with `OTEL_DENO=true`, `/metrics` scraped every second), compared as
 * server CPU time per echoed frame. Metrics are always collected (server/server_metrics.ts); "off"
 * means nobody scrapes them and nothing is exported.
 *
 * On a machine others share, two identical runs differ by more than the cost looked for, and the
 * load drifts over minutes. So the runs are interleaved in pairs (off then on, on then off,
 * alternating), each pair gives one ratio on / off of runs a few seconds apart, and the figure is
 * the median of those ratios with their spread (quartiles, extremes): a drift moves both runs of
 * a pair, and one disturbed run moves one ratio, not the median.
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
  /** Off/on pairs, the order alternating (default 8). */
  rounds?: number;
  /** The command line, recorded in the result. */
  command?: string;
  scratchDir?: string;
  log?: (line: string) => void;
}

/** The spread of a sample: extremes and quartiles. */
export interface Spread {
  min: number;
  p25: number;
  median: number;
  p75: number;
  max: number;
}

/** The comparison. */
export interface ObserveResult {
  date: string;
  /** How it was run. */
  command?: string;
  machine: MachineInfo;
  deno: typeof Deno.version;
  calls: number;
  duration_s: number;
  /** Server CPU microseconds per echoed frame, each run, in run order. */
  off_us_per_frame: number[];
  on_us_per_frame: number[];
  /** Medians of each side, and their ratio on / off. */
  off_median: number;
  on_median: number;
  /** The figure: the median of the per-pair ratios on / off (see {@link pair_ratios}). */
  ratio: number;
  /** on / off of each pair of adjacent runs, in round order. */
  pair_ratios: number[];
  /** Spread of the per-pair ratios. */
  ratio_spread: Spread;
  /** True when the median per-pair ratio is at most 1.05 (observing costs within 5%). */
  within_5_percent: boolean;
  /** End-to-end p99 latency (ms) of each run. */
  off_p99_ms: number[];
  on_p99_ms: number[];
  points: CapacityPoint[];
}

/** The `q` quantile of `xs` (linear between ranks). */
function quantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const at = (s.length - 1) * q;
  const lo = Math.floor(at);
  return s[lo] + (s[Math.min(lo + 1, s.length - 1)] - s[lo]) * (at - lo);
}

function median(xs: readonly number[]): number {
  return quantile(xs, 0.5);
}

const r3 = (x: number) => Math.round(x * 1000) / 1000;

/** Extremes and quartiles of `xs`, three decimals. */
export function spreadOf(xs: readonly number[]): Spread {
  return {
    min: r3(quantile(xs, 0)),
    p25: r3(quantile(xs, 0.25)),
    median: r3(quantile(xs, 0.5)),
    p75: r3(quantile(xs, 0.75)),
    max: r3(quantile(xs, 1)),
  };
}

/** Run the comparison; writes nothing. */
export async function runObserveBench(opts: ObserveOptions = {}): Promise<ObserveResult> {
  const log = opts.log ?? ((l: string) => console.error(l));
  const calls = opts.calls ?? 100;
  const durationS = opts.durationS ?? 10;
  const rounds = opts.rounds ?? 8;
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
  const pairs = us(on).map((x, i) => r3(x / us(off)[i]));
  const spread = spreadOf(pairs);
  return {
    date: new Date().toISOString(),
    ...(opts.command !== undefined ? { command: opts.command } : {}),
    machine: machineInfo(),
    deno: Deno.version,
    calls,
    duration_s: durationS,
    off_us_per_frame: us(off),
    on_us_per_frame: us(on),
    off_median: offMedian,
    on_median: onMedian,
    ratio: spread.median,
    pair_ratios: pairs,
    ratio_spread: spread,
    within_5_percent: spread.median <= 1.05,
    off_p99_ms: off.map((p) => p.latency_ms.p99),
    on_p99_ms: on.map((p) => p.latency_ms.p99),
    points,
  };
}
