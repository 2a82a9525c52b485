/**
 * Repeated capacity points (`bench/capacity.ts --repeat N`): each call count is measured N
 * times, the agent and the bare-echo floor back to back in every round and the rounds one after
 * the other, so a disturbance of the shared machine lands on both sides of a ratio. Reported per
 * call count: the median and the spread (min, max, every value) of the end-to-end and server
 * latencies, of the server CPU per frame, and of the agent / floor CPU ratio of each round, with
 * the machine's load average around every run (what else was running). With a baseline (another
 * checkout of the project, `--baseline DIR`), its agent runs in every round too, in alternating
 * order with this one, so a change is measured against the version before it on the same
 * machine minutes apart, each against the same floor.
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

/** One agent's figures at one call count over the rounds. */
export interface AgentSpread {
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
}

/** One call count, N rounds. */
export interface RepeatedPoint {
  calls: number;
  rounds: number;
  /** Rounds in which the agent's point was healthy. */
  healthy_rounds: number;
  agent: AgentSpread;
  /** The baseline checkout's agent (`baseline` option), the same rounds. */
  baseline?: AgentSpread & { dir: string; healthy_rounds: number };
  /** Baseline CPU per frame over the floor's, of the same round. */
  baseline_cpu_ratio?: Spread;
  /** This agent's CPU per frame over the baseline's, of the same round (below 1: cheaper). */
  cpu_vs_baseline?: Spread;
  /**
   * `cpu_ratio` and `cpu_vs_baseline` over only the rounds in which both points lost no frame: a
   * server starved of the CPU (a loaded machine) works off a backlog, which its CPU per frame
   * counts too.
   */
  kept_up?: { cpu_ratio?: Spread; cpu_vs_baseline?: Spread };
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
  /** Another checkout of the project whose agent is measured in every round too. */
  baseline?: string;
  describe: (p: CapacityPoint) => string;
};

/** Measure every call count `rounds` times (agent, then floor); returns every run and the rows. */
export async function runRepeated(o: RepeatOptions): Promise<{
  points: CapacityPoint[];
  floor: CapacityPoint[];
  baseline: CapacityPoint[];
  repeated: RepeatedPoint[];
}> {
  const log = o.log ?? (() => {});
  const points: CapacityPoint[] = [];
  const floor: CapacityPoint[] = [];
  const baseline: CapacityPoint[] = [];
  const loads = new Map<number, number[]>();
  const { calls, rounds, describe, floor: withFloor, baseline: baseDir, ...common } = o;
  for (let r = 1; r <= rounds; r++) {
    for (const n of calls) {
      const load = loads.get(n) ?? [];
      loads.set(n, load);
      const agent = async () => {
        log(`capacity: round ${r}/${rounds}, ${n} calls, agent on one worker thread...`);
        load.push(loadAverage());
        const p = await measurePoint({ ...common, calls: n, workers: 1 });
        points.push(p);
        log(describe(p));
      };
      const base = async () => {
        log(`capacity: round ${r}/${rounds}, ${n} calls, baseline agent (${baseDir})...`);
        load.push(loadAverage());
        const p = await measurePoint({ ...common, calls: n, workers: 1, serverDir: baseDir });
        baseline.push(p);
        log(describe(p));
      };
      // Alternate which goes first, so a drift of the machine's load favours neither.
      if (baseDir === undefined) await agent();
      else if (r % 2 === 1) await agent().then(base);
      else await base().then(agent);
      if (withFloor) {
        log(`capacity: round ${r}/${rounds}, ${n} calls, floor (bare echo)...`);
        load.push(loadAverage());
        const f = await measurePoint({ ...common, calls: n, workers: 1, floor: true });
        floor.push(f);
        log(describe(f));
      }
    }
  }
  const repeated = calls.map((n) =>
    summarize(n, points, floor, loads.get(n) ?? [], baseDir, baseline)
  );
  return { points, floor, baseline, repeated };
}

const of = (ps: readonly CapacityPoint[], pick: (p: CapacityPoint) => number) =>
  spread(ps.map(pick));

/**
 * Per-round ratio of CPU per frame, `a` over `b` (rounds matched by order); with `keptUp`, only
 * the rounds in which neither point lost a frame.
 */
const cpuRatio = (a: readonly CapacityPoint[], b: readonly CapacityPoint[], keptUp = false) =>
  spread(
    a.map((p, i) => {
      const q = b[i];
      if (keptUp && (p.frames_lost > 0 || q === undefined || q.frames_lost > 0)) return NaN;
      return (p.server.cpu_us_per_frame ?? NaN) / (q?.server.cpu_us_per_frame ?? NaN);
    }),
  );

function agentSpread(a: readonly CapacityPoint[]): AgentSpread {
  const server = (p: CapacityPoint, k: "p50" | "p99" | "p999") =>
    Math.max(...p.server_split.map((t) => t.server_ms[k]));
  return {
    e2e_p50_ms: of(a, (p) => p.latency_ms.p50),
    e2e_p99_ms: of(a, (p) => p.latency_ms.p99),
    e2e_p999_ms: of(a, (p) => p.latency_ms.p999),
    server_p50_ms: of(a, (p) => server(p, "p50")),
    server_p99_ms: of(a, (p) => server(p, "p99")),
    server_p999_ms: of(a, (p) => server(p, "p999")),
    cpu_us_per_frame: of(a, (p) => p.server.cpu_us_per_frame ?? NaN),
    cpu_percent: of(a, (p) => p.server.cpu_percent),
    frames_lost: of(a, (p) => p.frames_lost),
  };
}

function summarize(
  n: number,
  points: readonly CapacityPoint[],
  floor: readonly CapacityPoint[],
  loads: readonly number[],
  baseDir: string | undefined,
  baseline: readonly CapacityPoint[],
): RepeatedPoint {
  const a = points.filter((p) => p.calls === n);
  const f = floor.filter((p) => p.calls === n);
  const b = baseline.filter((p) => p.calls === n);
  const row: RepeatedPoint = {
    calls: n,
    rounds: a.length,
    healthy_rounds: a.filter((p) => p.healthy).length,
    agent: agentSpread(a),
    load_average: spread(loads),
  };
  if (baseDir !== undefined && b.length > 0) {
    row.baseline = {
      dir: baseDir,
      healthy_rounds: b.filter((p) => p.healthy).length,
      ...agentSpread(b),
    };
    row.cpu_vs_baseline = cpuRatio(a, b);
    row.kept_up = { cpu_vs_baseline: cpuRatio(a, b, true) };
    if (f.length > 0) row.baseline_cpu_ratio = cpuRatio(b, f);
  }
  if (f.length > 0) {
    row.floor = {
      e2e_p50_ms: of(f, (p) => p.latency_ms.p50),
      e2e_p99_ms: of(f, (p) => p.latency_ms.p99),
      e2e_p999_ms: of(f, (p) => p.latency_ms.p999),
      cpu_us_per_frame: of(f, (p) => p.server.cpu_us_per_frame ?? NaN),
      cpu_percent: of(f, (p) => p.server.cpu_percent),
    };
    row.cpu_ratio = cpuRatio(a, f);
    row.kept_up = { ...row.kept_up, cpu_ratio: cpuRatio(a, f, true) };
  }
  return row;
}
