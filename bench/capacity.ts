/**
 * Capacity benchmark: N concurrent Twilio-framed calls through the whole speech-to-speech
 * pipeline of a server child (transport, realtime processor on the local echo model in frame
 * mode, transport out), swept over N. Per point: per-frame echo latency p50 / p99 / p99.9,
 * frames lost, server CPU and RSS, heap and timers per idle session. Method and caveats:
 * docs/performance.md ("Capacity"). Usage: `--help`; the flags below.
 *
 * Options: `--calls` (comma list), `--duration` (s per point), `--workers` (comma list of
 * worker-thread counts of the one server process, as `deno task start --workers`), `--no-trace`
 * (no server-side latency split), `--no-up` (not past the list while healthy), `--profile N|auto`
 * (one extra point at N calls, or the largest carried without loss, with a CPU profile), `--floor`
 * (the same loads against a bare echo with no pipeline, bench/capacity_floor.ts: the latency that
 * is not Flowcat's), `--out` (JSON path; the SVG goes beside it), `--no-write`; `--replot
 * file.json` redraws the SVG of a saved result; `--repeat N` (each call count N times on one
 * thread, agent and floor interleaved, median and spread in `repeated`: bench/capacity_repeat.ts),
 * `--baseline DIR` (with `--repeat`: the agent of another checkout, e.g. `git archive` of the
 * commit before, measured in every round too; DIR needs its own `node_modules`, a link to this
 * one's will do, and the bench writes its config there, so keep DIR under `.tmp/`), `--contention
 * text` (what else ran on the machine, recorded with its load average), `--echo-rates
 * leg|16000/24000` (the echo model's rates: `leg`, the default, runs the calls at 8 kHz with no
 * resampler; `16000/24000` is a hosted model's 8 -> 16 -> 24 -> 8 kHz chain), `--echo-cancel
 * on|off` (the echo canceller on every call; default off: the echo model speaks every frame, so
 * `on` measures the canceller's worst case, while the product turns it on for telephone legs).
 * @module
 */

import { parseArgs } from "node:util";
import {
  type BenchEchoCancel,
  benchEchoCancel,
  type BenchEchoRates,
  benchEchoRates,
  writeBenchConfig,
} from "./capacity_child.ts";
import { type CapacityPoint, describe, measurePoint } from "./capacity_point.ts";
import { capacitySvg } from "./capacity_plot.ts";
import { type ProfileSummary, profileSummary } from "./capacity_profile.ts";
import { type MachineInfo, machineInfo } from "./capacity_stats.ts";
import { type RepeatedPoint, runRepeated } from "./capacity_repeat.ts";
import { CAPACITY_METHOD as METHOD, TASKS_PER_CALL } from "./capacity_method.ts";

/** Options of {@link runCapacityBench}. */
export interface CapacityOptions {
  /** Sweep points (concurrent calls). Default 10, 100, 500, 1000, 2000. */
  calls?: readonly number[];
  /** Seconds of audio per point. Default 10. */
  durationS?: number;
  /** Server process counts to sweep (one sweep each). Default [1]. */
  workers?: readonly number[];
  /** Keep going past the last point (x1.5) while healthy. Default true. */
  up?: boolean;
  /** Upper bound for `up`. Default 20000. */
  maxCalls?: number;
  /** A point is healthy when p99 is at most this (ms) and nothing is lost. Default 5. */
  p99LimitMs?: number;
  /** One extra profiled point at N calls ("auto": the most carried without a lost frame). */
  profileCalls?: number | "auto";
  /** Scratch directory (config, profiles). Default .tmp/capacity. */
  scratchDir?: string;
  rampMs?: number;
  warmupFrames?: number;
  /** Split server-side latency in the children (bench/capacity_trace.ts). Default true. */
  trace?: boolean;
  /** Calls of the 2 s warm-up run on each fresh server (default 100; 0: none). */
  warmupCalls?: number;
  /**
   * Also measure the latency floor (bench/capacity_floor.ts: a bare echo on one thread, no
   * pipeline) at every call count the one-thread sweep carried. Default false.
   */
  floor?: boolean;
  /**
   * Measure each call count this many times, agent and floor back to back in every round (one
   * worker thread, no sweep past the list); the result's `repeated` gives the median and spread.
   * Default 1 (the sweep).
   */
  repeat?: number;
  /** With `repeat`: another checkout whose agent is measured in every round too (A/B). */
  baseline?: string;
  /** What else ran on the machine meanwhile, in words (recorded in the result). */
  contention?: string;
  /** The echo model's rates (default `leg`: 8 kHz through, no resampler). */
  echoRates?: BenchEchoRates;
  /** The echo canceller on every call (default `off`). */
  echoCancel?: BenchEchoCancel;
  /** The command line recorded in the result. */
  command?: string;
  log?: (line: string) => void;
}

