/**
 * Inbound RTP source checks: the symmetric-RTP filter that drops packets from unexpected
 * addresses (RTP from an unexpected source address is dropped). Reordering, loss and
 * jitter are the shared playout buffer's (core/audio/jitter_buffer.ts), as on the WebRTC leg.
 * @module
 */

/** A UDP source or destination. */
export interface RtpAddress {
  /** IP address or host name. */
  hostname: string;
  /** UDP port. */
  port: number;
}

/**
 * Symmetric-RTP latching policy: `off` accepts only the SDP address and port; `port` (default)
 * requires the SDP IP but latches onto the first source port seen (NAT rewrites ports);
 * `any` latches onto the first source of any address (trunk media from another IP).
 */
export type LatchMode = "off" | "port" | "any";

function normHost(host: string): string {
  const h = host.toLowerCase();
  return h.startsWith("::ffff:") && h.includes(".") ? h.slice(7) : h.replace(/^\[(.*)\]$/, "$1");
}

/**
 * Drops RTP from unexpected sources, and tells where to send (the latched source once known).
 *
 * @example
 * ```ts
 * import { RtpSourceFilter } from "@flowcat/flowcat/sip";
 * declare const socket: { send(packet: Uint8Array, to: RtpSourceFilter["remote"]): void };
 * declare const pkt: Uint8Array;
 * declare const remoteAddr: Deno.NetAddr;
 * function onPacket(): void {
 *   const filter = new RtpSourceFilter({ hostname: "203.0.113.5", port: 30000 });
 *   if (!filter.accept(remoteAddr)) return; // dropped and counted in filter.dropped
 *   socket.send(pkt, filter.remote);
 * }
 * ```
 */
export class RtpSourceFilter {
  /** Packets rejected so far. */
  dropped = 0;
  #expected: RtpAddress;
  #latched: RtpAddress | undefined;
  readonly #mode: LatchMode;

  /** A filter expecting media from `expected` (the SDP c=/m= address). */
  constructor(expected: RtpAddress, mode: LatchMode = "port") {
    this.#expected = { hostname: normHost(expected.hostname), port: expected.port };
    this.#mode = mode;
  }

  /** Where to send RTP: the latched source, else the SDP address. */
  get remote(): RtpAddress {
    return this.#latched ?? this.#expected;
  }

  /** True once a source has been latched. */
  get latched(): boolean {
    return this.#latched !== undefined;
  }

  /** The peer changed its SDP (re-INVITE): expect `addr` and forget the latch. */
  expect(addr: RtpAddress): void {
    this.#expected = { hostname: normHost(addr.hostname), port: addr.port };
    this.#latched = undefined;
  }

  /** True when a packet from `source` should be processed; false (and counted) otherwise. */
  accept(source: RtpAddress): boolean {
    const host = normHost(source.hostname);
    const want = this.#latched ?? this.#expected;
    const exact = host === want.hostname && source.port === want.port;
    if (exact && (this.#latched !== undefined || this.#mode === "off")) return true;
    // The first acceptable source is latched, so a later packet from elsewhere cannot steal it.
    if (this.#latched === undefined && this.#mode !== "off") {
      if (exact || this.#mode === "any" || host === this.#expected.hostname) {
        this.#latched = { hostname: host, port: source.port };
        return true;
      }
    }
    this.dropped++;
    return false;
  }
}
