// Over 400 lines: one class over one werift peer connection and its channels.
/**
 * One browser call over WebRTC as a {@link MediaTransport}: werift peer connection in, PCM
 * events out, paced audio back, JSON events on the `"events"` data channel. Made by
 * `answerWebRtcOffer` in ./webrtc.ts, which negotiates the codec (Opus, else PCMU or PCMA).
 *
 * Inbound RTP goes through an adaptive jitter buffer (core/audio/jitter_buffer.ts) pulled on the
 * pacer's 20 ms tick (one timer per call for both directions), then the codec decodes it, or
 * conceals a packet that did not come in time; audio is delivered at the codec's rate (48 kHz
 * for Opus, 8 kHz for G.711), which is {@link WebRtcSession.carrierRate}.
 * @module
 */

import type { RTCDataChannel, RTCPeerConnection, RtpPacket } from "npm:werift@0.25.2";
import {
  emptyJitterStats,
  JitterBuffer,
  type JitterBufferStats,
  LOST,
} from "../core/audio/jitter_buffer.ts";
import { Resampler, transitionFor } from "../core/audio/resample.ts";
import { errorMessage } from "../core/errors.ts";
import type { AudioFrame } from "../core/frames.ts";
import { type Logger, silentLogger } from "../core/log.ts";
import type { MediaIn, MediaTransport } from "../core/seams.ts";
import type { MediaCodec, WebRtcCodec } from "./webrtc_codec.ts";
import { PACKET_MS, RtpPacer } from "./webrtc_pacer.ts";

/** Label of the JSON data channel the playground opens. */
export const EVENTS_CHANNEL = "events";

/** Per-call options of a {@link WebRtcSession}. */
export interface WebRtcSessionOptions {
  /** Where connection states and faults are logged. */
  logger?: Logger;
  /** Call id reported in the `start` event; a random UUID by default. */
  callId?: string;
  /** Give up when ICE and DTLS have not connected within this; default 20000 ms. */
  connectTimeoutMs?: number;
  /** A `disconnected` peer that does not recover within this ends the call; default 5000 ms. */
  disconnectGraceMs?: number;
  /** Called with every JSON object the page sends on the events channel (hangup included). */
  onPageMessage?: (msg: Record<string, unknown>) => void;
  /**
   * Inbound jitter buffer bounds: the least and most playout delay, ms (defaults 20 and 200;
   * the delay adapts to the measured jitter in between).
   */
  jitter?: { minDelayMs?: number; maxDelayMs?: number };
}

/** Inbound audio kept while nobody reads: 10 s of 20 ms packets. Older packets are dropped. */
const MAX_QUEUED_AUDIO = 500;
/** Outbound audio kept before the peer has connected: 10 s. */
const MAX_EARLY_MS = 10_000;
/** Events kept while the data channel is still opening (or for the next message). */
const MAX_EARLY_EVENTS = 100;
/** The rate before a codec is bound (answerWebRtcOffer binds one before returning). */
const UNBOUND_RATE = 8000;
/** The playout tick keeps running this long after the last inbound packet. */
const LISTEN_IDLE_MS = 500;

/** Inbound media counters of a {@link WebRtcSession} (see {@link WebRtcSession.inboundStats}). */
export interface WebRtcInboundStats extends JitterBufferStats {
  /** Frames in the jitter buffer now. */
  depth: number;
  /** The depth playout aims at, following the jitter estimate. */
  targetDepth: number;
  /** RFC 3550 interarrival jitter estimate, ms. */
  jitterMs: number;
  /** Packets with a payload type other than the negotiated codec's, dropped. */
  otherPayloadType: number;
  /** Payloads the codec could not decode (concealed instead). */
  undecodable: number;
}
/**
 * How long close() waits for the page to receive queued events (a call that fails before the
 * data channel opens still tells the page why) and for the last sent ones to leave.
 */
const EVENT_FLUSH_WAIT_MS = 3000;

