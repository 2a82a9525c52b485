/**
 * Repeated capacity points (`bench/capacity.ts --repeat N`): each call count is measured N
 * times, the agent and the bare-echo floor back to back in every round and the rounds one after
 * the other, so a disturbance of the shared machine lands on both sides of a ratio. Reported per
 * call count: the median and the spread (min, max, every value) of the end-to-end and server
 * latencies, of the server CPU per frame, and of the agent / floor CPU ratio of each round, with
 * the machine's load average around every run (what else was running).
 * @module
 */

import { type CapacityPoint, measurePoint, type PointOptions } from "./capacity_point.ts";

/** The median of a set of values and how far they spread. */
export interface Spread {
  median: number;
  min: number;
  max: number;
  values: number[];
}

/** One call count, N rounds. */
export interface RepeatedPoint {
  calls: number;
  rounds: number;
  /** Rounds in which the agent's point was healthy. */
  healthy_rounds: number;
  agent: {
    e2e_p50_ms: Spread;
    e2e_p99_ms: Spread;
    e2e_p999_ms: Spread;
    /** Carrier message in -> the reply audio it caused sent, in the server. */
    server_p50_ms: Spread;
    server_p99_ms: Spread;
    server_p999_ms: Spread;
    cpu_us_per_frame: Spread;
    cpu_percent: Spread;
    frames_lost: Spread;
  };
  floor?: {
    e2e_p50_ms: Spread;
    e2e_p99_ms: Spread;
    e2e_p999_ms: Spread;
    cpu_us_per_frame: Spread;
    cpu_percent: Spread;
  };
  /** Agent CPU per frame over the floor's, of the same round. */
  cpu_ratio?: Spread;
  /** 1-minute load average of the machine at the start of each run (agent and floor). */
  load_average: Spread;
}

/** The spread of `xs` (NaN when empty); values rounded to 3 decimals. */
export function spread(xs: readonly number[]): Spread {
  const values = xs.filter((x) => Number.isFinite(x)).map((x) => Math.round(x * 1000) / 1000);
  const sorted = [...values].sort((a, b) => a - b);
  const n = sorted.length;
  const median = n === 0
    ? NaN
    : n % 2 === 1
    ? sorted[(n - 1) / 2]
    : Math.round(((sorted[n / 2 - 1] + sorted[n / 2]) / 2) * 1000) / 1000;
  return { median, min: sorted[0] ?? NaN, max: sorted[n - 1] ?? NaN, values };
}

/** The machine's 1-minute load average, or NaN without `--allow-sys=loadavg`. */
function loadAverage(): number {
  try {
    return Deno.loadavg()[0];
  } catch {
    return NaN;
  }
}

/** Options of {@link runRepeated}: what every point shares, less the per-point fields. */
export type RepeatOptions = Omit<PointOptions, "calls" | "workers" | "floor"> & {
  calls: readonly number[];
  rounds: number;
  floor: boolean;
  describe: (p: CapacityPoint) => string;
};

/** Measure every call count `rounds` times (agent, then floor); returns every run and the rows. */
export async function runRepeated(o: RepeatOptions): Promise<{
  points: CapacityPoint[];
  floor: CapacityPoint[];
  repeated: RepeatedPoint[];
}> {
  const log = o.log ?? (() => {});
  const points: CapacityPoint[] = [];
  const floor: CapacityPoint[] = [];
  const loads = new Map<number, number[]>();
  const { calls, rounds, describe, floor: withFloor, ...common } = o;
  for (let r = 1; r <= rounds; r++) {
    for (const n of calls) {
      const load = loads.get(n) ?? [];
      loads.set(n, load);
      log(`capacity: round ${r}/${rounds}, ${n} calls, agent on one worker thread...`);
      load.push(loadAverage());
      const p = await measurePoint({ ...common, calls: n, workers: 1 });
      points.push(p);
      log(describe(p));
      if (withFloor) {
        log(`capacity: round ${r}/${rounds}, ${n} calls, floor (bare echo)...`);
        load.push(loadAverage());
        const f = await measurePoint({ ...common, calls: n, workers: 1, floor: true });
        floor.push(f);
        log(describe(f));
      }
    }
  }
  const repeated = calls.map((n) => summarize(n, points, floor, loads.get(n) ?? []));
  return { points, floor, repeated };
}

function summarize(
  n: number,
  points: readonly CapacityPoint[],
  floor: readonly CapacityPoint[],
  loads: readonly number[],
): RepeatedPoint {
  const a = points.filter((p) => p.calls === n);
  const f = floor.filter((p) => p.calls === n);
  const of = (ps: readonly CapacityPoint[], pick: (p: CapacityPoint) => number) =>
    spread(ps.map(pick));
  const server = (p: CapacityPoint, k: "p50" | "p99" | "p999") =>
    Math.max(...p.server_split.map((t) => t.server_ms[k]));
  const row: RepeatedPoint = {
    calls: n,
    rounds: a.length,
    healthy_rounds: a.filter((p) => p.healthy).length,
    agent: {
      e2e_p50_ms: of(a, (p) => p.latency_ms.p50),
      e2e_p99_ms: of(a, (p) => p.latency_ms.p99),
      e2e_p999_ms: of(a, (p) => p.latency_ms.p999),
      server_p50_ms: of(a, (p) => server(p, "p50")),
      server_p99_ms: of(a, (p) => server(p, "p99")),
      server_p999_ms: of(a, (p) => server(p, "p999")),
      cpu_us_per_frame: of(a, (p) => p.server.cpu_us_per_frame ?? NaN),
      cpu_percent: of(a, (p) => p.server.cpu_percent),
      frames_lost: of(a, (p) => p.frames_lost),
    },
    load_average: spread(loads),
  };
  if (f.length > 0) {
    row.floor = {
      e2e_p50_ms: of(f, (p) => p.latency_ms.p50),
      e2e_p99_ms: of(f, (p) => p.latency_ms.p99),
      e2e_p999_ms: of(f, (p) => p.latency_ms.p999),
      cpu_us_per_frame: of(f, (p) => p.server.cpu_us_per_frame ?? NaN),
      cpu_percent: of(f, (p) => p.server.cpu_percent),
    };
    row.cpu_ratio = spread(
      a.map((p, i) => (p.server.cpu_us_per_frame ?? NaN) / (f[i]?.server.cpu_us_per_frame ?? NaN)),
    );
  }
  return row;
}
