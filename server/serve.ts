/**
 * The agent server's HTTP listener: `Deno.serve` behind the connection guard
 * (server/conn_guard.ts) when `server.guard.enabled` (the default), `Deno.serve` alone when a
 * proxy in front already enforces timeouts.
 *
 * @example
 * ```ts
 * const app = await createAgentServer({ config, env, logger });
 * const http = await serveAgentHttp({ config, handler: app.handler, logger });
 * console.log(`listening on port ${http.addr.port}`);
 * await http.shutdown();
 * ```
 * @module
 */

import type { Logger } from "../core/log.ts";
import type { AgentServerConfig } from "./config_types.ts";
import { type GuardLimits, serveGuarded, type ServeHandler } from "./conn_guard.ts";
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
  };
}

/** Listen on `config.server` and serve `handler`; throws when the address cannot be bound. */
export async function serveAgentHttp(opts: AgentHttpOptions): Promise<AgentHttp> {
  const { host, port } = opts.config.server;
  if (opts.config.server.guard.enabled) {
    const s = await serveGuarded({
      hostname: host,
      port,
      limits: guardLimits(opts.config),
      logger: opts.logger,
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
