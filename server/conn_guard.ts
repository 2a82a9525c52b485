// Over 400 lines: one connection's deadlines and caps, over state its handlers share.
/**
 * The connection guard: what `Deno.serve` lacks in front of an exposed server. Deno's HTTP
 * server has no header-read or idle timeout and no WebSocket message cap (it buffers a whole
 * message before JavaScript sees it), so the guard accepts connections on the public address
 * itself (TLS terminated here), then passes their bytes to the real `Deno.serve` on an
 * ephemeral loopback port, enforcing on the way:
 *
 * - a deadline for each request head (slow headers are cut, 408) and a size cap (431);
 * - a cap on connections still waiting for their first request head, in all and per client
 *   address: beyond it, the oldest that have waited a second are closed (a slow-loris holds at
 *   most that many; a burst of real connections, whose heads arrive in milliseconds, and any
 *   new client still get through);
 * - an idle timeout for keep-alive connections between requests, and a deadline for each
 *   request body (one trickling in a byte at a time would otherwise hold its connection);
 * - on upgraded (WebSocket) connections, a cap on each inbound message's length, read from the
 *   frame headers (server/guard_stream.ts): a longer message drops the connection before its
 *   bytes reach Deno.
 *
 * The handler sees the real client address (a lookup by the loopback hop's port) and, behind
 * TLS, an `https:` request URL. WebRTC and SIP (UDP) do not pass here. Turn it off with
 * `server.guard.enabled: false` behind a proxy that already enforces timeouts.
 * @module
 */

import type { Logger } from "../core/log.ts";
import { rateLimitedLogger } from "../core/log_limit.ts";
import { FEED_HEAD_TOO_LARGE, FEED_OK, RequestStream, StreamState } from "./guard_stream.ts";
import type { TlsPem } from "./tls.ts";
import {
  asHttps,
  clientKey,
  GUARD_HOP_HOST,
  listenPublic,
  serveHop,
  startsWith,
  writeAll,
} from "./guard_net.ts";

/** The guard's limits (`server.guard` in the config). */
export interface GuardLimits {
  /** A request head must be complete this long after the connection or its first byte, ms. */
  headerTimeoutMs: number;
  /** A keep-alive connection with no request for this long is closed, ms. */
  idleTimeoutMs: number;
  /** Largest request head, bytes. */
  maxHeaderBytes: number;
  /** Connections waiting for their first request head, in all. */
  maxPending: number;
  /** Connections waiting for their first request head, per client address. */
  maxPendingPerClient: number;
  /** Largest inbound WebSocket message, bytes. */
  maxMessageBytes: number;
  /** A request body must be complete this long after its head, ms. */
  bodyTimeoutMs: number;
}

/** Why the guard cut or refused a connection (the `reason` of its metric). */
export type GuardCut =
  | "header_timeout"
  | "header_too_large"
  | "body_timeout"
  | "bad_framing"
  | "message_too_big"
  | "pending"
  | "pending_client";

/** Options of {@link serveGuarded}. */
export interface GuardedServeOptions {
  /** Public listen address. */
  hostname: string;
  /** Public listen port (0: any free one). */
  port: number;
  /** Share the port with other listeners (`--workers`). */
  reusePort?: boolean;
  /** Terminate HTTPS here with this certificate and key. */
  tls?: TlsPem;
  /** Port of the loopback hop to `Deno.serve` (default 0: an ephemeral one). */
  hopPort?: number;
  /** The limits enforced. */
  limits: GuardLimits;
  /** Where cut and refused connections are said (rate limited). */
  logger: Logger;
  /** Told of each connection cut or refused (a metric counts them). */
  onCut?: (reason: GuardCut) => void;
}

/** A guarded server: the public listener and the `Deno.serve` behind it. */
export interface GuardedServer {
  /** The public address. */
  addr: Deno.NetAddr;
  /** Stop accepting, let the server finish what it has, close every connection. */
  shutdown(): Promise<void>;
}

/** The handler `Deno.serve` would get. */
export type ServeHandler = (
  req: Request,
  info: Deno.ServeHandlerInfo,
) => Response | Promise<Response>;

/**
 * Read buffer per direction and connection: 4 KiB holds a carrier media message or a request
 * head; a read that fills it (a large body or response) moves that direction to 64 KiB, so
 * thousands of media sockets cost 8 KiB each and bulk transfers few reads.
 */
