/**
 * Multi-core serving in one process: N workers (`server/worker.ts`), each a whole agent server
 * on its own thread, all listening on one port with SO_REUSEPORT. One Deno isolate runs its
 * JavaScript on one core; this is how one Flowcat process uses all of them.
 *
 * @example
 * ```ts
 * const pool = await startWorkers({ configPath: "examples/agent.yaml", host: "127.0.0.1",
 *   port: 6210, count: navigator.hardwareConcurrency });
 * // ... on SIGTERM:
 * await pool.drain();
 * ```
 * @module
 */

import { FlowcatError } from "../core/errors.ts";
import type { TlsPem } from "./tls.ts";
import { type FamilySnapshot, mergeFamilies, Registry, renderFamilies } from "./prometheus.ts";
import type { WorkerCommand, WorkerReport, WorkerStats } from "./worker.ts";
import type { WorkerFailure } from "./worker_failures.ts";

export type { WorkerFailure, WorkerStats };

/** Options of {@link startWorkers}. */
export interface WorkerPoolOptions {
  /** Validated config file every worker loads. */
  configPath: string;
  /** Listen address. */
  host: string;
  /** Listen port; 0 picks a free one first, then every worker binds it. */
  port: number;
  /** Number of workers (threads), at least 1. */
  count: number;
  /** Public origin for answer documents. */
  publicUrl?: string;
  /** Certificate and key (PEM text) each worker's HTTPS listener serves. */
  tls?: TlsPem;
  /**
   * First loopback hop port of the connection guard (worker i uses this + i; 0 or absent:
   * ephemeral ones).
   */
  hopPort?: number;
  /**
   * For benchmarks and tests, not deployments: a module URL each worker imports before it makes
   * its server (to wrap timers or methods, as bench/capacity_worker_probe.ts does); its exported
   * `probe(arg)` answers {@link WorkerPool.probe}.
   */
  instrument?: string;
}

/** A running pool of server workers. */
export interface WorkerPool {
  /** The port every worker listens on. */
  port: number;
  /** Number of workers. */
  count: number;
  /** Each running worker's load and memory, in worker order. */
  stats(): Promise<WorkerStats[]>;
  /** Ask each running worker's instrument module `probe(arg)`; the answers in worker order. */
  probe(arg: string): Promise<unknown[]>;
  /** Drain every worker's calls, stop listening, end the workers; resolves with calls drained. */
  drain(): Promise<number>;
  /**
   * Resolves when the first worker fails (an error escaped every handler in it, see
   * server/worker_failures.ts); that worker is stopped by then, the others keep serving until
   * {@link WorkerPool.drain}.
   */
  failed: Promise<WorkerFailure>;
}

/** Parse `--workers`: a positive integer or `auto` (one per core). */
export function parseWorkerCount(
  text: string,
  cores: number = navigator.hardwareConcurrency,
): number {
  if (text === "auto") return Math.max(1, cores);
  if (!/^\d{1,4}$/.test(text) || Number(text) < 1) {
    throw new FlowcatError(
      "config",
      `--workers: expected a positive integer or "auto", got "${text}"`,
    );
  }
  return Number(text);
}