/** The benchmark's result (the JSON written to bench/results/capacity-<host>.json). */
export interface CapacityResult {
  command: string;
  date: string;
  machine: MachineInfo;
  deno: typeof Deno.version;
  method: Record<string, string>;
  /** The echo model's rates in the agent under test (`leg`: 8 kHz, no resampler). */
  echo_rates: BenchEchoRates;
  /** The echo canceller on every call, or off (`audio.echo_cancel` in the agent's config). */
  echo_cancel?: BenchEchoCancel;
  points: CapacityPoint[];
  /**
   * Per worker count: the first unhealthy point after the last healthy one (null when the
   * sweep ended healthy). The sweep stops after two unhealthy points in a row or a loss.
   */
  saturated_at: Record<string, number | null>;
  tasks_per_call: Record<string, unknown>;
  profile?: { calls: number; point: CapacityPoint; summary: ProfileSummary; file: string };
  /** The same load against a bare echo (`floor` option): what is not Flowcat's. */
  floor?: CapacityPoint[];
  /** With `baseline`: every run of the baseline checkout's agent. */
  baseline_points?: CapacityPoint[];
  /** With `repeat`: per call count, the median and spread over the rounds. */
  repeated?: RepeatedPoint[];
  /** What else ran on the machine meanwhile (`contention` option), and its load average. */
  contention?: { note?: string; load_average_start?: number[]; load_average_end?: number[] };
}

/** Default sweep. */
export const DEFAULT_CALLS: readonly number[] = [10, 100, 500, 1000, 2000];

function nextUp(n: number): number {
  const x = n * 1.5;
  const mag = 10 ** Math.floor(Math.log10(x));
  return Math.round(x / (mag / 2)) * (mag / 2);
}