const READ_BYTES = 4 * 1024;
const READ_BYTES_BULK = 64 * 1024;
/** A connection waiting for its head this long may be closed to bring its client under the cap. */
const EVICT_AFTER_MS = 1000;
/** How often deadlines are checked, ms. */
const SWEEP_MS = 250;
const encoder = new TextEncoder();
const STATUS_101 = encoder.encode("HTTP/1.1 101");

interface Guarded {
  client: Deno.Conn;
  upstream: Deno.TcpConn | undefined;
  /** The client address as the handler sees it. */
  remote: Deno.NetAddr;
  /** Key the per-client cap counts by. */
  clientKey: string;
  secure: boolean;
  stream: RequestStream;
  /** Still waiting for its first request head. */
  pending: boolean;
  /** A request was passed on and no byte of its answer came back yet. */
  awaiting: boolean;
  /** When the connection was accepted (performance.now). */
  acceptedAt: number;
  /** When the connection last carried a byte (performance.now). */
  lastActivity: number;
  /** When the head in progress started (0: none). */
  headStart: number;
  /** When the request body in progress started (its head's end). */
  bodyStart: number;
  /** Resolves when the server answered an upgrade request. */
  upgradeAnswered: PromiseWithResolvers<void> | undefined;
  closed: boolean;
}

/**
 * Listen on the public address and serve `handler` through the guard. Throws (like
 * `Deno.serve`) when the address cannot be bound.
 */
