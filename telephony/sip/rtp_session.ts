// Over 400 lines: one call's RTP: receive, jitter, keys and paced send share a socket.
/**
 * One call's RTP media over UDP (RFC 3550): binds the first free even port from the base,
 * receives G.711 through the symmetric-RTP source filter and the reordering jitter buffer
 * (lost packets concealed by a fading repeat of the last frame), reports RFC 4733 key presses,
 * and sends 20 ms PCMU/PCMA packets and RFC 4733 events. Outbound packets leave on the shared
 * 20 ms RTP clock ({@link RtpPacer}): queued voice first, else silence, so the cadence and the
 * timestamps follow the wall clock whether the agent speaks or not, and trunks that tear down
 * silent calls keep the call up. When SDP negotiated SRTP (SDES), every packet is protected on
 * the way out and authenticated, replay-checked and decrypted on the way in, before the source
 * filter sees it, so an unauthenticated packet can never move the latched address.
 *
 * @example
 * ```ts
 * import { type NegotiatedMedia, RtpSession } from "@flowcat/flowcat/sip";
 * declare const negotiatedMedia: NegotiatedMedia;
 * declare const pcm8k: Int16Array;
 * declare function play(pcm: Int16Array): void;
 * declare function press(key: string): void;
 * const rtp = RtpSession.open({ bindHost: "0.0.0.0", portBase: 16000, portTries: 200 });
 * rtp.start(negotiatedMedia, { onAudio: (pcm8k) => play(pcm8k), onDtmf: (k) => press(k) });
 * rtp.sendPcm8k(pcm8k); // any length; sent in 160-sample packets
 * await rtp.close();
 * ```
 * @module
 */

import { alawDecode, alawEncode, ulawDecode, ulawEncode } from "../../core/audio/g711.ts";
import { dtmfEventPackets, Rfc4733Receiver } from "../../core/audio/dtmf_rfc4733.ts";
import { FlowcatError } from "../../core/errors.ts";
import type { KeypadEntry } from "../../core/frames.ts";
import { type Logger, silentLogger } from "../../core/log.ts";
import { decodeRtp, type RtpPacket, RtpSender, SAMPLES_PER_20MS } from "../../core/rtp.ts";
import { joinRtpClock, leaveRtpClock } from "./rtp_clock.ts";
import { JitterBuffer, LOST } from "../../core/audio/jitter_buffer.ts";
import { RtpSourceFilter } from "./rtp_source.ts";
import { type PacerStats, RtpPacer } from "./rtp_pacer.ts";
import type { NegotiatedMedia } from "./sdp.ts";
import { SrtpContext } from "./srtp.ts";
import { sameSrtpKey } from "./sdes.ts";
import { openRtpPorts, type UdpAddress, type UdpEndpoint } from "./udp.ts";
import { NO_RTCP_STATS, RtcpChannel } from "./rtcp_channel.ts";
import type {
  DtmfSendOptions,
  RtpHandlers,
  RtpSessionOptions,
  RtpStats,
} from "./rtp_session_types.ts";

/** A bound RTP port and, once started, the media of one call. */
export class RtpSession {
  /** The bound local port (even); RTCP is on the one above. */
  readonly port: number;
  readonly #ep: UdpEndpoint;
  readonly #rtcpEp: UdpEndpoint | undefined;
  #rtcp: RtcpChannel | undefined;
  #sentOctets = 0;
  readonly #log: Logger;
  readonly #opts: RtpSessionOptions;
  #media: NegotiatedMedia | undefined;
  #handlers: RtpHandlers | undefined;
  #filter: RtpSourceFilter | undefined;
  #sender: RtpSender | undefined;
  readonly #jitter: JitterBuffer<Uint8Array>;
  readonly #dtmfRx = new Rfc4733Receiver();
  readonly #pkt = {} as RtpPacket;
  readonly #staging = new Int16Array(SAMPLES_PER_20MS);
  #stagingLen = 0;
  #last: Int16Array | undefined;
  #pacer: RtpPacer | undefined;
  #srtpOut: SrtpContext | undefined;
  #srtpIn: SrtpContext | undefined;
  /** sendDtmf calls not finished: voice stays muted from the call until the last key is out. */
  #dtmfPending = 0;
  /** RFC 4733 events are on the wire: the clock sends no voice (events carry their own timing). */
  #eventsOnWire = false;
  /** Waiting for the voice queued before a sendDtmf to leave first. */
  #drainWaiters: (() => void)[] = [];
  #dtmfChain: Promise<void> = Promise.resolve();
  #sleeps = new Map<ReturnType<typeof setTimeout>, () => void>();
  #closed = false;
  #srtpMalformed = 0;
  #counts = { packetsSent: 0, packetsReceived: 0, droppedPayloadType: 0, malformed: 0 };
  #dtmf = { in: 0, out: 0 };

