/**
 * `deno task bench:pipecat`: pipecat's routing cost and idle-task memory measured interleaved with
 * Flowcat's on this machine: each round runs bench/pipecat_routing.py once and our
 * `benchRouting` / `benchIdleMemory` once, back to back, so load on a shared machine falls on both
 * sides of each round's ratio. Writes `bench/results/pipecat-<host>.json` (read by
 * `deno task bench` for `ratios.pipecat_measured`) with every round, the median ratio and its
 * spread.
 *
 * Needs pipecat installed by `bench/pipecat_setup.sh <pipecat checkout>` (into .tmp/pipecat/).
 * Options: --rounds N (default 5), --frames N (default 20000), --runs N per chain (default 3),
 * --tasks N idle tasks (default 1000).
 * @module
 */

import { parseArgs } from "node:util";
import { benchIdleMemory, benchRouting, percentile } from "./core.ts";

const ROOT = ".tmp/pipecat";
const PYTHON = `./${ROOT}/venv/bin/python`;
const HOPS = [1, 5, 12] as const;
const PROFILES = ["bare", "default"] as const;

type Profile = typeof PROFILES[number];
type Summary = { p50: number };
type ChainResult = { us_per_hop: Summary; us_per_hop_marginal: Summary };
type PipecatRun = Record<
  Profile,
  { routing?: Record<string, ChainResult>; idle_memory?: Record<string, number> }
>;

/** One round's figures: pipecat's marginal p50 per hop against our whole p50 per hop. */
interface Round {
  flowcat_us_per_hop_p50: Record<string, number>;
  flowcat_idle_bytes_per_task: number;
  pipecat: Record<Profile, {
    us_per_hop_marginal_p50: Record<string, number>;
    tracemalloc_bytes_per_idle_task: number;
  }>;
  ratio: Record<Profile, Record<string, number>>;
  memory_ratio: Record<Profile, number>;
}

/** Median and quartiles of one ratio over the rounds. */
export function spread(xs: readonly number[]): { median: number; p25: number; p75: number } {
  const r = (x: number) => Math.round(x * 10) / 10;
  return { median: r(percentile(xs, 50)), p25: r(percentile(xs, 25)), p75: r(percentile(xs, 75)) };
}

