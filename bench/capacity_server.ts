/**
 * The capacity benchmark's server child: the agent server exactly as `server/main.ts` builds it
 * (`createAgentServer` behind one `Deno.serve`), plus what a benchmark needs and the real entry
 * point has no business offering:
 *
 * - `--reuse-port`: listen with SO_REUSEPORT, so several processes can share one port;
 * - `--threads N`: serve from N worker threads on one port (`server/workers.ts`, as
 *   `deno task start --workers N`); each worker imports bench/capacity_worker_probe.ts first,
 *   so `stats` sums the workers' heaps, active calls and timers, and `trace` joins their splits;
 * - a stdin control channel, one command a line, answered with one JSON line on stdout:
 *   `stats` (forced GC when `--v8-flags=--expose-gc`, then heap, RSS, live timers and active
 *   calls), `sample` (CPU seconds and RSS, no GC), `untrack` (stop counting timers), `heap <file>`
 *   (a heap snapshot after forced GC, for bench/capacity_heap.ts), `exit`
 *   (exit 0, which also writes a `--cpu-prof` profile);
 * - `--trace`: the server-side latency split of bench/capacity_trace.ts, read with `trace`;
 * - `--floor`: media sockets get the bare echo of bench/capacity_floor.ts (no pipeline), the
 *   latency floor the agent's numbers are read against; `stats` counts its open sockets;
 * - a live-timer count (bench/capacity_timers.ts): `setTimeout` / `setInterval` are wrapped
 *   before the server is loaded and, until `untrack`, every timer is counted from creation until
 *   it fires or is cleared.
 *
 * ```sh
 * deno run --allow-net=127.0.0.1 --allow-read=. --allow-env=TWILIO_AUTH_TOKEN \
 *   bench/capacity_server.ts --config .tmp/capacity/agent.json --port 0
 * ```
 * @module
 */

import process from "node:process";
import { parseArgs } from "node:util";

import { countTimers } from "./capacity_timers.ts";
import type { TraceSamples } from "./capacity_trace.ts";

/** Live timers, counted until `untrack`; wrapped before any server module loads. */
const timers = countTimers();
const realSetTimeout = timers.realSetTimeout;

const { values } = parseArgs({
  args: Deno.args,
  options: {
    config: { type: "string" },
    port: { type: "string", default: "0" },
    "reuse-port": { type: "boolean", default: false },
    trace: { type: "boolean", default: false },
    "trace-warmup": { type: "string", default: "50" },
    threads: { type: "string", default: "1" },
    floor: { type: "boolean", default: false },
  },
});
if (values.config === undefined) {
  console.error("capacity server: --config <file> is required");
  Deno.exit(2);
}

// Loaded after the timer wrap, so every timer the server makes is seen.
const { loadConfig, formatConfigProblems } = await import("../server/config.ts");
const { createAgentServer } = await import("../server/app.ts");
const { consoleLogger } = await import("../core/log.ts");
const { installTrace, takeTrace } = await import("./capacity_trace.ts");
const { summarizeMs } = await import("./capacity_stats.ts");
const { floorHandler } = await import("./capacity_floor.ts");
const floor = values.floor ? { active: 0 } : undefined;
if (values.trace) installTrace(Number(values["trace-warmup"]));

const loaded = await loadConfig(values.config);
if (!loaded.ok) {
  console.error(formatConfigProblems(loaded.problems, values.config));
  Deno.exit(2);
}
const env = (name: string): string | undefined => {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined;
  }
};
const threads = Number(values.threads);
const { startWorkers } = await import("../server/workers.ts");
const pool = threads > 1
  ? await startWorkers({
    configPath: values.config,
    host: "127.0.0.1",
    port: Number(values.port),
    count: threads,
    // Each worker counts its timers and, with --trace, splits its own latency.
    // Bundled in the offline bench pack, the probe is inside the worker's own bundle
    // (bench/capacity_worker_entry.ts), so that it patches the classes the worker runs.
    instrument: new URL(
      import.meta.url.endsWith(".js") ? "./worker.js" : "./capacity_worker_probe.ts",
      import.meta.url,
    ).href,
  })
  : undefined;
