/**
 * SIP over TCP or TLS (RFC 3261 §18, §26.2): a listener on the signalling port, and one connection per peer
 * address, reused both ways: responses go back on the connection their request came in on, and
 * requests to an address we already have a connection with take it; otherwise one is opened.
 * Messages are framed by `Content-Length` ({@link SipStreamFramer}); a broken stream closes its
 * connection. Addresses that came over TCP carry `transport: "tcp"`, so the agent sends back
 * the same way.
 *
 * @module
 */

import { errorMessage } from "../../core/errors.ts";
import { type Logger, silentLogger } from "../../core/log.ts";
import { type StreamIdlePolicy, StreamUse } from "./stream_idle.ts";
import { SipStreamFramer } from "./stream_framer.ts";
import type { DatagramHandler, StreamTransport, UdpAddress } from "./udp.ts";

/** Certificate and key (PEM) a TLS listener presents, and the roots a TLS client trusts. */
export interface SipTlsOptions {
  /** Certificate chain, PEM; with `key`, the agent accepts SIP over TLS. */
  cert?: string;
  /** Private key, PEM. */
  key?: string;
  /** Roots trusted for servers we connect to, PEM; default the system's. */
  caCerts?: string[];
}

/** A connection's reader, its queue of writes (kept in order) and what used it. */
interface Connection {
  conn: Deno.Conn;
  writes: Promise<void>;
  reader?: Promise<void>;
  use: StreamUse;
}

/**
 * What {@link SipTcpTransport.send} writes: bytes, or a message encoded once the connection is
 * known, given the port our Via's sent-by must name (RFC 3261 §18.1.1): the listening port,
 * or the connection's own local port when we do not listen.
 */
export type StreamPayload = Uint8Array | ((sentByPort: number) => Uint8Array);

const CRLF = new Uint8Array([13, 10]);

function keyOf(a: UdpAddress): string {
  return `${a.hostname}|${a.port}`;
}

/** SIP over TCP or TLS on one local address. */
export class SipTcpTransport {
  /** `tcp` or `tls`. */
  readonly kind: StreamTransport;
  /** The listening address. */
  readonly local: UdpAddress;
  readonly #listener: Deno.Listener | undefined;
  readonly #dial: (to: UdpAddress) => Promise<Deno.Conn>;
  readonly #log: Logger;
  readonly #conns = new Map<string, Connection>();
  readonly #pending = new Map<string, Promise<Connection | undefined>>();
  #handler: DatagramHandler | undefined;
  #onUnreachable: ((to: UdpAddress) => void) | undefined;
  #accepting: Promise<void> | undefined;
  #idleTimer: ReturnType<typeof setInterval> | undefined;
  #closed = false;
  /** Connections refused, broken or failed writes. */
  errors = 0;

  private constructor(
    kind: StreamTransport,
    listener: Deno.Listener | undefined,
    dial: (to: UdpAddress) => Promise<Deno.Conn>,
    log: Logger,
  ) {
    this.kind = kind;
    this.#listener = listener;
    this.#dial = dial;
    this.#log = log;
    const addr = listener?.addr as Deno.NetAddr | undefined;
    this.local = { hostname: addr?.hostname ?? "0.0.0.0", port: addr?.port ?? 0, transport: kind };
  }

  /** Listen on `hostname:port`. Throws `Deno.errors.AddrInUse` when it is taken. */
  static listen(hostname: string, port: number, log: Logger = silentLogger): SipTcpTransport {
    return new SipTcpTransport(
      "tcp",
      Deno.listen({ hostname, port, transport: "tcp" }),
      (to) => Deno.connect({ hostname: to.hostname, port: to.port, transport: "tcp" }),
      log,
    );
  }

  /**
   * SIP over TLS: listen on `hostname:port` when `tls` has a certificate and key (else only
   * connect out), and verify servers against `tls.caCerts` or the system roots.
   */
  static tls(
    hostname: string,
    port: number,
    tls: SipTlsOptions,
    log: Logger = silentLogger,
  ): SipTcpTransport {
    const listener = tls.cert !== undefined && tls.key !== undefined
      ? Deno.listenTls({ hostname, port, transport: "tcp", cert: tls.cert, key: tls.key })
      : undefined;
    return new SipTcpTransport(
      "tls",
      listener,
      async (to) => {
        const conn = await Deno.connectTls({
          hostname: to.hostname,
          port: to.port,
          caCerts: tls.caCerts,
        });
        // Verify the server now, so a bad certificate fails the connect and is logged as such.
        try {
          await conn.handshake();
        } catch (err) {
          conn.close();
          throw err;
        }
        return conn;
      },
      log,
    );
  }

