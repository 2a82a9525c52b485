"""Pipecat's frame-routing cost and idle-task memory, measured the way bench/core.ts measures Flowcat's.

How to run: `bench/pipecat_setup.sh <pipecat checkout> [wait_for2 checkout]` installs pipecat from
its source into .tmp/pipecat/ (a venv with the deps pipecat's core imports; a stand-in for the
`loudness` wheel, which pipecat uses only to compute audio volume, when the package index lacks
it), then `npx -y deno@2.9.6 task bench:pipecat` (bench/pipecat.ts) runs this script and Flowcat's
bench/core.ts functions in alternating rounds and writes bench/results/pipecat-<host>.json. This
script also runs alone: `PYTHONPATH=.tmp/pipecat/src:.tmp/pipecat/shims
.tmp/pipecat/venv/bin/python bench/pipecat_routing.py` prints its JSON on stdout.

Method (same as bench/core.ts benchRouting / benchIdleMemory):
- routing: a PipelineWorker (PipelineTask is its deprecated alias) over a Pipeline of N
  pass-through FrameProcessor subclasses. Once on_pipeline_started fires, queue 20,000
  InputAudioRawFrame (320 samples, 16 kHz mono) and an EndFrame; stop the clock when
  worker.run() returns. Marginal cost = (run - median empty-pipeline run) / (frames x hops).
  One warm-up per chain, then --runs runs; p10/p50/p90 by nearest rank.
- memory: start --tasks idle 5-processor workers as asyncio tasks, wait until every one has
  started, then (after gc) tracemalloc and RSS deltas / tasks.
- profiles: "bare" turns off what Flowcat's task does not have (RTVI processor + observer,
  turn-tracking observers, idle-timeout observer); "default" keeps pipecat's defaults except
  the idle timeout. Output is JSON on stdout.
"""

import argparse
import asyncio
import gc
import json
import math
import os
import sys
import time
import tracemalloc

try:
    from loguru import logger
    from pipecat.frames.frames import EndFrame, Frame, InputAudioRawFrame
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.pipeline.worker import PipelineWorker
    from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
    from pipecat.utils.asyncio.task_manager import TaskManager
    from pipecat.workers.base_worker import WorkerParams
except ImportError as err:  # a user mistake, not a crash: say what to do
    sys.exit(
        f"pipecat_routing.py: cannot import pipecat ({err}).\n"
        "Set PYTHONPATH to a pipecat checkout's src/ and install its core deps; see the top of this file."
    )

PCM = bytes(320 * 2)  # 320 int16 samples of silence, like core.ts's Int16Array(320)
PROFILES = {
    "bare": {"enable_rtvi": False, "enable_turn_tracking": False, "idle_timeout_secs": None},
    "default": {"idle_timeout_secs": None},
}


class PassThrough(FrameProcessor):
    """The pipecat equivalent of a bare Flowcat FrameProcessor: forwards every frame."""

    async def process_frame(self, frame: Frame, direction: FrameDirection):
        await super().process_frame(frame, direction)
        await self.push_frame(frame, direction)


def percentile(xs: list[float], p: float) -> float:
    """Nearest-rank percentile, identical to core.ts percentile()."""
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, math.ceil(p / 100 * len(s)) - 1))]


def summary(xs: list[float]) -> dict:
    """p10/p50/p90 of repeated samples."""
    return {"p10": percentile(xs, 10), "p50": percentile(xs, 50), "p90": percentile(xs, 90), "runs": len(xs)}


def make_worker(hops: int, profile: str, tag: str) -> PipelineWorker:
    """A worker over `hops` pass-through processors."""
    procs = [PassThrough(name=f"{tag}p{i}") for i in range(hops)]
    return PipelineWorker(Pipeline(procs), **PROFILES[profile])


