/**
 * Core benchmarks: routing cost per frame per hop, demo pipeline wall time, and
 * memory per idle 5-processor task. Percentiles over repeated runs.
 * @module
 */

import {
  type Frame,
  FrameProcessor,
  inputAudio,
  outputAudio,
  Pipeline,
  PipelineTask,
} from "../mod.ts";
import { silentLogger } from "../core/log.ts";
import { runDemoPipeline } from "../demo/pipeline.ts";

/** p-th percentile (0..100) of `xs` (nearest rank). */
export function percentile(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

/** Summary of repeated samples. */
export function summary(xs: readonly number[]) {
  return {
    p10: percentile(xs, 10),
    p50: percentile(xs, 50),
    p90: percentile(xs, 90),
    runs: xs.length,
  };
}

const PCM = new Int16Array(320);

/** Seconds to push `n` frames through `hops` pass-through processors and drain with End. */
async function routeOnce(hops: number, n: number, kind: "input" | "output"): Promise<number> {
  const procs = Array.from({ length: hops }, (_, i) => new FrameProcessor(`p${i}`));
  const task = new PipelineTask(new Pipeline(procs), { idleTimeoutMs: null, logger: silentLogger });
  const audio = { pcm: PCM, sampleRate: 16000, numChannels: 1 };
  const frames: Frame[] = Array.from(
    { length: n },
    () => kind === "input" ? inputAudio(audio) : outputAudio(audio),
  );
  let t0 = 0;
  task.onStarted(async () => {
    t0 = performance.now();
    for (const f of frames) await task.queueFrame(f);
    await task.stopWhenDone();
  });
  await task.run();
  return (performance.now() - t0) / 1000;
}

/** Routing cost in microseconds per frame per hop, for chains of 1, 5 and 12. */
export async function benchRouting(frames = 20000, runs = 15) {
  const out: Record<string, unknown> = {};
  for (const kind of ["input", "output"] as const) {
    const empty: number[] = [];
    for (let i = 0; i < runs; i++) empty.push(await routeOnce(0, frames, kind));
    for (const hops of [1, 5, 12]) {
      await routeOnce(hops, frames, kind); // warm-up
      const raw: number[] = [];
      const marginal: number[] = [];
      for (let i = 0; i < runs; i++) {
        const s = await routeOnce(hops, frames, kind);
        raw.push((s * 1e6) / (frames * hops));
        marginal.push(((s - percentile(empty, 50)) * 1e6) / (frames * hops));
      }
      out[`${kind}_audio_${hops}_hops`] = {
        us_per_hop: summary(raw),
        us_per_hop_marginal: summary(marginal),
      };
    }
  }
  return out;
}

/** Wall time of the demo pipeline (ms). */
export async function benchDemo(runs = 30) {
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    const r = await runDemoPipeline();
    if (!r.ok) throw new Error("demo pipeline failed during the benchmark");
    ms.push(r.wallMs);
  }
  return { wall_ms: summary(ms) };
}

/** Heap bytes per idle task of 5 processors (1,000 tasks started, no frames). */
export async function benchIdleMemory(tasks = 1000) {
  const gc = (globalThis as { gc?: () => void }).gc;
  const settle = async () => {
    for (let i = 0; i < 3; i++) {
      gc?.();
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  await settle();
  const before = Deno.memoryUsage().heapUsed;
  const list: PipelineTask[] = [];
  const runs: Promise<unknown>[] = [];
  let started = 0;
  for (let i = 0; i < tasks; i++) {
    const t = new PipelineTask(
      new Pipeline(Array.from({ length: 5 }, (_, j) => new FrameProcessor(`t${i}p${j}`))),
      {
        idleTimeoutMs: null,
        logger: silentLogger,
      },
    );
    t.onStarted(() => void started++);
    list.push(t);
    runs.push(t.run());
  }
  while (started < tasks) await new Promise((r) => setTimeout(r, 5));
  await settle();
  const after = Deno.memoryUsage().heapUsed;
  for (const t of list) t.cancel("bench done");
  await Promise.all(runs);
  return {
    tasks,
    processors_per_task: 5,
    bytes_per_idle_task: Math.round((after - before) / tasks),
    gc_exposed: gc !== undefined,
  };
}