const app = pool ? undefined : await createAgentServer({
  config: loaded.config,
  env,
  logger: consoleLogger("warn", "flowcat"),
});
const ready = Promise.withResolvers<Deno.NetAddr>();
const server = app === undefined ? undefined : Deno.serve({
  hostname: "127.0.0.1",
  port: Number(values.port),
  reusePort: values["reuse-port"],
  onListen: ready.resolve,
}, floor === undefined ? app.handler : floorHandler(app.handler, floor));
const port = pool?.port ?? (await ready.promise).port;
if (pool && values.trace) await pool.probe(`trace-on ${Number(values["trace-warmup"])}`);
console.log(
  `Flowcat capacity server on http://127.0.0.1:${port}/ (pid ${Deno.pid}, ${threads} thread(s))`,
);

function settleGc(): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc;
  return (async () => {
    for (let i = 0; i < 3; i++) {
      gc?.();
      await new Promise((r) => realSetTimeout(r, 30));
    }
  })();
}

/** The workers' samples as one set (each worker's split is the same measurement). */
function joinTraces(parts: unknown[]): TraceSamples {
  const ts = parts as TraceSamples[];
  const join = (k: "server" | "pipeline" | "pacing") => {
    const out = new Float64Array(ts.reduce((a, t) => a + t[k].length, 0));
    let at = 0;
    for (const t of ts) {
      out.set(t[k], at);
      at += t[k].length;
    }
    return out;
  };
  return {
    server: join("server"),
    pipeline: join("pipeline"),
    pacing: join("pacing"),
    unmatched: ts.reduce((a, t) => a + t.unmatched, 0),
  };
}

async function answer(cmd: string): Promise<boolean> {
  if (cmd === "stats") {
    await settleGc();
    const m = Deno.memoryUsage();
    const ws = pool ? await pool.stats() : [];
    const sum = (f: (s: (typeof ws)[number]) => number) => ws.reduce((a, s) => a + f(s), 0);
    console.log(JSON.stringify({
      stats: {
        heapUsed: m.heapUsed + sum((s) => s.heapUsed),
        rss: m.rss,
        external: m.external + sum((s) => s.external),
        liveTimers: timers.live.size +
          (pool ? (await pool.probe("timers")).reduce((a: number, n) => a + Number(n), 0) : 0),
        activeCalls: floor?.active ?? app?.calls.active ?? sum((s) => s.activeCalls),
        gc: typeof (globalThis as { gc?: unknown }).gc === "function",
      },
    }));
  } else if (cmd === "sample") {
    const cpu = process.cpuUsage();
    const sample = { cpuSeconds: (cpu.user + cpu.system) / 1e6, rssBytes: Deno.memoryUsage().rss };
    console.log(JSON.stringify({ sample }));
  } else if (cmd === "trace") {
    const t = pool ? joinTraces(await pool.probe("trace")) : takeTrace();
    console.log(JSON.stringify({
      trace: {
        server_ms: summarizeMs(t.server),
        pipeline_ms: summarizeMs(t.pipeline),
        pacing_ms: summarizeMs(t.pacing),
        unmatched: t.unmatched,
      },
    }));
  } else if (cmd === "untrack") {
    timers.untrack();
    await pool?.probe("untrack");
    console.log(JSON.stringify({ untracked: true }));
  } else if (cmd.startsWith("heap ")) {
    // A V8 heap snapshot for bench/capacity_heap.ts (needs --allow-write for the path).
    await settleGc();
    try {
      const v8 = await import("node:v8");
      v8.writeHeapSnapshot(cmd.slice(5));
      console.log(JSON.stringify({ heap: cmd.slice(5) }));
    } catch (err) {
      console.log(JSON.stringify({ heapError: String(err) }));
    }
  } else if (cmd === "exit") {
    return false;
  }
  return true;
}

const lines = Deno.stdin.readable.pipeThrough(new TextDecoderStream());
let buf = "";
outer: for await (const chunk of lines) {
  buf += chunk;
  for (let i = buf.indexOf("\n"); i >= 0; i = buf.indexOf("\n")) {
    const cmd = buf.slice(0, i).trim();
    buf = buf.slice(i + 1);
    if (!(await answer(cmd))) break outer;
  }
}
// Calls still open are cut off: the benchmark has closed its sockets by now.
await Promise.race([
  server?.shutdown() ?? pool?.drain(),
  new Promise((r) => realSetTimeout(r, 2000)),
]);
console.log(JSON.stringify({ exited: true }));
Deno.exit(0);