async def route_once(hops: int, n: int, profile: str) -> float:
    """Seconds from the first queued frame until run() returns after EndFrame."""
    worker = make_worker(hops, profile, "r")
    started = asyncio.Event()

    @worker.event_handler("on_pipeline_started")
    async def _on_started(_worker, _frame):
        started.set()

    frames = [InputAudioRawFrame(audio=PCM, sample_rate=16000, num_channels=1) for _ in range(n)]
    run = asyncio.create_task(worker.run(WorkerParams(task_manager=TaskManager())))
    await started.wait()
    t0 = time.perf_counter()
    for f in frames:
        await worker.queue_frame(f)
    await worker.queue_frame(EndFrame())
    await run
    return time.perf_counter() - t0


async def bench_routing(frames: int, runs: int, profile: str) -> dict:
    """Raw and marginal microseconds per frame per hop for chains of 1, 5 and 12."""
    await route_once(0, frames, profile)  # warm-up
    empty = [await route_once(0, frames, profile) for _ in range(runs)]
    out: dict = {"empty_run_s": summary(empty)}
    for hops in (1, 5, 12):
        await route_once(hops, frames, profile)  # warm-up
        raw, marginal = [], []
        for _ in range(runs):
            s = await route_once(hops, frames, profile)
            raw.append(s * 1e6 / (frames * hops))
            marginal.append((s - percentile(empty, 50)) * 1e6 / (frames * hops))
        out[f"input_audio_{hops}_hops"] = {"us_per_hop": summary(raw), "us_per_hop_marginal": summary(marginal)}
    return out


def rss_bytes() -> int:
    """Resident set size from /proc (Linux)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def bench_idle_memory(tasks: int, profile: str) -> dict:
    """Bytes per idle started 5-processor worker: tracemalloc (Python heap) and RSS deltas."""
    gc.collect()
    await asyncio.sleep(0.05)
    rss0 = rss_bytes()
    tracemalloc.start()
    heap0 = tracemalloc.get_traced_memory()[0]
    started = 0
    all_started = asyncio.Event()
    workers, runs = [], []
    for i in range(tasks):
        w = make_worker(5, profile, f"t{i}")

        @w.event_handler("on_pipeline_started")
        async def _on_started(_worker, _frame):
            nonlocal started
            started += 1
            if started == tasks:
                all_started.set()

        workers.append(w)
        runs.append(asyncio.create_task(w.run(WorkerParams(task_manager=TaskManager()))))
    await all_started.wait()
    gc.collect()
    await asyncio.sleep(0.05)
    heap1 = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    rss1 = rss_bytes()
    for w in workers:
        await w.cancel(reason="bench done")
    await asyncio.gather(*runs, return_exceptions=True)
    return {
        "tasks": tasks,
        "processors_per_task": 5,
        "tracemalloc_bytes_per_idle_task": round((heap1 - heap0) / tasks),
        "rss_bytes_per_idle_task": round((rss1 - rss0) / tasks),
    }


async def main() -> None:
    """Parse options, run the benches, print JSON."""
    ap = argparse.ArgumentParser(description="Pipecat routing cost, measured like bench/core.ts")
    ap.add_argument("--frames", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--tasks", type=int, default=1000)
    ap.add_argument("--profiles", default="bare,default", help="comma list of: " + ",".join(PROFILES))
    ap.add_argument("--only", choices=["routing", "memory"], help="run one bench only")
    args = ap.parse_args()
    profiles = [p for p in args.profiles.split(",") if p]
    unknown = [p for p in profiles if p not in PROFILES]
    if unknown:
        sys.exit(f"pipecat_routing.py: unknown profile(s) {unknown}; choose from {list(PROFILES)}")
    logger.disable("pipecat")  # core.ts runs with silentLogger
    import pipecat

    result: dict = {
        "pipecat_version": pipecat.__version__,
        "python": sys.version.split()[0],
        "frames": args.frames,
        "runs": args.runs,
    }
    for profile in profiles:
        entry: dict = {}
        if args.only in (None, "routing"):
            print(f"pipecat bench [{profile}]: routing...", file=sys.stderr)
            entry["routing"] = await bench_routing(args.frames, args.runs, profile)
        if args.only in (None, "memory"):
            print(f"pipecat bench [{profile}]: idle memory...", file=sys.stderr)
            entry["idle_memory"] = await bench_idle_memory(args.tasks, profile)
        result[profile] = entry
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    asyncio.run(main())