async function runPipecat(frames: number, runs: number, tasks: number): Promise<PipecatRun> {
  const src = await Deno.realPath(`${ROOT}/src`);
  const out = await new Deno.Command(PYTHON, {
    args: [
      "bench/pipecat_routing.py",
      `--frames=${frames}`,
      `--runs=${runs}`,
      `--tasks=${tasks}`,
      `--profiles=${PROFILES.join(",")}`,
    ],
    env: { PYTHONPATH: `${src}:${Deno.cwd()}/${ROOT}/shims` },
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(`pipecat_routing.py failed:\n${new TextDecoder().decode(out.stderr)}`);
  }
  return JSON.parse(new TextDecoder().decode(out.stdout));
}

async function round(frames: number, runs: number, tasks: number): Promise<Round> {
  const theirs = await runPipecat(frames, runs, tasks);
  const routing = await benchRouting(frames, runs) as Record<string, ChainResult>;
  const memory = await benchIdleMemory(tasks);
  const ours: Record<string, number> = {};
  for (const h of HOPS) ours[`${h}_hops`] = routing[`input_audio_${h}_hops`].us_per_hop.p50;
  const pipecat = {} as Round["pipecat"];
  const ratio = {} as Round["ratio"];
  const memoryRatio = {} as Round["memory_ratio"];
  for (const p of PROFILES) {
    const marginal: Record<string, number> = {};
    ratio[p] = {};
    for (const h of HOPS) {
      const key = `${h}_hops`;
      marginal[key] = theirs[p].routing![`input_audio_${key}`].us_per_hop_marginal.p50;
      ratio[p][key] = marginal[key] / ours[key];
    }
    const bytes = theirs[p].idle_memory!.tracemalloc_bytes_per_idle_task;
    pipecat[p] = { us_per_hop_marginal_p50: marginal, tracemalloc_bytes_per_idle_task: bytes };
    memoryRatio[p] = bytes / memory.bytes_per_idle_task;
  }
  return {
    flowcat_us_per_hop_p50: ours,
    flowcat_idle_bytes_per_task: memory.bytes_per_idle_task,
    pipecat,
    ratio,
    memory_ratio: memoryRatio,
  };
}

function median(xs: number[]): number {
  return percentile(xs, 50);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      rounds: { type: "string", default: "5" },
      frames: { type: "string", default: "20000" },
      runs: { type: "string", default: "3" },
      tasks: { type: "string", default: "1000" },
    },
  });
  const [rounds, frames, runs, tasks] = [values.rounds, values.frames, values.runs, values.tasks]
    .map((v) => Number(v));
  if (![rounds, frames, runs, tasks].every((n) => Number.isInteger(n) && n > 0)) {
    console.error("bench:pipecat: --rounds, --frames, --runs and --tasks take positive integers");
    Deno.exit(2);
  }
  try {
    await Deno.stat(PYTHON);
  } catch {
    console.error(
      `bench:pipecat: no ${PYTHON}; install pipecat first: bench/pipecat_setup.sh <pipecat checkout>`,
    );
    Deno.exit(2);
  }
  const list: Round[] = [];
  for (let i = 0; i < rounds; i++) {
    console.error(`bench:pipecat: round ${i + 1}/${rounds} (pipecat, then Flowcat)...`);
    try {
      list.push(await round(frames, runs, tasks));
    } catch (err) {
      console.error(`bench:pipecat: ${(err as Error).message}`);
      Deno.exit(1);
    }
  }
  const pipecat: Record<string, unknown> = {};
  const ratios: Record<string, unknown> = {};
  for (const p of PROFILES) {
    const marginal: Record<string, number> = {};
    const r: Record<string, unknown> = {};
    for (const h of HOPS) {
      const key = `${h}_hops`;
      marginal[key] = median(list.map((x) => x.pipecat[p].us_per_hop_marginal_p50[key]));
      r[key] = spread(list.map((x) => x.ratio[p][key]));
    }
    r.idle_memory = spread(list.map((x) => x.memory_ratio[p]));
    pipecat[p] = {
      us_per_hop_marginal_p50: marginal,
      tracemalloc_bytes_per_idle_task: median(
        list.map((x) => x.pipecat[p].tracemalloc_bytes_per_idle_task),
      ),
    };
    ratios[p] = r;
  }
  const host = Deno.hostname();
  const doc = {
    command: `deno task bench:pipecat ${Deno.args.join(" ")}`.trim(),
    date: new Date().toISOString(),
    machine: { host, cpus: navigator.hardwareConcurrency, os: Deno.build.os },
    load_average_1_5_15m: Deno.loadavg(),
    deno: Deno.version,
    pipecat_commit: (await Deno.readTextFile(`${ROOT}/commit`)).trim(),
    method: "rounds of: bench/pipecat_routing.py (routing + idle memory, profiles bare and " +
      "default), then bench/core.ts benchRouting and benchIdleMemory; per round, pipecat's " +
      "marginal p50 per hop over our whole p50 per hop, and pipecat's tracemalloc bytes per idle " +
      "task over our V8 heap bytes per idle task; medians and quartiles over the rounds",
    flowcat: {
      us_per_hop_p50: Object.fromEntries(
        HOPS.map((
          h,
        ) => [`${h}_hops`, median(list.map((x) => x.flowcat_us_per_hop_p50[`${h}_hops`]))]),
      ),
      idle_bytes_per_task: median(list.map((x) => x.flowcat_idle_bytes_per_task)),
    },
    pipecat,
    ratios,
    rounds: list,
  };
  const file = `bench/results/pipecat-${host}.json`;
  await Deno.writeTextFile(file, JSON.stringify(doc, null, 2) + "\n");
  console.error(`bench:pipecat: wrote ${file}`);
  console.log(JSON.stringify({ pipecat_commit: doc.pipecat_commit, ratios }, null, 2));
}

if (import.meta.main) await main();
