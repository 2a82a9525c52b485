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
 * resampler; `16000/24000` is a hosted model's 8 -> 16 -> 24 -> 8 kHz chain).
 * @module
 */

import { parseArgs } from "node:util";
import { type BenchEchoRates, benchEchoRates, writeBenchConfig } from "./capacity_child.ts";
import { type CapacityPoint, describe, measurePoint } from "./capacity_point.ts";
import { capacitySvg } from "./capacity_plot.ts";
import { type ProfileSummary, profileSummary } from "./capacity_profile.ts";
import { type MachineInfo, machineInfo } from "./capacity_stats.ts";
import { type RepeatedPoint, runRepeated } from "./capacity_repeat.ts";

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

const METHOD: Record<string, string> = {
  server: "one bench/capacity_server.ts child process: createAgentServer + Deno.serve as " +
    "server/main.ts, or for workers > 1 that many worker threads on one port (server/workers.ts, " +
    "as deno task start --workers N; each worker counts its timers and splits its own latency, " +
    "bench/capacity_worker_probe.ts); " +
    "echo model mode=frame tts=none rates=echo_rates (leg: 8 kHz, no resampler; 16000/24000: " +
    "8 -> 16 -> 24 -> 8 kHz; a baseline without the option runs 16/24), Twilio, no recording",
  calls: "each call: signed POST /telephony/answer/twilio, then the TwiML stream URL (token), " +
    "Twilio connected + start messages; audio: 20 ms mu-law media at 50/s, starts jittered " +
    "uniformly over the first second (1 ms phase slots)",
  latency: "k-th outbound media message on a call matched to the k-th frame sent (frame mode " +
    "echoes 1:1; odd_size_messages would show a split); send and receive timed in the " +
    "generator with performance.now(); each call's first 50 frames are warm-up (not sampled)",
  lost: "frames sent minus media messages received within 3 s after sending stopped",
  cpu: "process.cpuUsage() (user + system) in each server over the sending window and the " +
    "drain, of the server process (all its threads); 100% = one core",
  idle_memory: "calls open (start sent, no audio) on server processes that carried no " +
    "audio yet, forced GC (--expose-gc); marginal cost of the second half of the N calls: " +
    "heapUsed, external (typed-array stores) and RSS deltas divided by N/2",
  timers: "setTimeout/setInterval wrapped in the server child: live timers, marginal per idle " +
    "call as above",
  warmup: "2 s of audio on min(N, 100) extra calls before the measured audio (JIT)",
  server_split: "bench/capacity_trace.ts in the server, per frame after warm-up: server = " +
    "carrier message reaching our code (the serializer's onMessage, before the JSON parse) -> " +
    "send of the reply audio it caused (the k-th reply on a leg is the echo of its k-th audio " +
    "message), split into pipeline (-> output transport) and pacing wait (-> carrier send); " +
    "a match out of order or past the leg's ring is counted in unmatched, never sampled; the " +
    "wait before the message callback runs (other calls' messages handled first in the same " +
    "turn) and Deno's WebSocket receive show only end to end",
  healthy: "no call refused, no frame lost, server pipeline p99 <= 5 ms, end-to-end p99 <= " +
    "50 ms; the sweep stops after two unhealthy points in a row or a loss",
  generator: "one load-generator process (this one) on the same machine, loopback only",
  repeated: "with --repeat N: each call count N times on one worker thread, the agent and the " +
    "floor back to back in every round, rounds one after the other; per call count the median " +
    "and spread (min, max, values) of every run's figures, the agent / floor CPU per frame of " +
    "each round, and the 1-minute load average before each run",
};

/** What runs per call, counted from the code (core/builders.ts, server/media_socket.ts). */
const TASKS_PER_CALL = {
  processor_loops: 5,
  processor_loops_are:
    "TransportInput, RealtimeProcessor, BrainProcessor (keeps the transcript), TransportOutput, " +
    "FinalizeProcessor (6 with recording on: + RecorderProcessor); each runs only while it has " +
    "frames (parked loops hold no coroutine)",
  reader_tasks: 0,
  reader_tasks_are: "none: the media leg pushes its events from the socket's message callback " +
    "(MediaTransport.listen) and the model from its own (RealtimeLlm.listen); a model without " +
    "push mode gets a reader task (RealtimeProcessor#readEvents)",
  call_coroutines: 0,
  call_coroutines_are: "none: the media-socket handler, CallManager.run and PipelineTask.run " +
    "return once the call is wired; its end arrives through the task's promise chain",
  total_async_tasks: 5,
  suspended_while_idle: 0,
  suspended_while_idle_are: "none (heap snapshot of idle calls; tests/capacity_heap_test.ts " +
    "checks it)",
  timers_idle:
    "measured per point (idle.timers_per_session): none per call; the call limit and the " +
    "task idle watch are deadlines on one isolate-wide timer (core/deadlines.ts); pacing " +
    "while audio plays is one shared 10 ms playout clock per isolate, not a timer per call",
  not_counted: "Deno's own per-WebSocket read loop in ext/websocket",
};

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
  const echoRates = opts.echoRates ?? "leg";
  const configPath = await writeBenchConfig(scratch, maxCalls * 2, echoRates);
  // A baseline's server child runs in its own directory and reads the same path there.
  if (opts.baseline !== undefined) {
    await writeBenchConfig(`${opts.baseline}/${scratch}`, maxCalls * 2, echoRates);
  }
  const result: CapacityResult = {
    command: opts.command ?? "runCapacityBench",
    date: new Date().toISOString(),
    machine: machineInfo(),
    deno: Deno.version,
    method: METHOD,
    echo_rates: echoRates,
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
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) {
    console.log(
      "Usage: deno run ... bench/capacity.ts [--calls 10,100,500] [--duration 10] " +
        "[--workers 1,2] [--no-trace] [--no-up] [--profile N|auto] [--floor] " +
        "[--repeat N [--baseline DIR]] [--contention 'what else ran'] " +
        "[--echo-rates leg|16000/24000] " +
        "[--out file] [--no-write] | --replot results.json",
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