  /**
   * Start accepting; every whole message goes to `handler` with its peer's address, and a
   * connection that cannot be opened (refused, certificate not trusted) to `onUnreachable`.
   * With `idle`, connections quiet past `idle.idleMs` that carry no live Call-ID are closed.
   */
  start(
    handler: DatagramHandler,
    onUnreachable?: (to: UdpAddress) => void,
    idle?: StreamIdlePolicy,
  ): void {
    this.#handler = handler;
    this.#onUnreachable = onUnreachable;
    if (idle !== undefined && idle.idleMs > 0) {
      const every = Math.min(30_000, Math.max(50, Math.floor(idle.idleMs / 4)));
      const timer = setInterval(() => this.closeIdle(idle), every);
      Deno.unrefTimer(timer);
      this.#idleTimer = timer;
    }
    const listener = this.#listener;
    if (listener === undefined) return;
    this.#accepting = (async () => {
      for (;;) {
        let conn: Deno.Conn;
        try {
          conn = await listener.accept();
        } catch {
          return; // listener closed
        }
        const remote = conn.remoteAddr as Deno.NetAddr;
        this.#adopt({ hostname: remote.hostname, port: remote.port, transport: this.kind }, conn);
      }
    })();
  }

  /** Open connections (for tests and diagnostics). */
  get connections(): number {
    return this.#conns.size;
  }

  /** Close the connections `policy` finds idle; returns how many. */
  closeIdle(policy: StreamIdlePolicy, now: number = Date.now()): number {
    let closed = 0;
    for (const [key, c] of this.#conns) {
      if (!c.use.idle(policy, now)) continue;
      this.#conns.delete(key);
      closed++;
      this.#log.debug(`sip ${this.kind} connection idle; closing`, { peer: key });
      void c.writes.then(() => {
        try {
          c.conn.close();
        } catch {
          // already closed
        }
      });
    }
    return closed;
  }

  #adopt(peer: UdpAddress, conn: Deno.Conn): Connection {
    const c: Connection = { conn, writes: Promise.resolve(), use: new StreamUse() };
    this.#conns.set(keyOf(peer), c);
    c.reader = this.#read(peer, c);
    return c;
  }

  async #read(peer: UdpAddress, c: Connection): Promise<void> {
    const framer = new SipStreamFramer();
    const buf = new Uint8Array(16384);
    try {
      for (;;) {
        const n = await c.conn.read(buf);
        if (n === null) break;
        const out = framer.push(buf.subarray(0, n));
        for (const m of out.messages) {
          c.use.saw(m);
          try {
            this.#handler?.(m, peer);
          } catch (err) {
            this.#log.error("sip tcp message handler threw", { error: errorMessage(err) });
          }
        }
        for (let i = 0; i < out.pings; i++) this.#write(c, CRLF);
        if (out.error !== undefined) {
          this.errors++;
          this.#log.info("sip tcp stream broken; closing", {
            peer: `${peer.hostname}:${peer.port}`,
            reason: out.error,
          });
          break;
        }
      }
    } catch {
      // reset by the peer or closed by us
    } finally {
      if (this.#conns.get(keyOf(peer)) === c) this.#conns.delete(keyOf(peer));
      try {
        c.conn.close();
      } catch {
        // already closed
      }
    }
  }

  #write(c: Connection, payload: StreamPayload): void {
    c.writes = c.writes.then(async () => {
      const bytes = typeof payload === "function" ? payload(this.#sentByPort(c)) : payload;
      c.use.saw(bytes);
      let off = 0;
      while (off < bytes.length) off += await c.conn.write(bytes.subarray(off));
    }).catch((err) => {
      this.errors++;
      this.#log.debug("sip tcp write failed", { error: errorMessage(err) });
    });
  }

  #sentByPort(c: Connection): number {
    if (this.#listener !== undefined) return this.local.port;
    return (c.conn.localAddr as Deno.NetAddr).port;
  }

  /**
   * Send `payload` to `to` over the connection we have with it, opening one when there is none.
   * Never throws: failures are counted and logged.
   */
  send(payload: StreamPayload, to: UdpAddress): void {
    if (this.#closed) return;
    const copy = typeof payload === "function" ? payload : payload.slice();
    const c = this.#conns.get(keyOf(to));
    if (c !== undefined) {
      this.#write(c, copy);
      return;
    }
    let pending = this.#pending.get(keyOf(to));
    if (pending === undefined) {
      pending = this.#dial(to)
        .then((conn) => {
          if (this.#closed) {
            conn.close();
            return undefined;
          }
          return this.#adopt({ ...to, transport: this.kind }, conn);
        })
        .catch((err) => {
          this.errors++;
          this.#log.info(`sip ${this.kind} connect failed`, {
            to: `${to.hostname}:${to.port}`,
            error: errorMessage(err),
          });
          this.#onUnreachable?.({ ...to, transport: this.kind });
          return undefined;
        })
        .finally(() => this.#pending.delete(keyOf(to)));
      this.#pending.set(keyOf(to), pending);
    }
    void pending.then((conn) => {
      if (conn !== undefined) this.#write(conn, copy);
    });
  }

  /** Close the listener and every connection, and wait for their loops; idempotent. */
  async close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      clearInterval(this.#idleTimer);
      try {
        this.#listener?.close();
      } catch {
        // already closed
      }
    }
    await Promise.allSettled([...this.#pending.values()]);
    const conns = [...this.#conns.values()];
    await Promise.allSettled(conns.map((c) => c.writes));
    for (const c of conns) {
      try {
        c.conn.close();
      } catch {
        // already closed
      }
    }
    await Promise.allSettled([this.#accepting, ...conns.map((c) => c.reader)]);
  }
}