/**
 * One browser call over WebRTC. `recv()` yields `start` once ICE and DTLS connect, `audio` at
 * the codec's rate ({@link carrierRate}), and `stop` when the page hangs up or the peer
 * closes, fails, or stays disconnected.
 */
export class WebRtcSession implements MediaTransport {
  /** Call id reported in the `start` event. */
  readonly callId: string;
  readonly #pc: RTCPeerConnection;
  readonly #log: Logger;
  readonly #opts: WebRtcSessionOptions;
  readonly #inbox: MediaIn[] = [];
  #waiter: ((m: MediaIn | undefined) => void) | undefined;
  #pacer: RtpPacer | undefined;
  #codec: MediaCodec | undefined;
  #payloadType = -1;
  #jitter: JitterBuffer<Uint8Array> | undefined;
  #lastArrival = 0;
  #otherPayloadType = 0;
  #undecodable = 0;
  #down: Resampler | undefined;
  #early: Int16Array[] = [];
  #earlySamples = 0;
  #channel: RTCDataChannel | undefined;
  #earlyEvents: string[] = [];
  #started = false;
  #ended = false;
  /** close() began: no more audio; queued events may still go out. */
  #closing = false;
  /** The peer connection is released: nothing more goes out. */
  #closed = false;
  /** The page or the network ended the call (nobody left to tell). */
  #peerEnded = false;
  #connectTimer: ReturnType<typeof setTimeout> | undefined;
  #graceTimer: ReturnType<typeof setTimeout> | undefined;
  #unsubscribe: (() => void)[] = [];
  /**
   * Why the session ended: `hangup` (page message), `closed` (page closed its connection or
   * data channel), `failed` (ICE/DTLS failed, e.g. consent expired), `disconnected` (no
   * recovery within the grace), `timeout` (never connected), `local` (close() called here).
   */
  endReason: string | undefined;
  /** RTP packets received from the browser. */
  packetsReceived = 0;
  /** Inbound audio packets dropped because nobody read them in time. */
  packetsDropped = 0;
  /** Outbound 20 ms packets of bot audio cleared before they were sent (barge-in). */
  packetsCleared = 0;

  /** Wrap `pc`; `answerWebRtcOffer` makes sessions, embedders should not. */
  constructor(pc: RTCPeerConnection, opts: WebRtcSessionOptions) {
    this.#pc = pc;
    this.#opts = opts;
    this.#log = opts.logger ?? silentLogger;
    this.callId = opts.callId ?? crypto.randomUUID();
    const subs = [
      pc.connectionStateChange.subscribe((s) => this.#onState(s)),
      pc.onTrack.subscribe((track) => {
        const sub = track.onReceiveRtp.subscribe((rtp) => this.#onRtp(rtp));
        this.#unsubscribe.push(() => sub.unSubscribe());
      }),
      pc.onDataChannel.subscribe((ch) => this.#onChannel(ch)),
    ];
    for (const sub of subs) this.#unsubscribe.push(() => sub.unSubscribe());
    this.#connectTimer = setTimeout(
      () => this.#end("timeout"),
      opts.connectTimeoutMs ?? 20_000,
    );
  }

  /**
   * @internal Wire the media (called once by `answerWebRtcOffer`): the negotiated codec, the
   * payload type the browser sends it with, and the outbound RTP path. The session owns the
   * codec from here on and closes it.
   */
  bindSender(send: (packet: Uint8Array) => void, codec: MediaCodec, payloadType: number): void {
    this.#codec = codec;
    this.#payloadType = payloadType;
    this.#jitter = new JitterBuffer({
      clockRate: codec.clockRate,
      frameMs: PACKET_MS,
      minDelayMs: this.#opts.jitter?.minDelayMs,
      maxDelayMs: this.#opts.jitter?.maxDelayMs,
    });
    this.#pacer = new RtpPacer(send, codec, { payloadType, onTick: this.#playout });
  }

