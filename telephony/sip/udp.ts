/**
 * A UDP endpoint over `Deno.listenDatagram` (needs `"unstable": ["net"]` in deno.json): one
 * bound socket, a receive loop feeding a callback, fire-and-forget sends, and a `close()`
 * that waits for in-flight sends and the loop so no async op outlives the endpoint.
 *
 * @example
 * ```ts
 * const ep = UdpEndpoint.open("127.0.0.1", 0);
 * ep.start((bytes, from) => console.log(bytes.length, "bytes from", from.port));
 * ep.send(new TextEncoder().encode("hello"), { hostname: "127.0.0.1", port: 5060 });
 * await ep.close();
 * ```
 * @module
 */

import { errorMessage, FlowcatError } from "../../core/errors.ts";
import { type Logger, silentLogger } from "../../core/log.ts";

/** The stream transports SIP runs over besides UDP. */
export type StreamTransport = "tcp" | "tls";

/** A peer's host and port: UDP, or TCP when `transport` says so. */
export interface UdpAddress {
  /** IP address (or a name Deno resolves). */
  hostname: string;
  /** Port, 1 to 65535. */
  port: number;
  /** `tcp` or `tls` for SIP over a stream (see tcp.ts); absent for UDP. */
  transport?: StreamTransport;
}

/** Called for every datagram; `bytes` is only valid during the call when a buffer is reused. */
export type DatagramHandler = (bytes: Uint8Array, from: UdpAddress) => void;

/** Largest datagram received; SIP over UDP and RTP stay far below it. */
const RECEIVE_BUFFER_BYTES = 65536;

/** One bound UDP socket. */
export class UdpEndpoint {
  /** The bound local address (the real port when 0 was asked for). */
  readonly local: UdpAddress;
  readonly #conn: Deno.DatagramConn;
  readonly #log: Logger;
  #loop: Promise<void> | undefined;
  #outbox: [Uint8Array, UdpAddress][] = [];
  #flushing: Promise<void> | undefined;
  #sending = false;
  #closed = false;
  /** Sends that failed (unreachable host, closed socket). */
  sendErrors = 0;

  private constructor(conn: Deno.DatagramConn, log: Logger) {
    this.#conn = conn;
    this.#log = log;
    const addr = conn.addr as Deno.NetAddr;
    this.local = { hostname: addr.hostname, port: addr.port };
  }

  /**
   * Bind `hostname:port` (port 0 picks a free one). Throws `Deno.errors.AddrInUse` when the
   * port is taken, so callers can probe the next one.
   */
  static open(hostname: string, port: number, log: Logger = silentLogger): UdpEndpoint {
    const conn = Deno.listenDatagram({ transport: "udp", hostname, port });
    return new UdpEndpoint(conn, log);
  }

