/**
 * One browser call over WebRTC as a {@link MediaTransport}: werift peer connection in, PCM
 * events out, paced PCMU back, JSON events on the `"events"` data channel. Made by
 * `answerWebRtcOffer` in ./webrtc.ts.
 * @module
 */

import type { RTCDataChannel, RTCPeerConnection, RtpPacket } from "werift";
import { ulawDecode } from "../core/audio/g711.ts";
import { Resampler } from "../core/audio/resample.ts";
import { errorMessage } from "../core/errors.ts";
import type { AudioChunk } from "../core/frames.ts";
import { type Logger, silentLogger } from "../core/log.ts";
import type { MediaIn, MediaTransport } from "../core/seams.ts";
import { PcmuPacer } from "./webrtc_pacer.ts";

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
}

/** Inbound audio kept while nobody reads: 10 s of 20 ms packets. Older packets are dropped. */
const MAX_QUEUED_AUDIO = 500;
/** Outbound audio kept before the peer has connected: 10 s at 8 kHz. */
const MAX_EARLY_SAMPLES = 80_000;
/** Events kept while the data channel is still opening (or for the next message). */
const MAX_EARLY_EVENTS = 100;
/**
 * How long close() waits for the page to receive queued events (a call that fails before the
 * data channel opens still tells the page why) and for the last sent ones to leave.
 */
const EVENT_FLUSH_WAIT_MS = 3000;
const CARRIER_RATE = 8000;

/**
 * One browser call over WebRTC. `recv()` yields `start` once ICE and DTLS connect, `audio` at
 * 8 kHz, and `stop` when the page hangs up or the peer closes, fails, or stays disconnected.
 */
export class WebRtcSession implements MediaTransport {
  /** Call id reported in the `start` event. */
  readonly callId: string;
  readonly #pc: RTCPeerConnection;
  readonly #log: Logger;
  readonly #opts: WebRtcSessionOptions;
  readonly #inbox: MediaIn[] = [];
  #waiter: ((m: MediaIn | undefined) => void) | undefined;
  #pacer: PcmuPacer | undefined;
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
  #lastSeq: number | undefined;
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

  /** @internal Wire the outbound RTP path (called once by `answerWebRtcOffer`). */
  bindSender(send: (packet: Uint8Array) => void): void {
    this.#pacer = new PcmuPacer(send);
  }

  /** Next inbound event; `undefined` once the session has ended and the queue is drained. */
  recv(): Promise<MediaIn | undefined> {
    const m = this.#inbox.shift();
    if (m !== undefined) return Promise.resolve(m);
    if (this.#ended) return Promise.resolve(undefined);
    return new Promise((resolve) => (this.#waiter = resolve));
  }

  /** Resample to 8 kHz, encode PCMU and queue for the paced sender. */
  sendAudio(audio: AudioChunk): Promise<void> {
    if (this.#ended || audio.pcm.length === 0) return Promise.resolve();
    let pcm = audio.pcm;
    if (audio.sampleRate !== CARRIER_RATE) {
      if (this.#down === undefined || this.#down.inRate !== audio.sampleRate) {
        this.#down = new Resampler(audio.sampleRate, CARRIER_RATE);
      }
      pcm = this.#down.process(pcm);
    }
    if (this.#started) this.#pacer?.push(pcm); // the pacer copies
    else if (this.#earlySamples + pcm.length <= MAX_EARLY_SAMPLES) {
      // Audio before DTLS is up (a greeting) waits for the connection instead of being lost;
      // copied, since the caller may reuse its buffer.
      this.#early.push(pcm.slice());
      this.#earlySamples += pcm.length;
    }
    return Promise.resolve();
  }

  /** Drop queued outbound audio (barge-in). */
  sendClear(): Promise<void> {
    this.#pacer?.clear();
    this.#early = [];
    this.#earlySamples = 0;
    return Promise.resolve();
  }

  /** 8000: the leg carries PCMU. */
  carrierRate(): number {
    return CARRIER_RATE;
  }

  /** Outbound audio samples (8 kHz) still queued. */
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
    if (this.#ended || rtp.header.payloadType !== 0) return;
    this.packetsReceived++;
    // Loopback and LAN rarely reorder; a late or repeated packet is dropped rather than
    // played out of order (no jitter buffer: the browser paces what it sends).
    const seq = rtp.header.sequenceNumber;
    if (this.#lastSeq !== undefined) {
      const ahead = (seq - this.#lastSeq + 0x10000) & 0xffff;
      if (ahead === 0 || ahead > 0x8000) return;
    }
    this.#lastSeq = seq;
    this.#start();
    if (this.#inbox.length >= MAX_QUEUED_AUDIO) {
      const i = this.#inbox.findIndex((m) => m.type === "audio");
      if (i >= 0) {
        this.#inbox.splice(i, 1);
        this.packetsDropped++;
      }
    }
    const pcm = ulawDecode(new Uint8Array(rtp.payload));
    this.#deliver({ type: "audio", audio: { pcm, sampleRate: CARRIER_RATE, numChannels: 1 } });
  }

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