/** Run the sweep (and the optional profile); returns the result, writes nothing. */
export async function runCapacityBench(opts: CapacityOptions = {}): Promise<CapacityResult> {
  const log = opts.log ?? ((l: string) => console.error(l));
  const scratch = opts.scratchDir ?? ".tmp/capacity";
  const durationS = opts.durationS ?? 10;
  const calls = opts.calls ?? DEFAULT_CALLS;
  const maxCalls = opts.maxCalls ?? 20000;
  const echoRates = opts.echoRates ?? "leg", echoCancel = opts.echoCancel ?? "off";
  const configPath = await writeBenchConfig(scratch, maxCalls * 2, echoRates, echoCancel);
  // A baseline's server child runs in its own directory and reads the same path there.
  const base = opts.baseline;
  if (base) await writeBenchConfig(`${base}/${scratch}`, maxCalls * 2, echoRates, echoCancel);
  const result: CapacityResult = {
    command: opts.command ?? "runCapacityBench",
    date: new Date().toISOString(),
    machine: machineInfo(),
    deno: Deno.version,
    method: METHOD,
    echo_rates: echoRates,
    echo_cancel: echoCancel,
    points: [],
    saturated_at: {},
    tasks_per_call: TASKS_PER_CALL,
  };
  const common = {
    durationS,
    configPath,
    log,
    ...(opts.rampMs !== undefined ? { rampMs: opts.rampMs } : {}),
    ...(opts.warmupFrames !== undefined ? { warmupFrames: opts.warmupFrames } : {}),
    ...(opts.warmupCalls !== undefined ? { warmupCalls: opts.warmupCalls } : {}),
    ...(opts.trace !== undefined ? { trace: opts.trace } : {}),
    ...(opts.p99LimitMs !== undefined ? { p99LimitMs: opts.p99LimitMs } : {}),
  };
  result.contention = {
    ...(opts.contention !== undefined ? { note: opts.contention } : {}),
    load_average_start: loadAverages(),
  };
  if ((opts.repeat ?? 1) > 1) {
    const r = await runRepeated({
      ...common,
      calls,
      rounds: opts.repeat!,
      floor: opts.floor === true,
      ...(opts.baseline !== undefined ? { baseline: await Deno.realPath(opts.baseline) } : {}),
      describe,
    });
    result.points = r.points;
    if (opts.floor) result.floor = r.floor;
    if (opts.baseline !== undefined) result.baseline_points = r.baseline;
    result.repeated = r.repeated;
    result.contention.load_average_end = loadAverages();
    return result;
  }
  for (const workers of opts.workers ?? [1]) {
    const pending = [...calls];
    let saturated: number | null = null;
    for (let i = 0; i < pending.length; i++) {
      const n = pending[i];
      log(`capacity: ${n} calls on ${workers} worker thread(s), ${durationS} s...`);
      const p = await measurePoint({ ...common, calls: n, workers });
      result.points.push(p);
      log(describe(p));
      if (!p.healthy) {
        saturated ??= n;
        // One unhealthy point may be noise on a shared machine: stop after two in a row.
        const prev = result.points.at(-2);
        if (i > 0 && prev !== undefined && prev.workers === workers && !prev.healthy) break;
        if (p.frames_lost > 0) break; // a backlog already: larger loads only lose more
        continue;
      }
      saturated = null;
      if (i === pending.length - 1 && opts.up !== false && nextUp(n) <= maxCalls) {
        pending.push(nextUp(n));
      }
    }
    result.saturated_at[String(workers)] = saturated;
  }
  // The one-thread loads carried without losing a frame: the floor's points and the profile's.
  const carried = result.points.filter((p) => p.workers === 1 && p.frames_lost === 0);
  if (opts.floor) {
    result.floor = [];
    for (const { calls: n } of carried) {
      log(`capacity: floor (bare echo, no pipeline), ${n} calls, ${durationS} s...`);
      const p = await measurePoint({ ...common, calls: n, workers: 1, floor: true });
      result.floor.push(p);
      log(describe(p));
    }
  }
  // "auto": the largest of them.
  const profileCalls = opts.profileCalls === "auto"
    ? Math.max(0, ...carried.map((p) => p.calls))
    : opts.profileCalls;
  if (profileCalls !== undefined && profileCalls > 0) {
    const dir = `${scratch}/prof-${Date.now()}`;
    log(`capacity: profiling ${profileCalls} calls (cpu profile in ${dir})...`);
    const point = await measurePoint({
      ...common,
      calls: profileCalls,
      workers: 1,
      trace: false,
      cpuProfDir: dir,
    });
    const file = [...Deno.readDirSync(dir)].find((e) => e.name.endsWith(".cpuprofile"));
    if (file === undefined) throw new Error(`no .cpuprofile written under ${dir}`);
    const path = `${dir}/${file.name}`;
    const summary = profileSummary(JSON.parse(await Deno.readTextFile(path)));
    log(describe(point));
    result.profile = { calls: profileCalls, point, summary, file: path };
  }
  return result;
}

/** Per call count, the run whose end-to-end p99 is the median of its rounds. */
function medianRuns(points: readonly CapacityPoint[]): CapacityPoint[] {
  const counts = [...new Set(points.map((p) => p.calls))];
  return counts.map((n) => {
    const runs = points.filter((p) => p.calls === n)
      .sort((a, b) => a.latency_ms.p99 - b.latency_ms.p99);
    return runs[(runs.length - 1) >> 1];
  });
}

