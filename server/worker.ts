/**
 * One worker of a multi-core agent server (`deno task start --workers N`): a whole agent server
 * in its own isolate and thread, listening with SO_REUSEPORT on the port every worker shares, so
 * the kernel spreads connections over the cores. Started and stopped by `server/workers.ts`;
 * speaks {@link WorkerCommand} in and {@link WorkerReport} out.
 *
 * Runs created here carry signed call tokens (the secret is shared by all workers), so a carrier
 * media socket may land on any worker: that worker adopts the run when its token checks out.
 * @module
 */

import type { TlsPem } from "./tls.ts";
import { errorMessage, FlowcatError } from "../core/errors.ts";
import { createAgentServer } from "./app.ts";
import { loadConfig } from "./config.ts";
import { loggerFromEnv } from "./log_env.ts";
import { serveAgentHttp } from "./serve.ts";
import type { FamilySnapshot } from "./prometheus.ts";
import { reportUncaughtInWorker, type WorkerFailure } from "./worker_failures.ts";

/** What the main thread tells a worker. */
export type WorkerCommand =
  | {
    type: "start";
    /** Config file to load (the main thread has validated it). */
    configPath: string;
    /** Listen address. */
    host: string;
    /** Listen port, shared by all workers (never 0 here). */
    port: number;
    /** Public origin for answer documents, when set on the command line. */
    publicUrl?: string;
    /** HTTPS certificate and key, PEM text read by the main thread. */
    tls?: TlsPem;
    /** The connection guard's first hop port (this worker adds its index; 0: ephemeral). */
    hopPort?: number;
    /** Call-token secret shared by all workers. */
    secret: Uint8Array;
    /** This worker's index, 0-based. */
    index: number;
    /** Number of workers. */
    count: number;
    /** A module to import before the server is made (see WorkerPoolOptions.instrument). */
    instrument?: string;
  }
  | { type: "drain" }
  | { type: "stats" }
  | { type: "probe"; arg: string }
  /** Send this worker's metric families (for a scrape another worker is answering). */
  | { type: "metrics"; id: number }
  /** The joined metrics text this worker asked for with `metricsRequest`. */
  | { type: "metricsReply"; id: number; text: string };

/** What a worker tells the main thread. */
export type WorkerReport =
  | { type: "ready"; index: number }
  | { type: "error"; index: number; message: string; userError: boolean }
  | { type: "stopped"; index: number; drained: number }
  /** An error escaped every handler: stop this worker (see server/worker_failures.ts). */
  | ({ type: "failed" } & WorkerFailure)
  | { type: "stats"; index: number; stats: WorkerStats }
  | { type: "probe"; index: number; data: unknown }
  | { type: "metrics"; index: number; id: number; families: FamilySnapshot[] }
  /** A scrape reached this worker: join every worker's metrics and reply `metricsReply`. */
  | { type: "metricsRequest"; index: number; id: number };

/** One worker's load and memory. */
export interface WorkerStats {
  /** Calls running on this worker. */
  activeCalls: number;
  /** This isolate's V8 heap in use, bytes. */
  heapUsed: number;
  /** Off-heap memory this isolate accounts for (typed-array stores), bytes. */
  external: number;
}

function envGet(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined;
  }
}

const scope = self as unknown as {
  onmessage: ((e: MessageEvent<WorkerCommand>) => void) | null;
  postMessage(m: WorkerReport): void;
  close(): void;
};

let stopping: (() => Promise<void>) | undefined;
let workerIndex = 0;
let statsOf: (() => WorkerStats) | undefined;
/** The instrument module's `probe` (benchmarks), when one was given. */
let probe: ((arg: string) => unknown) | undefined;
/** This worker's metric families, each sample labelled with its index. */
let familiesOf: (() => FamilySnapshot[]) | undefined;
/** Scrapes waiting for the main thread's joined text, by request id. */
const joined = new Map<number, (text: string) => void>();
let nextRequest = 0;

