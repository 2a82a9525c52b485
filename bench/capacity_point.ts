/**
 * One point of the capacity sweep: K fresh server children, N calls opened and idle (memory
 * and timers per idle session, on processes that have served nothing yet), a 2 s warm-up on
 * extra calls (JIT), then audio on the N calls for the duration (latency, loss, CPU, RSS),
 * then hang-up and shutdown.
 * @module
 */

import {
  type ChildStats,
  type ChildTrace,
  type ProcSample,
  selfSample,
  type ServerChild,
  spawnServer,
} from "./capacity_child.ts";
import { closeCalls, openCalls, runAudio } from "./capacity_load.ts";
import { type LatencySummary, summarizeMs } from "./capacity_stats.ts";

/** Options of {@link measurePoint}. */
export interface PointOptions {
  calls: number;
  /** Worker threads in the one server process, sharing one port (`--workers`). */
  workers: number;
  durationS: number;
  configPath: string;
  rampMs?: number;
  warmupFrames?: number;
  /**
   * Healthy: no call refused, no frame lost, server pipeline p99 at most `p99LimitMs` (default
   * 5 ms) and end-to-end p99 at most `e2eLimitMs` (default 50 ms: 5 ms plus the playout clock's
   * wait, which alone can reach a frame or two; a backlog grows far past it).
   */
  p99LimitMs?: number;
  /** See `p99LimitMs`. */
  e2eLimitMs?: number;
  /** Calls of a 2 s warm-up run on each fresh server before measuring (JIT); default 100, 0 none. */
  warmupCalls?: number;
  /** Split server-side latency (bench/capacity_trace.ts); default true. */
  trace?: boolean;
  /** Measure the bare echo of bench/capacity_floor.ts instead of the agent (no trace). */
  floor?: boolean;
  /** Serve from this other checkout of the project (an A/B baseline; see `SpawnOptions.cwd`). */
  serverDir?: string;
  /** Write a `--cpu-prof` profile of the (first) server child here. */
  cpuProfDir?: string;
  /**
   * Observed as in production: the server exports traces over OTLP to a sink here
   * (`OTEL_DENO=true`) and `/metrics` is scraped every second while the audio runs. Either part
   * alone: `{ traces: true }`, `{ scrape: true }`.
   */
  observe?: boolean | { traces?: boolean; scrape?: boolean };
  log?: (line: string) => void;
}

/** One row of the results. */
export interface CapacityPoint {
  calls: number;
  workers: number;
  duration_s: number;
  calls_refused: number;
  connect_s: number;
  frames_sent: number;
  frames_echoed: number;
  frames_lost: number;
  odd_size_messages: number;
  unsolicited_messages: number;
  /** End to end, in the generator: send of a frame to receipt of its echo. */
  latency_ms: LatencySummary;
  /** Inside each server process: leg -> output transport, and the playout-clock wait. */
  server_split: ChildTrace[];
  /** Traces exported and `/metrics` scraped during the run (see `PointOptions.observe`). */
  observed?: boolean;
  server: {
    /** The server process, all threads; 100 = one core busy. */
    cpu_percent: number;
    /** Server CPU time per echoed frame, microseconds (the sending window and the drain). */
    cpu_us_per_frame?: number;
    rss_bytes_max: number;
    rss_bytes_before_calls: number;
  };
  idle: {
    /** V8 heap (objects, closures, suspended async functions). */
    heap_bytes_per_session: number;
    /** Off-heap memory V8 accounts for: typed-array backing stores (resampler buffers). */
    external_bytes_per_session: number;
    rss_bytes_per_session: number;
    timers_per_session: number;
    gc_forced: boolean;
  };
  generator: {
    cpu_percent: number;
    send_lag_ms: LatencySummary;
  };
  healthy: boolean;
}

async function sampleAll(children: readonly ServerChild[]): Promise<ProcSample> {
  const all = await Promise.all(children.map((c) => c.sample()));
  return {
    cpuSeconds: all.reduce((a, s) => a + s.cpuSeconds, 0),
    rssBytes: all.reduce((a, s) => a + s.rssBytes, 0),
  };
}

async function allStats(children: readonly ServerChild[]): Promise<ChildStats[]> {
  return await Promise.all(children.map((c) => c.stats()));
}