/** The machine's load averages (1, 5, 15 min), or none without `--allow-sys=loadavg`. */
function loadAverages(): number[] | undefined {
  try {
    return Deno.loadavg();
  } catch {
    return undefined;
  }
}

/** Write the JSON and the SVG beside it; returns both paths. */
export async function writeCapacityResults(
  result: CapacityResult,
  jsonPath = `bench/results/capacity-${result.machine.host}.json`,
): Promise<{ json: string; svg: string }> {
  const svg = jsonPath.replace(/\.json$/, "") + ".svg";
  await Deno.writeTextFile(jsonPath, JSON.stringify(result, null, 2) + "\n");
  await Deno.writeTextFile(svg, plotOf(result));
  return { json: jsonPath, svg };
}

/** The SVG of a result: with repeats, each call count's median run (by end-to-end p99). */
function plotOf(r: CapacityResult): string {
  if (r.repeated === undefined) return capacitySvg(r.points, r.machine, r.floor);
  return capacitySvg(medianRuns(r.points), r.machine, r.floor && medianRuns(r.floor));
}

function numbers(s: string | undefined, fallback: readonly number[]): number[] {
  if (s === undefined) return [...fallback];
  const xs = s.split(",").map((x) => Number(x.trim()));
  if (xs.some((x) => !Number.isInteger(x) || x < 1)) throw new Error(`bad number list: ${s}`);
  return xs;
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      calls: { type: "string" },
      duration: { type: "string" },
      workers: { type: "string" },
      "no-up": { type: "boolean", default: false },
      "no-trace": { type: "boolean", default: false },
      floor: { type: "boolean", default: false },
      profile: { type: "string" },
      out: { type: "string" },
      "no-write": { type: "boolean", default: false },
      replot: { type: "string" },
      repeat: { type: "string" },
      contention: { type: "string" },
      baseline: { type: "string" },
      "echo-rates": { type: "string" },
      "echo-cancel": { type: "string" },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) {
    console.log(
      "Usage: deno run ... bench/capacity.ts [--calls 10,100,500] [--duration 10] " +
        "[--workers 1,2] [--no-trace] [--no-up] [--profile N|auto] [--floor] " +
        "[--repeat N [--baseline DIR]] [--contention 'what else ran'] " +
        "[--echo-rates leg|16000/24000] [--echo-cancel on|off] [--out file] [--no-write] " +
        "| --replot results.json",
    );
    Deno.exit(0);
  }
  if (values.replot !== undefined) {
    const saved: CapacityResult = JSON.parse(await Deno.readTextFile(values.replot));
    const svg = values.replot.replace(/\.json$/, "") + ".svg";
    await Deno.writeTextFile(svg, plotOf(saved));
    console.error(`capacity: wrote ${svg}`);
    Deno.exit(0);
  }
  const result = await runCapacityBench({
    echoRates: benchEchoRates(values["echo-rates"]),
    echoCancel: benchEchoCancel(values["echo-cancel"]),
    calls: numbers(values.calls, DEFAULT_CALLS),
    durationS: Number(values.duration ?? 10),
    workers: numbers(values.workers, [1]),
    up: !values["no-up"],
    trace: !values["no-trace"],
    floor: values.floor,
    ...(values.repeat !== undefined ? { repeat: Number(values.repeat) } : {}),
    ...(values.contention !== undefined ? { contention: values.contention } : {}),
    ...(values.baseline !== undefined ? { baseline: values.baseline } : {}),
    ...(values.profile !== undefined
      ? { profileCalls: values.profile === "auto" ? "auto" as const : Number(values.profile) }
      : {}),
    command: `deno run bench/capacity.ts ${Deno.args.join(" ")}`.trim(),
  });
  if (!values["no-write"]) {
    const paths = await writeCapacityResults(result, values.out);
    console.error(`capacity: wrote ${paths.json} and ${paths.svg}`);
  }
  console.log(JSON.stringify(result.points.map((p) => ({
    calls: p.calls,
    workers: p.workers,
    latency_ms: p.latency_ms,
    frames_lost: p.frames_lost,
    cpu: p.server.cpu_percent,
    healthy: p.healthy,
  }))));
}