/** Every worker's metrics, joined by the main thread (a scrape that reached this worker). */
function allWorkersMetrics(): Promise<string> {
  const id = ++nextRequest;
  return new Promise((resolve) => {
    joined.set(id, resolve);
    scope.postMessage({ type: "metricsRequest", index: workerIndex, id });
  });
}

async function start(cmd: Extract<WorkerCommand, { type: "start" }>): Promise<void> {
  if (cmd.instrument !== undefined) {
    const m = await import(cmd.instrument) as { probe?: (arg: string) => unknown };
    probe = m.probe;
  }
  const loaded = await loadConfig(cmd.configPath);
  if (!loaded.ok) throw new FlowcatError("config", `${cmd.configPath}: config no longer loads`);
  const config = loaded.config;
  config.server.host = cmd.host;
  config.server.port = cmd.port;
  if (cmd.publicUrl !== undefined) config.telephony.publicUrl = cmd.publicUrl;
  // One UDP socket per trunk: the SIP agent lives on worker 0 only.
  if (cmd.index !== 0) config.telephony.sip = undefined;
  const logger = loggerFromEnv(envGet, `flowcat#${cmd.index}`);
  const app = await createAgentServer({
    config,
    env: envGet,
    logger,
    cluster: { secret: cmd.secret, index: cmd.index, count: cmd.count },
    metricsText: allWorkersMetrics,
  });
  familiesOf = () => app.metrics.registry.collect({ worker: String(cmd.index) });
  reportUncaughtInWorker({
    index: cmd.index,
    logger,
    ...(app.errors !== undefined ? { errors: app.errors } : {}),
    calls: () => app.calls.runIds,
    failed: (f) => scope.postMessage({ type: "failed", ...f }),
  });
  const server = await serveAgentHttp({
    config,
    handler: app.handler,
    logger,
    metrics: app.metrics,
    reusePort: true,
    workerIndex: cmd.index,
    hopPort: cmd.hopPort ?? 0,
    ...(cmd.tls !== undefined ? { tls: cmd.tls } : {}),
  });
  stopping = async () => {
    const drained = app.calls.active;
    await app.calls.drain();
    await server.shutdown();
    await app.close();
    scope.postMessage({ type: "stopped", index: cmd.index, drained });
  };
  statsOf = () => {
    // Under --v8-flags=--expose-gc (the capacity bench) measure live memory, not garbage.
    (globalThis as { gc?: () => void }).gc?.();
    const m = Deno.memoryUsage();
    return { activeCalls: app.calls.active, heapUsed: m.heapUsed, external: m.external };
  };
  scope.postMessage({ type: "ready", index: cmd.index });
}

scope.onmessage = (e: MessageEvent<WorkerCommand>) => {
  const cmd = e.data;
  if (cmd.type === "start") {
    workerIndex = cmd.index;
    start(cmd).catch((err) => {
      const userError = err instanceof FlowcatError &&
        (err.kind === "config" || err.kind === "not_wired");
      scope.postMessage({ type: "error", index: cmd.index, message: errorMessage(err), userError });
    });
  } else if (cmd.type === "stats") {
    const stats = statsOf?.() ?? { activeCalls: 0, heapUsed: 0, external: 0 };
    scope.postMessage({ type: "stats", index: workerIndex, stats });
  } else if (cmd.type === "probe") {
    scope.postMessage({ type: "probe", index: workerIndex, data: probe?.(cmd.arg) });
  } else if (cmd.type === "metrics") {
    scope.postMessage({
      type: "metrics",
      index: workerIndex,
      id: cmd.id,
      families: familiesOf?.() ?? [],
    });
  } else if (cmd.type === "metricsReply") {
    joined.get(cmd.id)?.(cmd.text);
    joined.delete(cmd.id);
  } else if (cmd.type === "drain") {
    void (stopping?.() ?? Promise.resolve()).finally(() => scope.close());
  }
};
