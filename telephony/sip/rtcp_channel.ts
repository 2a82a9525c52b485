/**
 * The RTCP side of one call (RFC 3550 §6) on the port above its RTP port: a compound report
 * (SR or RR, SDES CNAME) every few seconds, randomized, and a BYE when the call ends; the
 * peer's reports are validated and counted, and its SR timing goes into our report block. With
 * SRTP every packet is SRTCP (RFC 3711 §3.4): ours protected, the peer's authenticated and
 * replay-checked before anything reads them. Reports go to the port above the peer's RTP port,
 * or to where its RTCP comes from once it has sent some from the RTP host (symmetric RTCP, for
 * NAT).
 * @module
 */

import type { SrtpKeyMaterial } from "./srtp.ts";
import { SrtpContext } from "./srtp.ts";
import { encodeCompound, parseCompound, ReceiveStats, type SenderInfo } from "./rtcp_packets.ts";
import type { UdpAddress, UdpEndpoint } from "./udp.ts";

/** Counters of an {@link RtcpChannel}. */
export interface RtcpStats {
  /** Compound packets sent. */
  sent: number;
  /** Valid compound packets received (authenticated first with SRTCP). */
  received: number;
  /** Datagrams that are not valid RTCP, or from a host other than the peer's. */
  malformed: number;
  /** SRTCP packets whose authentication tag did not match, dropped. */
  authFailed: number;
  /** SRTCP packets replaying an index already received, dropped. */
  replayed: number;
  /** Whether the peer said BYE. */
  peerBye: boolean;
}

/** The counters of a session whose RTCP has not started. */
export const NO_RTCP_STATS: Readonly<RtcpStats> = Object.freeze({
  sent: 0,
  received: 0,
  malformed: 0,
  authFailed: 0,
  replayed: 0,
  peerBye: false,
});

/** What the channel reads from the RTP session. */
export interface RtcpSource {
  /** Our SSRC. */
  ssrc: number;
  /** Where RTP goes now (the latched peer address). */
  remote(): UdpAddress | undefined;
  /** What we sent so far. */
  sent(): SenderInfo;
}

/** RTCP of one call. */
export class RtcpChannel {
  /** Statistics of the peer's RTP stream (fed by the RTP session). */
  readonly receive: ReceiveStats = new ReceiveStats();
  readonly #ep: UdpEndpoint;
  readonly #src: RtcpSource;
  readonly #cname: string;
  readonly #intervalMs: number;
  #out: SrtpContext | undefined;
  #in: SrtpContext | undefined;
  /** SRTCP contexts replaced by a re-key: their drops still count. */
  #retired = { malformed: 0, authFailed: 0, replayed: 0 };
  #peerRtcp: UdpAddress | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;
  #counts = { sent: 0, received: 0, malformed: 0, peerBye: false };
  #reportedPackets = 0;

  /** Report on `ep` every `intervalMs` (randomized ±50 %), SRTCP with `srtp` when given. */
  constructor(
    ep: UdpEndpoint,
    src: RtcpSource,
    intervalMs: number,
    srtp?: { send: SrtpKeyMaterial; receive: SrtpKeyMaterial },
  ) {
    this.#ep = ep;
    this.#src = src;
    this.#cname = `flowcat-${src.ssrc.toString(16)}@${ep.local.hostname}`;
    this.#intervalMs = intervalMs;
    if (srtp !== undefined) {
      this.#out = new SrtpContext(srtp.send);
      this.#in = new SrtpContext(srtp.receive);
    }
    ep.start(this.#onDatagram);
    // The first report after half an interval (RFC 3550 §6.2: the initial one may come early).
    this.#schedule(0.5);
  }

  /** The local RTCP port. */
  get port(): number {
    return this.#ep.local.port;
  }

  /** Counters so far. */
  get stats(): RtcpStats {
    const s = this.#in?.stats;
    return {
      ...this.#counts,
      malformed: this.#counts.malformed + this.#retired.malformed + (s?.malformed ?? 0),
      authFailed: this.#retired.authFailed + (s?.authFailed ?? 0),
      replayed: this.#retired.replayed + (s?.replayed ?? 0),
    };
  }

  /** The peer re-keyed (re-INVITE): authenticate its SRTCP with the new key. */
  rekey(receive: SrtpKeyMaterial): void {
    const s = this.#in?.stats;
    if (s !== undefined) {
      this.#retired.malformed += s.malformed;
      this.#retired.authFailed += s.authFailed;
      this.#retired.replayed += s.replayed;
    }
    this.#in = new SrtpContext(receive);
  }

  #schedule(scale: number): void {
    if (this.#closed) return;
    const ms = this.#intervalMs * scale * (0.5 + Math.random());
    this.#timer = setTimeout(() => {
      this.#send(false);
      this.#schedule(1);
    }, ms);
  }

  #destination(): UdpAddress | undefined {
    const rtp = this.#src.remote();
    if (rtp === undefined) return undefined;
    if (this.#peerRtcp?.hostname === rtp.hostname) return this.#peerRtcp;
    return { hostname: rtp.hostname, port: rtp.port + 1 };
  }

  #send(bye: boolean): void {
    const to = this.#destination();
    if (to === undefined) return;
    const now = Date.now();
    // An SR only when we sent since the last report (RFC 3550 §6.4), else an RR.
    const sent = this.#src.sent();
    const sender = sent.packets === this.#reportedPackets ? undefined : sent;
    this.#reportedPackets = sent.packets;
    const rtcp = encodeCompound(
      this.#src.ssrc,
      this.#cname,
      now,
      sender,
      this.receive.report(now),
      bye,
    );
    this.#ep.send(this.#out === undefined ? rtcp : this.#out.protectRtcp(rtcp), to);
    this.#counts.sent++;
  }

  #onDatagram = (datagram: Uint8Array, from: UdpAddress): void => {
    if (this.#closed) return;
    const rtp = this.#src.remote();
    if (rtp === undefined || from.hostname !== rtp.hostname) {
      this.#counts.malformed++;
      return;
    }
    const bytes = this.#in === undefined ? datagram : this.#in.unprotectRtcp(datagram);
    if (bytes === undefined) return; // counted by the SRTP context (short, auth, replay)
    const r = parseCompound(bytes);
    if (r === undefined) {
      this.#counts.malformed++;
      return;
    }
    this.#counts.received++;
    this.#peerRtcp = from;
    if (r.srNtpMiddle !== undefined) this.receive.onSenderReport(r.srNtpMiddle, Date.now());
    if (r.bye) this.#counts.peerBye = true;
  };

  /** Send a last report with BYE (RFC 3550 §6.6), stop and release the port; idempotent. */
  async close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      clearTimeout(this.#timer);
      if (this.#counts.sent > 0 || this.#counts.received > 0) this.#send(true);
    }
    await this.#ep.close();
  }
}