export async function serveGuarded(
  opts: GuardedServeOptions,
  handler: ServeHandler,
): Promise<GuardedServer> {
  const { limits } = opts;
  const log = opts.logger;
  const refusals = rateLimitedLogger(log, { intervalMs: 10_000 });
  const cut = opts.onCut ?? (() => {});
  /** Connections by the local port of their loopback hop (what the handler sees). */
  const byHop = new Map<number, Guarded>();
  /** Connections waiting for their first head, oldest first; and per client key. */
  const pending = new Set<Guarded>();
  const pendingByClient = new Map<string, Set<Guarded>>();
  /** Connections with a deadline (not upgraded), swept. */
  const timed = new Set<Guarded>();
  const all = new Set<Guarded>();

  const listening = Promise.withResolvers<void>();
  const inner = serveHop(opts.hopPort ?? 0, listening.resolve, (req, info) => {
    const g = byHop.get(info.remoteAddr.port);
    // Only the guard's own hops are served: a local process cannot go around it.
    if (g === undefined) return new Response("not through the guard\n", { status: 403 });
    const real = { remoteAddr: g.remote, completed: info.completed };
    // Behind TLS the URL says https (Origin checks compare it). An upgrade keeps the
    // original request, which Deno.upgradeWebSocket needs.
    if (g.secure && req.headers.get("upgrade") === null) return handler(asHttps(req), real);
    return handler(req, real);
  });
  await listening.promise;
  const innerPort = inner.addr.port;

  let listener: Deno.Listener;
  try {
    listener = listenPublic(opts);
  } catch (e) {
    await inner.shutdown();
    throw e;
  }

  const unpend = (g: Guarded) => {
    if (!g.pending) return;
    g.pending = false;
    pending.delete(g);
    const set = pendingByClient.get(g.clientKey);
    set?.delete(g);
    if (set?.size === 0) pendingByClient.delete(g.clientKey);
  };

  const close = (g: Guarded) => {
    if (g.closed) return;
    g.closed = true;
    unpend(g);
    timed.delete(g);
    all.delete(g);
    try {
      g.client.close();
    } catch { /* already closed */ }
    if (g.upstream !== undefined) {
      byHop.delete((g.upstream.localAddr as Deno.NetAddr).port);
      try {
        g.upstream.close();
      } catch { /* already closed */ }
    }
    g.upgradeAnswered?.resolve();
  };

  /**
   * Answer `status` (when no other answer is on its way) and close. A client that does not
   * read (or never finished its TLS handshake) gets a second, then is closed all the same.
   */
  const refuse = async (g: Guarded, status: number, text: string) => {
    if (!g.awaiting && g.stream.state !== StreamState.WebSocket && !g.closed) {
      const head = `HTTP/1.1 ${status} ${text}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`;
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        writeAll(g.client, encoder.encode(head)).catch(() => {}),
        new Promise<void>((r) => (timer = setTimeout(r, 1000))),
      ]);
      clearTimeout(timer);
    }
    close(g);
  };

  /**
   * Close the oldest of `set` that have waited at least {@link EVICT_AFTER_MS} until at most
   * `cap` are left: a burst of connections (a gateway opening many sockets at once) is let in,
   * a slow-loris keeps at most `cap` connections waiting.
   */
  const trim = (set: Set<Guarded>, cap: number, now: number, what: string, why: GuardCut) => {
    let closed = 0;
    for (const g of set) {
      if (set.size <= cap || now - g.acceptedAt < EVICT_AFTER_MS) break;
      close(g);
      cut(why);
      closed++;
    }
    if (closed > 0) refusals.info(what, { closed, cap });
  };

  const sweep = () => {
    const now = performance.now();
    if (pending.size > limits.maxPending) {
      const what = "connections closed: too many waiting for headers";
      trim(pending, limits.maxPending, now, what, "pending");
    }
    for (const set of pendingByClient.values()) {
      if (set.size <= limits.maxPendingPerClient) continue;
      const what = "connections closed: too many waiting for headers from one client";
      trim(set, limits.maxPendingPerClient, now, what, "pending_client");
    }
    for (const g of timed) {
      const s = g.stream;
      if (s.state === StreamState.UpgradeWait) continue;
      if (s.state === StreamState.Head && (g.pending || s.headBytes > 0)) {
        // A first head counts from the connection (a TLS handshake included), later ones
        // from their first byte.
        const since = g.pending ? g.acceptedAt : g.headStart;
        if (now - since > limits.headerTimeoutMs) {
          refusals.info("connection cut: request head not complete in time", {
            client: g.remote.hostname,
            timeoutMs: limits.headerTimeoutMs,
          });
          cut("header_timeout");
          // Nothing received at all: nothing to answer.
          if (s.headBytes === 0) close(g);
          else void refuse(g, 408, "Request Timeout");
        }
      } else if (s.state === StreamState.Head && g.awaiting) {
        continue; // the handler has the request
      } else if (s.state !== StreamState.Head && now - g.bodyStart > limits.bodyTimeoutMs) {
        // A body trickling in under the idle timeout would hold the connection for ever.
        refusals.info("connection cut: request body not complete in time", {
          client: g.remote.hostname,
          timeoutMs: limits.bodyTimeoutMs,
        });
        cut("body_timeout");
        // The handler has the request: its answer, if any, is the one the client gets.
        close(g);
      } else if (now - g.lastActivity > limits.idleTimeoutMs) close(g);
    }
  };
  const sweeper = setInterval(sweep, SWEEP_MS);
  Deno.unrefTimer(sweeper);

  /** Client to server: follow the framing, cut what breaks a limit. */
  const pumpIn = async (g: Guarded, up: Deno.TcpConn) => {
    let buf = new Uint8Array(READ_BYTES);
    const s = g.stream;
    for (;;) {
      if (s.state === StreamState.UpgradeWait) {
        g.upgradeAnswered = Promise.withResolvers<void>();
        await g.upgradeAnswered.promise;
        g.upgradeAnswered = undefined;
        if (g.closed) return;
      }
      let n: number | null;
      try {
        n = await g.client.read(buf);
      } catch {
        n = null;
      }
      if (n === null || g.closed) break;
      const heads = s.heads;
      const verdict = s.feed(buf, n);
      if (verdict !== FEED_OK) {
        if (verdict === FEED_HEAD_TOO_LARGE) {
          refusals.info("connection cut: request head too large", {
            client: g.remote.hostname,
            maxHeaderBytes: limits.maxHeaderBytes,
          });
          cut("header_too_large");
          return void await refuse(g, 431, "Request Header Fields Too Large");
        }
        if (s.state === StreamState.WebSocket) {
          log.warn("websocket message over the cap; connection dropped", {
            client: g.remote.hostname,
            bytes: s.refusedMessageBytes,
            maxBytes: limits.maxMessageBytes,
          });
          cut("message_too_big");
          return close(g);
        }
        refusals.info("connection cut: request framing refused", { client: g.remote.hostname });
        cut("bad_framing");
        return void await refuse(g, 400, "Bad Request");
      }
      if (s.state !== StreamState.WebSocket) {
        const now = performance.now();
        g.lastActivity = now;
        if (s.heads !== heads) {
          unpend(g);
          g.awaiting = true;
          g.headStart = 0;
          g.bodyStart = now;
        }
        if (s.headBytes > 0 && g.headStart === 0) g.headStart = now;
      }
      try {
        // The whole read in one write, as a rule; a short write is finished below.
        const wrote = await up.write(buf.subarray(0, n));
        if (wrote < n) await writeAll(up, buf.subarray(wrote, n));
      } catch {
        break;
      }
      if (n === buf.length && n < READ_BYTES_BULK) buf = new Uint8Array(READ_BYTES_BULK);
    }
    try {
      await up.closeWrite();
    } catch {
      close(g);
    }
  };

  /** Server to client: note answers (an upgrade's 101 switches the framing), pass on. */
  const pumpOut = async (g: Guarded, up: Deno.TcpConn) => {
    let buf = new Uint8Array(READ_BYTES);
    for (;;) {
      let n: number | null;
      try {
        n = await up.read(buf);
      } catch {
        n = null;
      }
      if (n === null || g.closed) break;
      if (g.awaiting) {
        g.awaiting = false;
        if (g.stream.state === StreamState.UpgradeWait) {
          const upgraded = startsWith(buf, n, STATUS_101);
          g.stream.answered(upgraded);
          if (upgraded) timed.delete(g);
          g.upgradeAnswered?.resolve();
        }
      }
      if (g.stream.state !== StreamState.WebSocket) g.lastActivity = performance.now();
      try {
        const wrote = await g.client.write(buf.subarray(0, n));
        if (wrote < n) await writeAll(g.client, buf.subarray(wrote, n));
      } catch {
        break;
      }
      if (n === buf.length && n < READ_BYTES_BULK) buf = new Uint8Array(READ_BYTES_BULK);
    }
    close(g);
  };

  const admit = (g: Guarded) => {
    pending.add(g);
    let mine = pendingByClient.get(g.clientKey);
    if (mine === undefined) pendingByClient.set(g.clientKey, mine = new Set());
    mine.add(g);
    timed.add(g);
    all.add(g);
  };

  const serveConn = async (client: Deno.Conn) => {
    const remote = client.remoteAddr as Deno.NetAddr;
    const now = performance.now();
    const g: Guarded = {
      client,
      upstream: undefined,
      remote,
      clientKey: clientKey(remote.hostname),
      secure: opts.tls !== undefined,
      stream: new RequestStream({
        maxHeadBytes: limits.maxHeaderBytes,
        maxMessageBytes: limits.maxMessageBytes,
      }),
      pending: true,
      awaiting: false,
      acceptedAt: now,
      lastActivity: now,
      headStart: 0,
      bodyStart: 0,
      upgradeAnswered: undefined,
      closed: false,
    };
    admit(g);
    let up: Deno.TcpConn;
    try {
      up = await Deno.connect({ hostname: GUARD_HOP_HOST, port: innerPort });
    } catch (e) {
      log.error("connection guard: cannot reach the server behind it", { err: String(e) });
      return close(g);
    }
    if (g.closed) return void up.close();
    g.upstream = up;
    byHop.set((up.localAddr as Deno.NetAddr).port, g);
    await Promise.all([pumpIn(g, up), pumpOut(g, up)]);
    close(g);
  };

  const accepting = (async () => {
    for (;;) {
      let conn: Deno.Conn;
      try {
        conn = await listener.accept();
      } catch (e) {
        if (e instanceof Deno.errors.BadResource || e instanceof Deno.errors.Interrupted) return;
        // Out of descriptors or a connection reset before accept: not the end of serving.
        await new Promise((r) => setTimeout(r, 50));
        continue;
      }
      void serveConn(conn);
    }
  })();

  return {
    addr: listener.addr as Deno.NetAddr,
    shutdown: async () => {
      listener.close();
      await accepting;
      clearInterval(sweeper);
      // Connections between requests are closed now; the server finishes the others.
      for (const g of all) if (!g.awaiting && g.stream.state === StreamState.Head) close(g);
      await inner.shutdown();
      for (const g of all) close(g);
      refusals.close();
    },
  };
}