  /** The negotiated codec's name (`"opus"`, `"pcmu"`, `"pcma"`); undefined before binding. */
  get codec(): WebRtcCodec | undefined {
    return this.#codec?.name;
  }

  /** Next inbound event; `undefined` once the session has ended and the queue is drained. */
  recv(): Promise<MediaIn | undefined> {
    const m = this.#inbox.shift();
    if (m !== undefined) return Promise.resolve(m);
    if (this.#ended) return Promise.resolve(undefined);
    return new Promise((resolve) => (this.#waiter = resolve));
  }

  /** Resample to the codec's rate and queue for the paced sender (which encodes). */
  sendAudio(audio: AudioFrame): Promise<void> {
    if (this.#ended || audio.pcm.length === 0) return Promise.resolve();
    let pcm = audio.pcm;
    const rate = this.carrierRate();
    if (audio.sampleRate !== rate) {
      if (this.#down === undefined || this.#down.inRate !== audio.sampleRate) {
        this.#down = new Resampler(audio.sampleRate, rate, {
          transition: transitionFor(audio.sampleRate, rate),
        });
      }
      pcm = this.#down.processLent(pcm); // both paths below copy the samples
    }
    if (this.#started) this.#pacer?.push(pcm); // the pacer copies
    else if (this.#earlySamples + pcm.length <= (MAX_EARLY_MS * rate) / 1000) {
      // Audio before DTLS is up (a greeting) waits for the connection instead of being lost;
      // copied, since the caller may reuse its buffer.
      this.#early.push(pcm.slice());
      this.#earlySamples += pcm.length;
    }
    return Promise.resolve();
  }

  /** Drop queued outbound audio (barge-in). */
  sendClear(): Promise<void> {
    const frame = this.carrierRate() / 50;
    this.packetsCleared += Math.ceil(this.queuedSamples / frame);
    this.#pacer?.clear();
    this.#early = [];
    this.#earlySamples = 0;
    return Promise.resolve();
  }

  /** The negotiated codec's rate: 48000 for Opus, 8000 for PCMU and PCMA. */
  carrierRate(): number {
    return this.#codec?.clockRate ?? UNBOUND_RATE;
  }

  /**
   * Media dropped so far, by reason: `overflow` (inbound nobody read in time), `late` (packets
   * after their frame was played, or duplicates), `jitter_discard` (buffered packets discarded
   * to keep the delay bounded, or too far out of sequence), `barge_in` (queued bot audio
   * cleared before it was sent).
   */
  droppedMedia(): Record<string, number> {
    const js = this.#jitter?.stats ?? emptyJitterStats();
    return {
      overflow: this.packetsDropped,
      late: js.late + js.duplicates,
      jitter_discard: js.discarded + js.outOfRange,
      barge_in: this.packetsCleared,
    };
  }

  /** Inbound counters: the jitter buffer's, and packets dropped before it. */
  get inboundStats(): WebRtcInboundStats {
    const jb = this.#jitter;
    return {
      ...(jb?.stats ?? emptyJitterStats()),
      depth: jb?.depth ?? 0,
      targetDepth: jb?.targetDepth ?? 0,
      jitterMs: jb?.jitterMs ?? 0,
      otherPayloadType: this.#otherPayloadType,
      undecodable: this.#undecodable,
    };
  }

  /** Outbound audio samples (at {@link carrierRate}) still queued. */
  get queuedSamples(): number {
    return (this.#pacer?.queuedSamples ?? 0) + this.#earlySamples;
  }

  /** RTP packets sent to the browser. */
  get packetsSent(): number {
    return this.#pacer?.packetsSent ?? 0;
  }

  /**
   * Send a JSON event to the page on the `"events"` channel (queued until the channel opens;
   * dropped after the session ended). E.g. `{type:"transcript", role:"bot", text, final}`.
   */
  sendEvent(event: Record<string, unknown>): void {
    if (this.#closed || this.#earlyEvents.length >= MAX_EARLY_EVENTS) return;
    this.#earlyEvents.push(JSON.stringify(event));
    const ch = this.#channel;
    if (ch && ch.readyState === "open" && this.#earlyEvents.length === 1) {
      queueMicrotask(() => this.#flushTo(ch));
    }
  }

  /**
   * Send every queued event as one message, newline-separated JSON. werift stalls a second
   * data-channel message sent while the first is unacknowledged until its retransmission
   * timer fires (a second later), so events raised together travel together.
   */
  #flushTo(ch: RTCDataChannel): void {
    if (this.#earlyEvents.length === 0 || ch.readyState !== "open") return;
    this.#sendOn(ch, this.#earlyEvents.join("\n"));
    this.#earlyEvents = [];
  }

  /**
   * End the call from this side and release every werift resource; idempotent. Events still
   * queued for the page (say, why the call failed) are delivered first when the peer is still
   * reachable, waiting up to 3 s for the data channel to open.
   */
  async close(): Promise<void> {
    this.#end("local");
    if (this.#closing) return;
    this.#closing = true;
    this.#pacer?.close();
    await this.#flushEvents();
    this.#closed = true;
    this.#codec?.close();
    for (const un of this.#unsubscribe) un();
    this.#unsubscribe = [];
    try {
      await this.#pc.close();
    } catch (err) {
      this.#log.debug("webrtc: close failed", { callId: this.callId, error: errorMessage(err) });
    }
  }

  /**
   * Wait (bounded) until queued events have reached an open channel and the page has
   * acknowledged them: closing the connection drops whatever SCTP still holds.
   */
  async #flushEvents(): Promise<void> {
    const gone = () => this.#peerEnded || ["failed", "closed"].includes(this.#pc.connectionState);
    const deadline = performance.now() + EVENT_FLUSH_WAIT_MS;
    while (!gone() && (this.#earlyEvents.length > 0 || !eventsAcknowledged(this.#pc))) {
      if (performance.now() >= deadline) return;
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  #deliver(m: MediaIn): void {
    const w = this.#waiter;
    if (w) {
      this.#waiter = undefined;
      w(m);
    } else this.#inbox.push(m);
  }

  #onState(state: string): void {
    this.#log.debug("webrtc: connection state", { callId: this.callId, state });
    if (state === "connected") {
      if (this.#graceTimer !== undefined) clearTimeout(this.#graceTimer);
      this.#graceTimer = undefined;
      this.#start();
    } else if (state === "failed" || state === "closed") {
      this.#end(state);
    } else if (state === "disconnected" && this.#graceTimer === undefined && !this.#ended) {
      this.#graceTimer = setTimeout(
        () => this.#end("disconnected"),
        this.#opts.disconnectGraceMs ?? 5000,
      );
    }
  }

  #start(): void {
    if (this.#started || this.#ended) return;
    this.#started = true;
    clearTimeout(this.#connectTimer);
    this.#log.info("webrtc: connected", { callId: this.callId });
    this.#deliver({ type: "start", callId: this.callId });
    for (const pcm of this.#early) this.#pacer?.push(pcm);
    this.#early = [];
    this.#earlySamples = 0;
  }

  #onRtp(rtp: RtpPacket): void {
    const jb = this.#jitter;
    if (this.#ended || jb === undefined) return;
    const h = rtp.header;
    if (h.payloadType !== this.#payloadType) {
      this.#otherPayloadType++;
      return;
    }
    this.packetsReceived++;
    this.#start();
    const now = performance.now();
    this.#lastArrival = now;
    // The payload is kept for up to the buffer's depth: a copy, whatever werift does with it.
    jb.push(h.sequenceNumber, h.timestamp, new Uint8Array(rtp.payload), now, h.ssrc);
    this.#pacer!.wake();
  }

  /** One 20 ms tick of inbound playout; true while the clock should keep running for it. */
  #playout = (): boolean => {
    const jb = this.#jitter!;
    const next = jb.pull();
    if (next !== undefined && !this.#ended) {
      const codec = this.#codec!;
      let pcm: Int16Array;
      if (next === LOST) pcm = codec.conceal();
      else {
        try {
          pcm = codec.decode(next);
        } catch {
          this.#undecodable++;
          pcm = codec.conceal();
        }
      }
      if (this.#inbox.length >= MAX_QUEUED_AUDIO) {
        const i = this.#inbox.findIndex((m) => m.type === "audio");
        if (i >= 0) {
          this.#inbox.splice(i, 1);
          this.packetsDropped++;
        }
      }
      this.#deliver({
        type: "audio",
        audio: { pcm, sampleRate: codec.clockRate, numChannels: 1 },
      });
    }
    return !this.#ended && (jb.depth > 0 || performance.now() - this.#lastArrival < LISTEN_IDLE_MS);
  };

  #onChannel(ch: RTCDataChannel): void {
    if (ch.label !== EVENTS_CHANNEL) return;
    this.#channel = ch;
    const flush = () => this.#flushTo(ch);
    if (ch.readyState === "open") flush();
    // The page closing its peer connection closes the channel at once (SCTP abort), whereas
    // ICE only notices when consent expires, 30 s later.
    const state = ch.stateChanged.subscribe((s) => {
      if (s === "open") flush();
      else if (s === "closed") this.#end("closed");
    });
    const msg = ch.onMessage.subscribe((data) => this.#onPageMessage(data));
    this.#unsubscribe.push(() => state.unSubscribe(), () => msg.unSubscribe());
  }

  #onPageMessage(data: string | Uint8Array): void {
    const text = typeof data === "string" ? data : new TextDecoder().decode(data);
    let msg: unknown;
    try {
      msg = JSON.parse(text);
    } catch {
      this.#log.debug("webrtc: page message is not JSON", { callId: this.callId });
      return;
    }
    if (typeof msg !== "object" || msg === null || Array.isArray(msg)) return;
    const obj = msg as Record<string, unknown>;
    try {
      this.#opts.onPageMessage?.(obj);
    } catch (err) {
      this.#log.warn("webrtc: onPageMessage failed", { error: errorMessage(err) });
    }
    if (obj.type === "hangup") this.#end("hangup");
  }

  #sendOn(ch: RTCDataChannel, text: string): void {
    try {
      ch.send(text);
    } catch (err) {
      this.#log.debug("webrtc: event not sent", { callId: this.callId, error: errorMessage(err) });
    }
  }

  /** Deliver `stop` once; a peer-side end also releases the connection. */
  #end(reason: string): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#peerEnded = reason !== "local";
    this.endReason = reason;
    clearTimeout(this.#connectTimer);
    if (this.#graceTimer !== undefined) clearTimeout(this.#graceTimer);
    this.#graceTimer = undefined;
    this.#pacer?.clear();
    this.#log.info("webrtc: ended", { callId: this.callId, reason });
    this.#deliver({ type: "stop" });
    if (reason !== "local") void this.close();
  }
}

/** The parts of werift's SCTP association that tell whether sent data was acknowledged. */
interface SctpQueues {
  dataChannelQueue?: unknown[];
  sctp?: { flightSize?: number; outboundQueue?: unknown[] };
}

/**
 * True when no data-channel message is queued or unacknowledged (or there is no association).
 * werift's `bufferedAmount` drops when a message enters SCTP, not when the peer has it, so the
 * association's own queues are read (private fields, hence the cast).
 */
function eventsAcknowledged(pc: RTCPeerConnection): boolean {
  const t = pc.sctpTransport as unknown as SctpQueues | undefined;
  if (t === undefined || t.sctp === undefined) return true;
  return (t.dataChannelQueue?.length ?? 0) === 0 && (t.sctp.outboundQueue?.length ?? 0) === 0 &&
    (t.sctp.flightSize ?? 0) === 0;
}