function freePort(host: string): number {
  const l = Deno.listen({ hostname: host, port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

/**
 * The worker module beside this one: `worker.ts` from source, `worker.js` when this code runs
 * bundled (the offline bundle of tools/dist.ts puts the server in lib/server.js and the worker,
 * bundled on its own, in lib/worker.js).
 */
export function workerModuleUrl(self: string): string {
  return new URL(self.endsWith(".js") ? "./worker.js" : "./worker.ts", self).href;
}

/**
 * Start `count` workers on one port. Rejects (after ending the workers) when any of them fails
 * to start; a user mistake in the config is a `config` error.
 */
export async function startWorkers(opts: WorkerPoolOptions): Promise<WorkerPool> {
  const port = opts.port === 0 ? freePort(opts.host) : opts.port;
  const secret = crypto.getRandomValues(new Uint8Array(32));
  const url = workerModuleUrl(import.meta.url);
  const workers: Worker[] = [];
  /** False once a worker failed and was stopped. */
  const alive: boolean[] = [];
  const started: Promise<void>[] = [];
  let startedAll = false;
  // The main thread's own series, joined with the workers' at each scrape.
  const own = new Registry();
  const failures = own.counter(
    "flowcat_worker_failures_total",
    "Worker threads stopped because an error escaped every handler in them.",
    ["where"],
  );
  const failed = Promise.withResolvers<WorkerFailure>();
  /** Worker `i` failed: stop it, count it, tell whoever waits on `failed`. */
  const fail = (f: WorkerFailure) => {
    if (!alive[f.index]) return;
    alive[f.index] = false;
    workers[f.index].terminate();
    failures.labels(f.where).inc();
    failed.resolve(f);
  };
  const live = () => workers.filter((_, i) => alive[i]);
  /** Scrapes being joined: every worker's families, by gather id. */
  const gathering = new Map<
    number,
    { lists: (FamilySnapshot[] | undefined)[]; left: number; done: () => void }
  >();
  let gatherId = 0;
  /** A scrape reached worker `from`: ask every worker for its families, join, answer `from`. */
  const joinMetrics = async (from: number, requestId: number) => {
    const id = ++gatherId;
    const lists: (FamilySnapshot[] | undefined)[] = new Array(workers.length);
    const all = new Promise<void>((done) => {
      gathering.set(id, { lists, left: live().length, done });
    });
    for (const w of live()) w.postMessage({ type: "metrics", id } satisfies WorkerCommand);
    // A worker too busy to answer within 2 s is left out of this scrape.
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([all, new Promise<void>((r) => (timer = setTimeout(r, 2000)))]);
    clearTimeout(timer);
    gathering.delete(id);
    const text = renderFamilies(
      mergeFamilies([own.collect(), ...lists.filter((l) => l !== undefined)]),
    );
    workers[from].postMessage(
      { type: "metricsReply", id: requestId, text } satisfies WorkerCommand,
    );
  };
  /** Waiters for each worker's next report of a type. */
  const waiting: Map<WorkerReport["type"], (r: WorkerReport) => void>[] = [];
  const next = <T extends WorkerReport["type"]>(i: number, type: T) =>
    new Promise<Extract<WorkerReport, { type: T }>>((resolve) => {
      waiting[i].set(type, resolve as (r: WorkerReport) => void);
    });
  for (let index = 0; index < opts.count; index++) {
    const w = new Worker(url, { type: "module" });
    workers.push(w);
    alive.push(true);
    waiting.push(new Map());
    started.push(
      new Promise<void>((resolve, reject) => {
        w.onmessage = (e: MessageEvent<WorkerReport>) => {
          const r = e.data;
          if (r.type === "metricsRequest") return void joinMetrics(index, r.id);
          if (r.type === "metrics") {
            const g = gathering.get(r.id);
            if (g !== undefined && g.lists[r.index] === undefined) {
              g.lists[r.index] = r.families;
              if (--g.left === 0) g.done();
            }
            return;
          }
          if (r.type === "failed") {
            const { type: _, ...f } = r;
            return fail(f);
          }
          if (r.type === "ready") resolve();
          else if (r.type === "error") {
            reject(new FlowcatError(r.userError ? "config" : "other", r.message));
          }
          const waiter = waiting[index].get(r.type);
          waiting[index].delete(r.type);
          waiter?.(r);
        };
        w.onerror = (e) => {
          e.preventDefault();
          // After start, an error the worker's own listeners did not take is a failure too.
          if (startedAll) {
            fail({ index, where: "uncaught_error", message: e.message, calls: [] });
            return;
          }
          reject(new FlowcatError("other", `worker ${index}: ${e.message}`));
          waiting[index].get("stopped")?.({ type: "stopped", index, drained: 0 });
        };
      }),
    );
    const cmd: WorkerCommand = {
      type: "start",
      configPath: opts.configPath,
      host: opts.host,
      port,
      secret,
      index,
      count: opts.count,
      ...(opts.publicUrl !== undefined ? { publicUrl: opts.publicUrl } : {}),
      ...(opts.tls !== undefined ? { tls: opts.tls } : {}),
      ...(opts.hopPort !== undefined ? { hopPort: opts.hopPort } : {}),
      ...(opts.instrument !== undefined ? { instrument: opts.instrument } : {}),
    };
    w.postMessage(cmd);
  }
  try {
    await Promise.all(started);
    startedAll = true;
  } catch (err) {
    for (const w of workers) w.terminate();
    throw err;
  }
  /** Send `cmd` to every worker; their replies of the same type, in worker order. */
  const ask = <T extends "stats" | "probe">(cmd: WorkerCommand & { type: T }) => {
    const replies = workers.flatMap((_, i) => alive[i] ? [next(i, cmd.type)] : []);
    for (const w of live()) w.postMessage(cmd);
    return Promise.all(replies);
  };
  return {
    port,
    count: opts.count,
    stats: async () => (await ask({ type: "stats" })).map((r) => r.stats),
    probe: async (arg: string) => (await ask({ type: "probe", arg })).map((r) => r.data),
    failed: failed.promise,
    drain: async () => {
      const stopped = workers.flatMap((_, i) => alive[i] ? [next(i, "stopped")] : []);
      for (const w of live()) w.postMessage({ type: "drain" } satisfies WorkerCommand);
      const drained = (await Promise.all(stopped)).reduce((a, r) => a + r.drained, 0);
      for (const w of workers) w.terminate();
      return drained;
    },
  };
}
