/**
 * The agent server's HTTP listener: `Deno.serve` behind the connection guard
 * (server/conn_guard.ts) when `server.guard.enabled` (the default), `Deno.serve` alone when a
 * proxy in front already enforces timeouts.
 *
 * @example
 * ```ts
 * import { serveAgentHttp } from "./serve.ts";
 * import { createAgentServer, parseConfig } from "@flowcat/flowcat/server";
 * import { consoleLogger } from "@flowcat/flowcat";
 * const config = await parseConfig({ providers: { realtime: { name: "echo" } } });
 * const logger = consoleLogger();
 * const app = await createAgentServer({ config, logger });
 * const http = await serveAgentHttp({ config, handler: app.handler, logger });
 * console.log(`listening on port ${http.addr.port}`);
 * await http.shutdown();
 * ```
 * @module
 */

import type { Logger } from "../core/log.ts";
import type { AgentServerConfig } from "./config_types.ts";
import { type GuardCut, type GuardLimits, serveGuarded, type ServeHandler } from "./conn_guard.ts";
import type { ServerMetrics } from "./server_metrics.ts";
import type { TlsPem } from "./tls.ts";

/** Options of {@link serveAgentHttp}. */
export interface AgentHttpOptions {
  /** The server config: `server.host`, `server.port`, `server.guard`, `limits`. */
  config: AgentServerConfig;
  /** Certificate and key (PEM text) when serving HTTPS. */
  tls?: TlsPem;
  /** The request handler (`AgentServer.handler`). */
  handler: ServeHandler;
  /** Where the guard says what it cut. */
  logger: Logger;
  /** Share the port with other listeners (`--workers`). */
  reusePort?: boolean;
  /** Which of several workers sharing the port this is (its hop port is offset by it). */
  workerIndex?: number;
  /** The guard's first hop port, when the caller computed it before changing the config. */
  hopPort?: number;
  /** Metrics that count the connections the guard cuts or refuses. */
  metrics?: ServerMetrics;
}

/** A listening agent HTTP server. */
export interface AgentHttp {
  /** The address it listens on. */
  addr: Deno.NetAddr;
  /** Whether the connection guard is in front. */
  guarded: boolean;
  /** Stop listening and close its connections once their requests are answered. */
  shutdown(): Promise<void>;
}

/**
 * The largest inbound WebSocket message the guard passes, for media messages of at most
 * `maxMessageAudioMs` of audio: base64 of that much 16-bit audio at 48 kHz (the richest format
 * a carrier sends), doubled for JSON and escapes, plus 64 KiB for start messages and the like.
 */
export function maxMediaMessageBytes(maxMessageAudioMs: number): number {
  const pcmBytes = Math.ceil((maxMessageAudioMs * 48_000 * 2) / 1000);
  return Math.ceil(pcmBytes / 3) * 4 * 2 + 64 * 1024;
}

function hopPortOf(base: number, index: number): number {
  return base === 0 ? 0 : base + index;
}

/** The guard limits a config asks for. */
export function guardLimits(config: AgentServerConfig): GuardLimits {
  const g = config.server.guard;
  return {
    headerTimeoutMs: g.headerTimeoutMs,
    idleTimeoutMs: g.idleTimeoutMs,
    maxHeaderBytes: g.maxHeaderBytes,
    maxPending: g.maxPending,
    maxPendingPerClient: g.maxPendingPerClient,
    maxMessageBytes: maxMediaMessageBytes(config.limits.maxMessageAudioMs),
    bodyTimeoutMs: g.bodyTimeoutMs,
  };
}

/**
 * The loopback port of the guard's hop to `Deno.serve` for the first worker (worker i uses
 * this + i): `server.guard.hop_port`, else the listen port + 1; 0 (ephemeral) when the listen
 * port is 0. A fixed port keeps the computed `--allow-net` to exact ports.
 */
export function guardHopPort(config: AgentServerConfig): number {
  const { port, guard } = config.server;
  return guard.hopPort ?? (port === 0 ? 0 : port + 1);
}

/** Listen on `config.server` and serve `handler`; throws when the address cannot be bound. */
export async function serveAgentHttp(opts: AgentHttpOptions): Promise<AgentHttp> {
  const { host, port } = opts.config.server;
  if (opts.config.server.guard.enabled) {
    const metrics = opts.metrics;
    const s = await serveGuarded({
      hostname: host,
      port,
      limits: guardLimits(opts.config),
      hopPort: hopPortOf(opts.hopPort ?? guardHopPort(opts.config), opts.workerIndex ?? 0),
      logger: opts.logger,
      ...(metrics !== undefined
        ? { onCut: (reason: GuardCut) => metrics.connectionsRefused.labels(reason).inc() }
        : {}),
      ...(opts.tls !== undefined ? { tls: opts.tls } : {}),
      ...(opts.reusePort === true ? { reusePort: true } : {}),
    }, opts.handler);
    return { addr: s.addr, guarded: true, shutdown: s.shutdown };
  }
  const ready = Promise.withResolvers<Deno.NetAddr>();
  const server = Deno.serve({
    hostname: host,
    port,
    onListen: ready.resolve,
    ...(opts.reusePort === true ? { reusePort: true } : {}),
    ...opts.tls,
  }, opts.handler);
  return { addr: await ready.promise, guarded: false, shutdown: () => server.shutdown() };
}