async function waitActive(children: readonly ServerChild[], n: number): Promise<ChildStats[]> {
  const by = performance.now() + 30_000;
  for (;;) {
    const stats = await allStats(children);
    if (stats.reduce((a, s) => a + s.activeCalls, 0) >= n || performance.now() > by) return stats;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * A short audio run on `n` extra calls, so that the measured calls meet compiled code; `open`
 * calls (the idle ones about to be measured) stay open meanwhile.
 */
async function warmUp(children: readonly ServerChild[], n: number, open: number): Promise<void> {
  const { calls } = await openCalls(children.map((c) => c.port), n);
  await waitActive(children, open + calls.length);
  await runAudio(calls, { durationMs: 2000, warmupFrames: 0, drainMs: 1000 });
  await closeCalls(calls);
  // Let the servers finalize the warm-up calls before the measured ones start talking.
  const by = performance.now() + 10_000;
  while (performance.now() < by) {
    const stats = await allStats(children);
    if (stats.reduce((a, s) => a + s.activeCalls, 0) <= open) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Measure one point (N calls on one server process with K worker threads). */
export async function measurePoint(o: PointOptions): Promise<CapacityPoint> {
  const log = o.log ?? (() => {});
  const children: ServerChild[] = [];
  const exportTraces = o.observe === true ||
    (typeof o.observe === "object" && o.observe.traces === true);
  const scrape = o.observe === true || (typeof o.observe === "object" && o.observe.scrape === true);
  const sink = exportTraces ? otlpSink() : undefined;
  try {
    // One process, as in production: with workers > 1 its threads share one port and the
    // kernel spreads the calls (each worker splits its own latency; the child joins them).
    children.push(
      await spawnServer({
        configPath: o.configPath,
        trace: o.trace !== false && !o.floor,
        floor: o.floor === true,
        traceWarmupFrames: o.warmupFrames ?? 50,
        threads: o.workers,
        ...(o.serverDir !== undefined ? { cwd: o.serverDir } : {}),
        ...(o.cpuProfDir ? { cpuProfDir: o.cpuProfDir } : {}),
        ...(sink !== undefined ? { otelEndpoint: sink.endpoint } : {}),
      }),
    );
    // Idle memory first, on processes that have carried no audio yet (RSS never shrinks), and
    // as the marginal cost of the second half of the calls (the first half pays one-time costs:
    // lazily compiled code, inline caches, pools).
    const ports = children.map((c) => c.port);
    const before = await allStats(children);
    const t0 = performance.now();
    const half = await openCalls(ports, Math.max(1, Math.floor(o.calls / 2)));
    const mid = await waitActive(children, half.calls.length);
    const rest = await openCalls(ports, o.calls - Math.max(1, Math.floor(o.calls / 2)));
    const connectS = (performance.now() - t0) / 1000;
    const calls = [...half.calls, ...rest.calls];
    const refused = [...half.refused, ...rest.refused];
    const idle = await waitActive(children, calls.length);
    const total = (xs: ChildStats[], f: (s: ChildStats) => number) =>
      xs.reduce((a, s) => a + f(s), 0);
    const per = (f: (s: ChildStats) => number) =>
      rest.calls.length === 0 ? NaN : (total(idle, f) - total(mid, f)) / rest.calls.length;
    const heapPer = per((s) => s.heapUsed);
    const externalPer = per((s) => s.external);
    const rssPer = per((s) => s.rss);
    const timersPer = per((s) => s.liveTimers);
    const rssIdle = total(idle, (s) => s.rss);
    log(
      `  ${calls.length} calls open in ${connectS.toFixed(1)} s (${refused.length} refused); ` +
        `idle heap ${Math.round(heapPer)} + external ${Math.round(externalPer)} B/session`,
    );
    await Promise.all(children.map((c) => c.untrack()));
    if (o.warmupCalls !== 0) {
      await warmUp(children, Math.min(o.calls, o.warmupCalls ?? 100), calls.length);
    }
    await Promise.all(children.map((c) => c.trace())); // drop the warm-up's samples

    let rssMax = rssIdle;
    let sampling = Promise.resolve();
    const rssTimer = setInterval(() => {
      sampling = sampling.then(() => sampleAll(children)).then((r) => {
        rssMax = Math.max(rssMax, r.rssBytes);
      });
    }, 500);
    const scraper = scrape ? scrapeEverySecond(children.map((c) => c.port)) : undefined;
    const cpu0 = await sampleAll(children);
    const self0 = selfSample();
    const run = await runAudio(calls, {
      durationMs: o.durationS * 1000,
      ...(o.rampMs !== undefined ? { rampMs: o.rampMs } : {}),
      ...(o.warmupFrames !== undefined ? { warmupFrames: o.warmupFrames } : {}),
    });
    clearInterval(rssTimer);
    await sampling;
    const cpu1 = await sampleAll(children);
    const self1 = selfSample();
    const scrapes = await scraper?.stop();
    const traces = o.trace === false || o.floor
      ? []
      : await Promise.all(children.map((c) => c.trace()));
    await closeCalls(calls);

    const latency = summarizeMs(run.latencyMs);
    const lost = run.framesSent - run.framesEchoed;
    // CPU over the sending window plus the drain (the samples bracket both).
    const window = run.wallSeconds + run.drainSeconds;
    const pct = (a: ProcSample, b: ProcSample) =>
      Math.round(((b.cpuSeconds - a.cpuSeconds) / window) * 1000) / 10;
    const point: CapacityPoint = {
      calls: o.calls,
      workers: o.workers,
      duration_s: o.durationS,
      calls_refused: refused.length,
      connect_s: Math.round(connectS * 100) / 100,
      frames_sent: run.framesSent,
      frames_echoed: run.framesEchoed,
      frames_lost: lost,
      odd_size_messages: run.oddSize,
      unsolicited_messages: run.unsolicited,
      latency_ms: latency,
      server_split: traces,
      ...(exportTraces || scrape ? { observed: true } : {}),
      server: {
        cpu_percent: pct(cpu0, cpu1),
        cpu_us_per_frame: run.framesEchoed === 0
          ? NaN
          : Math.round(((cpu1.cpuSeconds - cpu0.cpuSeconds) / run.framesEchoed) * 1e8) / 100,
        rss_bytes_max: rssMax,
        rss_bytes_before_calls: total(before, (s) => s.rss),
      },
      idle: {
        heap_bytes_per_session: Math.round(heapPer),
        external_bytes_per_session: Math.round(externalPer),
        rss_bytes_per_session: Math.round(rssPer),
        timers_per_session: Math.round(timersPer * 100) / 100,
        gc_forced: idle.every((s) => s.gc),
      },
      generator: {
        cpu_percent: pct(self0, self1),
        send_lag_ms: summarizeMs(run.sendLagMs),
      },
      healthy: false,
    };
    const pipelineP99 = Math.max(...traces.map((t) => t.pipeline_ms.p99));
    point.healthy = refused.length === 0 && lost === 0 &&
      (traces.length === 0 || pipelineP99 <= (o.p99LimitMs ?? 5)) &&
      latency.p99 <= (o.e2eLimitMs ?? 50);
    if (exportTraces || scrape) {
      log(`  observed: ${scrapes ?? 0} /metrics scrapes, ${sink?.bytes() ?? 0} OTLP bytes so far`);
    }
    return point;
  } finally {
    for (const c of children) await c.stop();
    await sink?.close();
  }
}

/** One line per point for the console. */
export function describe(p: CapacityPoint): string {
  const l = p.latency_ms;
  const cpu = p.server.cpu_percent === undefined ? "?" : `${p.server.cpu_percent}%`;
  const rss = p.server.rss_bytes_max === undefined
    ? "?"
    : `${(p.server.rss_bytes_max / 2 ** 20).toFixed(0)} MiB`;
  const sp = p.server_split[0];
  const split = sp === undefined
    ? ""
    : ` [server in->out p50 ${sp.server_ms.p50} p99 ${sp.server_ms.p99} p99.9 ` +
      `${sp.server_ms.p999}: pipeline p99 ${sp.pipeline_ms.p99}, pacing wait p99 ` +
      `${sp.pacing_ms.p99}${sp.unmatched > 0 ? `, ${sp.unmatched} unmatched` : ""}]`;
  return `  ${p.calls} calls x${p.workers}: p50 ${l.p50} ms, p99 ${l.p99} ms, ` +
    `p99.9 ${l.p999} ms${split}, lost ${p.frames_lost}/${p.frames_sent}, server cpu ${cpu}, rss ${rss}, ` +
    `generator cpu ${p.generator.cpu_percent ?? "?"}%` + (p.healthy ? "" : "  <- saturated");
}

/** An OTLP/HTTP endpoint that takes every export and keeps only its size. */
function otlpSink(): { endpoint: string; bytes(): number; close(): Promise<void> } {
  let bytes = 0;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    bytes += (await req.arrayBuffer()).byteLength;
    return new Response(new Uint8Array(0), {
      headers: { "content-type": "application/x-protobuf" },
    });
  });
  return {
    endpoint: `http://127.0.0.1:${server.addr.port}`,
    bytes: () => bytes,
    close: () => server.shutdown(),
  };
}

/** `GET /metrics` on each port every second, as a Prometheus would, until `stop`. */
function scrapeEverySecond(ports: readonly number[]): { stop(): Promise<number> } {
  let n = 0;
  let busy = Promise.resolve();
  const timer = setInterval(() => {
    busy = busy.then(async () => {
      for (const port of ports) {
        const res = await fetch(`http://127.0.0.1:${port}/metrics`).catch(() => undefined);
        await res?.text();
        if (res?.ok) n++;
      }
    });
  }, 1000);
  return {
    async stop() {
      clearInterval(timer);
      await busy;
      return n;
    },
  };
}