  private constructor(ep: UdpEndpoint, rtcp: UdpEndpoint | undefined, opts: RtpSessionOptions) {
    this.#ep = ep;
    this.#rtcpEp = rtcp;
    this.port = ep.local.port;
    this.#opts = opts;
    this.#log = opts.logger ?? silentLogger;
    this.#jitter = new JitterBuffer({
      clockRate: 8000,
      minDelayMs: (opts.jitterDepth ?? 1) * 20,
    });
  }

  /** Bind an RTP port and the RTCP port above it ({@link openRtpPorts}); throws when none is free. */
  static open(opts: RtpSessionOptions): RtpSession {
    const pair = openRtpPorts(opts.bindHost, opts.portBase, opts.portTries, opts.logger);
    return new RtpSession(pair.rtp, pair.rtcp, opts);
  }

  /** The negotiated media, once started. */
  get media(): NegotiatedMedia | undefined {
    return this.#media;
  }

  /** Where we send RTP now (the latched source once the peer has sent). */
  get remote(): UdpAddress | undefined {
    return this.#filter?.remote;
  }

  /** Counters so far. */
  get stats(): RtpStats {
    const js = this.#jitter.stats;
    return {
      ...this.#counts,
      droppedForeign: this.#filter?.dropped ?? 0,
      lost: js.lost,
      late: js.late + js.duplicates,
      discarded: js.discarded,
      dtmfIn: this.#dtmf.in,
      dtmfOut: this.#dtmf.out,
      srtpAuthFailed: this.#srtpIn?.stats.authFailed ?? 0,
      srtpReplayed: this.#srtpIn?.stats.replayed ?? 0,
      rtcp: this.#rtcp?.stats ?? NO_RTCP_STATS,
    };
  }

  /** Start media with what SDP negotiated; inbound media goes to `handlers`. */
  start(media: NegotiatedMedia, handlers: RtpHandlers): void {
    if (this.#closed || this.#media !== undefined) return;
    this.#media = media;
    this.#handlers = handlers;
    this.#filter = new RtpSourceFilter(
      { hostname: media.remoteAddress, port: media.remotePort },
      this.#opts.latch ?? "port",
    );
    const sender = new RtpSender({ payloadType: media.payloadType });
    this.#sender = sender;
    if (media.srtp !== undefined) {
      this.#srtpOut = new SrtpContext(media.srtp.send);
      this.#srtpIn = new SrtpContext(media.srtp.receive);
    }
    const silence = this.#opts.keepAliveSilence === false
      ? undefined
      : new Uint8Array(SAMPLES_PER_20MS).fill(media.codec === "PCMU" ? 0xff : 0xd5);
    this.#pacer = new RtpPacer({
      send: (payload) => {
        this.#ep.send(this.#wire(sender.audio(payload)), this.#filter!.remote);
        this.#counts.packetsSent++;
        this.#sentOctets += payload.length;
      },
      skip: (frames) => sender.silence(frames * SAMPLES_PER_20MS),
      silence,
    });
    this.#ep.start(this.#onDatagram, true);
    joinRtpClock(this.#tick);
    this.#rtcp = this.#rtcpEp && new RtcpChannel(
      this.#rtcpEp,
      {
        ssrc: sender.ssrc,
        remote: () => this.#filter?.remote,
        sent: () => ({
          rtpTimestamp: sender.timestamp,
          packets: this.#counts.packetsSent,
          octets: this.#sentOctets,
        }),
      },
      this.#opts.rtcpIntervalMs ?? 5000,
      media.srtp,
    );
  }

  /** Send inbound media to `handlers` from now on (a transfer's bridge or hold); started only. */
  redirect(handlers: RtpHandlers): void {
    if (this.#media !== undefined) this.#handlers = handlers;
  }

  /** The packet as it goes on the wire: SRTP-protected when negotiated. */
  #wire(rtp: Uint8Array): Uint8Array {
    return this.#srtpOut === undefined ? rtp : this.#srtpOut.protect(rtp);
  }

  /** The shared clock's tick: RFC 4733 events carry their own timing, so voice waits. */
  #tick = (now: number): void => {
    this.#playout();
    const pacer = this.#pacer!;
    if (this.#eventsOnWire) {
      pacer.resync();
      return;
    }
    pacer.tick(now);
    if (pacer.queued === 0 && this.#drainWaiters.length > 0) this.#releaseDrainWaiters();
  };

  #releaseDrainWaiters(): void {
    for (const resolve of this.#drainWaiters.splice(0)) resolve();
  }

  /** Resolves once the voice queued so far has been sent (or the session closed). */
  #drained(): Promise<void> {
    if (this.#closed || (this.#pacer?.queued ?? 0) === 0) return Promise.resolve();
    return new Promise((resolve) => this.#drainWaiters.push(resolve));
  }

  /** Outbound packets the pacer sent, skipped or dropped (voice, silence, skipped, cleared). */
  get pacing(): PacerStats | undefined {
    return this.#pacer?.stats;
  }

  /** Drop voice queued but not sent yet (barge-in: the caller must not hear it). */
  clearOutbound(): void {
    this.#pacer?.clear();
  }

  /** The peer re-negotiated (re-INVITE): expect media from its new address. */
  updateRemote(media: NegotiatedMedia): void {
    if (this.#filter === undefined || this.#media === undefined) return;
    const old = this.#media.srtp?.receive;
    this.#media = { ...media, payloadType: this.#media.payloadType, codec: this.#media.codec };
    // The peer may re-key in a re-INVITE; our sending key stays (we answer with it again).
    const rx = media.srtp?.receive;
    if (rx !== undefined && old !== undefined && !sameSrtpKey(rx, old)) {
      this.#srtpIn = new SrtpContext(rx);
      this.#rtcp?.rekey(rx);
    }
    this.#filter.expect({ hostname: media.remoteAddress, port: media.remotePort });
  }

  #onDatagram = (datagram: Uint8Array, from: UdpAddress): void => {
    const bytes = this.#srtpIn === undefined ? datagram : this.#srtpIn.unprotect(datagram);
    if (bytes === undefined) {
      // Counted by the SRTP context (auth, replay); too short to be SRTP counts as malformed.
      if (this.#srtpIn!.stats.malformed > this.#srtpMalformed) {
        this.#srtpMalformed++;
        this.#counts.malformed++;
      }
      return;
    }
    const pkt = decodeRtp(bytes, this.#pkt);
    const media = this.#media;
    if (pkt === undefined || media === undefined || this.#closed) {
      this.#counts.malformed++;
      return;
    }
    if (!this.#filter!.accept(from)) return;
    this.#counts.packetsReceived++;
    this.#rtcp?.receive.onPacket(pkt.ssrc, pkt.sequence, pkt.timestamp, performance.now());
    if (media.telephoneEventPt !== undefined && pkt.payloadType === media.telephoneEventPt) {
      const key = this.#dtmfRx.push(pkt.payload, pkt.timestamp);
      if (key !== undefined) {
        this.#dtmf.in++;
        this.#handlers!.onDtmf(key);
      }
      return;
    }
    if (pkt.payloadType !== media.payloadType) {
      this.#counts.droppedPayloadType++;
      return;
    }
    // A new stream (the peer restarted, a B2BUA switched legs): the buffer starts over itself.
    if (
      this.#jitter.push(
        pkt.sequence,
        pkt.timestamp,
        pkt.payload.slice(), // the receive buffer is reused
        performance.now(),
        pkt.ssrc,
      ) === "reset"
    ) {
      this.#dtmfRx.reset();
    }
  };

  /** One 20 ms frame out of the jitter buffer, on the shared clock: played, concealed or none. */
  #playout(): void {
    const frame = this.#jitter.pull();
    if (frame === undefined) return;
    if (frame === LOST) {
      this.#conceal();
      return;
    }
    const pcm = this.#media!.codec === "PCMU" ? ulawDecode(frame) : alawDecode(frame);
    this.#last = pcm;
    this.#handlers!.onAudio(pcm);
  }

  /** Fill a lost packet with the last frame at half its level (repeated losses fade out). */
  #conceal(): void {
    const prev = this.#last;
    const out = new Int16Array(prev?.length ?? SAMPLES_PER_20MS);
    if (prev !== undefined) { for (let j = 0; j < out.length; j++) out[j] = prev[j] >> 1; }
    this.#last = out;
    this.#handlers!.onAudio(out);
  }

  /** Queue 8 kHz PCM for sending; every full 160 samples become one packet on the clock. */
  sendPcm8k(pcm: Int16Array): void {
    const pacer = this.#pacer;
    if (pacer === undefined || this.#closed) return;
    let i = 0;
    while (i < pcm.length) {
      const n = Math.min(SAMPLES_PER_20MS - this.#stagingLen, pcm.length - i);
      this.#staging.set(pcm.subarray(i, i + n), this.#stagingLen);
      this.#stagingLen += n;
      i += n;
      if (this.#stagingLen < SAMPLES_PER_20MS) break;
      this.#stagingLen = 0;
      // Voice is muted while an RFC 4733 event is on the wire.
      if (this.#dtmfPending > 0) continue;
      pacer.push(this.#media!.codec === "PCMU" ? this.#fillUlaw : this.#fillAlaw);
    }
  }

  #fillUlaw = (slot: Uint8Array): void => void ulawEncode(this.#staging, slot);
  #fillAlaw = (slot: Uint8Array): void => void alawEncode(this.#staging, slot);

  /**
   * Send key presses as RFC 4733 events (one after the other, voice muted meanwhile). Throws
   * when the peer did not negotiate telephone-event.
   */
  sendDtmf(keys: readonly KeypadEntry[], opts: DtmfSendOptions = {}): Promise<void> {
    const pt = this.#media?.telephoneEventPt;
    if (this.#media === undefined || pt === undefined) {
      return Promise.reject(
        new FlowcatError("protocol", "RTP: the peer did not negotiate telephone-event (RFC 4733)"),
      );
    }
    const gapMs = opts.gapMs ?? 60;
    const run = async () => {
      // Voice queued before the call was said before the keys: it leaves first.
      await this.#drained();
      this.#eventsOnWire = true;
      try {
        for (const key of keys) {
          if (this.#closed) return;
          await this.#sendOneKey(key, pt, opts.durationMs ?? 100);
          await this.#sleep(gapMs);
          this.#sender!.silence(gapMs * 8);
        }
      } finally {
        this.#eventsOnWire = false;
      }
    };
    this.#dtmfPending++;
    const done = this.#dtmfChain.then(run, run).finally(() => {
      this.#dtmfPending--;
      this.#pacer?.resync();
    });
    this.#dtmfChain = done;
    return done;
  }

  async #sendOneKey(key: KeypadEntry, pt: number, durationMs: number): Promise<void> {
    const packets = dtmfEventPackets(key, { durationMs });
    const sender = this.#sender!;
    const timestamp = sender.timestamp;
    const t0 = performance.now();
    for (const p of packets) {
      const due = t0 + p.sendAtMs - packets[0].sendAtMs;
      const wait = due - performance.now();
      if (wait > 1) await this.#sleep(wait);
      if (this.#closed) return;
      this.#ep.send(
        this.#wire(sender.event(p.payload, pt, timestamp, p.marker)),
        this.#filter!.remote,
      );
      this.#counts.packetsSent++;
    }
    this.#dtmf.out++;
    // Voice resumes after the event's duration, as a new talkspurt.
    sender.silence(packets[packets.length - 1].duration);
  }

  #sleep(ms: number): Promise<void> {
    if (this.#closed) return Promise.resolve();
    return new Promise((resolve) => {
      const id = setTimeout(() => {
        this.#sleeps.delete(id);
        resolve();
      }, ms);
      this.#sleeps.set(id, resolve);
    });
  }

  /** True once closed. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Stop media and release the port; idempotent. */
  async close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      leaveRtpClock(this.#tick);
      this.#releaseDrainWaiters();
      for (const [id, resolve] of this.#sleeps) {
        clearTimeout(id);
        resolve();
      }
      this.#sleeps.clear();
      this.#log.debug("rtp session closed", { port: this.port, ...this.stats });
    }
    await Promise.all([this.#ep.close(), this.#rtcp?.close() ?? this.#rtcpEp?.close()]);
  }
}