  /** True once {@link close} has been called. */
  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Start the receive loop. With `reuseBuffer` every datagram is read into one buffer (the
   * handler must copy what it keeps); otherwise each datagram gets its own exact-size copy.
   */
  start(onDatagram: DatagramHandler, reuseBuffer = false): void {
    if (this.#loop !== undefined) return;
    this.#loop = this.#receiveLoop(onDatagram, reuseBuffer);
  }

  async #receiveLoop(onDatagram: DatagramHandler, reuseBuffer: boolean): Promise<void> {
    const buf = new Uint8Array(RECEIVE_BUFFER_BYTES);
    while (!this.#closed) {
      let bytes: Uint8Array;
      let addr: Deno.Addr;
      try {
        [bytes, addr] = await this.#conn.receive(buf);
      } catch (err) {
        if (!this.#closed) this.#log.warn("udp receive failed", { error: errorMessage(err) });
        return;
      }
      const net = addr as Deno.NetAddr;
      try {
        onDatagram(reuseBuffer ? bytes : bytes.slice(), {
          hostname: net.hostname,
          port: net.port,
        });
      } catch (err) {
        // A handler bug must not kill the socket: log and keep receiving.
        this.#log.error("udp datagram handler threw", { error: errorMessage(err) });
      }
    }
  }

  /**
   * Queue `bytes` for `to`; failures are counted and logged, never thrown. Sends go out one at
   * a time in call order (concurrent Deno sends may overtake each other, which would reorder
   * RTP and put a 180 before its 100), and the bytes are copied because callers such as the
   * RTP sender reuse their buffer.
   */
  send(bytes: Uint8Array, to: UdpAddress): void {
    if (this.#closed) return;
    this.#outbox.push([bytes.slice(), to]);
    if (!this.#sending) {
      this.#sending = true;
      this.#flushing = this.#flush();
    }
  }

  async #flush(): Promise<void> {
    // The loop's last empty check and the flag reset run in one synchronous step, so a send()
    // can never find #sending set by a loop that has already finished.
    try {
      for (let next = this.#outbox.shift(); next !== undefined; next = this.#outbox.shift()) {
        const [bytes, to] = next;
        try {
          await this.#conn.send(bytes, { transport: "udp", hostname: to.hostname, port: to.port });
        } catch (err) {
          this.sendErrors++;
          if (!this.#closed) {
            this.#log.debug("udp send failed", {
              to: `${to.hostname}:${to.port}`,
              error: errorMessage(err),
            });
          }
        }
      }
    } finally {
      this.#sending = false;
    }
  }

  /** Flush in-flight sends, close the socket and wait for the receive loop; idempotent. */
  async close(): Promise<void> {
    if (this.#closed) {
      await this.#loop;
      return;
    }
    // Whatever was queued (a BYE, an un-REGISTER) still goes out before the socket closes.
    await this.#flushing;
    this.#closed = true;
    try {
      this.#conn.close();
    } catch {
      // already closed
    }
    await this.#loop;
  }
}

/**
 * Bind the first free even port of `base, base+2, ...` (`tries` ports). Returns undefined when
 * all are taken; other errors (permissions) are thrown.
 */
export function openEvenPort(
  hostname: string,
  base: number,
  tries: number,
  log: Logger = silentLogger,
): UdpEndpoint | undefined {
  for (let i = 0; i < tries; i++) {
    const port = base + 2 * i;
    if (port > 65534) break;
    try {
      return UdpEndpoint.open(hostname, port, log);
    } catch (err) {
      if (err instanceof Deno.errors.AddrInUse) continue;
      throw err;
    }
  }
  return undefined;
}

/** Whether the missing RTCP grant was logged (once per process). */
let rtcpDeniedWarned = false;

/**
 * Bind the first free even port of `base, base+2, ...` whose odd neighbour is free too: RTP on
 * the even port, RTCP on the one above (RFC 3550 §11). Throws a FlowcatError when no pair is
 * free. When the sandbox grants the even port but not the odd one, the call runs without RTCP
 * (`rtcp` undefined, warned about once) rather than failing: RTCP is optional to the peer.
 */
export function openRtpPorts(
  hostname: string,
  base: number,
  tries: number,
  log: Logger = silentLogger,
): { rtp: UdpEndpoint; rtcp: UdpEndpoint | undefined } {
  for (let i = 0; i < tries; i++) {
    const port = base + 2 * i;
    if (port > 65534) break;
    const rtp = openEvenPort(hostname, port, 1, log);
    if (rtp === undefined) continue;
    try {
      return { rtp, rtcp: UdpEndpoint.open(hostname, rtp.local.port + 1, log) };
    } catch (err) {
      if (err instanceof Deno.errors.NotCapable || err instanceof Deno.errors.PermissionDenied) {
        if (!rtcpDeniedWarned) {
          rtcpDeniedWarned = true;
          log.warn("rtp: the RTCP port is not granted (--allow-net); calls run without RTCP", {
            port: rtp.local.port + 1,
          });
        }
        return { rtp, rtcp: undefined };
      }
      void rtp.close();
      if (!(err instanceof Deno.errors.AddrInUse)) throw err;
    }
  }
  const last = Math.min(65534, base + 2 * (tries - 1));
  throw new FlowcatError(
    "other",
    `RTP: all ${tries} even UDP ports ${base}..${last} on ${hostname} (or the odd RTCP port ` +
      `above) are in use; end some calls or raise rtpPortTries`,
  );
}
