/**
 * The WebRTC leg's 20 ms clock: a paced RTP sender for any frame codec (Opus: 960 samples at
 * 48 kHz a packet; G.711: 160 at 8 kHz), whose tick also drives the inbound playout.
 *
 * The pipeline's TransportOutput already delivers audio at real time, so the queue here stays
 * about one packet deep; the pacer exists so a caller that writes faster (a whole greeting at
 * once) still reaches the browser at 50 packets a second instead of in a burst its jitter
 * buffer would drop. Sequence numbers are continuous; timestamps advance one frame per packet,
 * and when the queue has run dry for a while the timestamp skips the silent time and the next
 * packet carries the marker (a new talkspurt), as RFC 3551 asks.
 *
 * One timer per call: the same tick pulls the inbound jitter buffer (`onTick`), so a call that
 * both listens and speaks wakes 50 times a second, not 100. The clock runs while audio is
 * queued or `onTick` asks for more, and stops otherwise ({@link RtpPacer.wake} restarts it).
 * @module
 */

import { ulawEncode } from "../core/audio/g711.ts";
import { RtpSender, SAMPLES_PER_20MS } from "../core/rtp.ts";

/** Milliseconds of audio in one packet. */
export const PACKET_MS = 20;
/** Ticks a partial packet waits for more samples before it is padded with silence and sent. */
const PARTIAL_WAIT_TICKS = 2;
/** When the clock has fallen this far behind its schedule, it resynchronises to now. */
const MAX_LAG_MS = 200;

/** Turns one frame of PCM into one RTP payload. */
export interface FrameEncoder {
  /** Samples per packet (the RTP timestamp step); PCM comes at the codec's clock rate. */
  readonly frameSamples: number;
  /** Encode exactly `frameSamples` samples (the result is copied before the next call). */
  encode(frame: Int16Array): Uint8Array;
}

/** Options of an {@link RtpPacer}. */
export interface RtpPacerOptions {
  /** Clock in milliseconds; `performance.now` by default (tests pass a fake). */
  now?: () => number;
  /** SSRC, first sequence number and first timestamp; random by default. */
  ssrc?: number;
  sequence?: number;
  timestamp?: number;
  /** Payload type written in the packets; default 0 (werift rewrites it to the negotiated). */
  payloadType?: number;
  /**
   * Called once per 20 ms tick while the clock runs (the inbound playout); return true to keep
   * the clock running even when nothing is queued to send.
   */
  onTick?: () => boolean;
}

/**
 * Queues PCM at the codec's rate and hands `send` one serialized RTP packet every 20 ms while
 * audio is queued. `send` gets a view that is reused on the next call: copy it if you keep it.
 */
export class RtpPacer {
  readonly #send: (packet: Uint8Array) => void;
  readonly #encoder: FrameEncoder;
  readonly #frameSamples: number;
  readonly #now: () => number;
  readonly #onTick: (() => boolean) | undefined;
  readonly #rtp: RtpSender;
  #queue: Int16Array;
  #head = 0;
  #tail = 0;
  readonly #frame: Int16Array;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #nextDue = 0;
  /** True while queued audio is being sent (a talkspurt); false once the queue ran dry. */
  #sending = false;
  /** Due time of the last packet sent; undefined before the first. */
  #lastDue: number | undefined;
  #partialTicks = 0;
  #closed = false;
  /** Packets sent so far. */
  packetsSent = 0;

  /** A pacer writing `encoder`'s packets through `send`. */
  constructor(
    send: (packet: Uint8Array) => void,
    encoder: FrameEncoder,
    opts: RtpPacerOptions = {},
  ) {
    this.#send = send;
    this.#encoder = encoder;
    this.#frameSamples = encoder.frameSamples;
    this.#frame = new Int16Array(encoder.frameSamples);
    // Made on the first push and grown as needed: a call whose bot never speaks holds none.
    this.#queue = new Int16Array(0);
    this.#now = opts.now ?? (() => performance.now());
    this.#onTick = opts.onTick;
    this.#rtp = new RtpSender({
      payloadType: opts.payloadType ?? 0,
      ssrc: opts.ssrc,
      sequence: opts.sequence,
      timestamp: opts.timestamp,
    });
  }

  /** SSRC of the outbound stream. */
  get ssrc(): number {
    return this.#rtp.ssrc;
  }

  /** Samples waiting to be sent. */
  get queuedSamples(): number {
    return this.#tail - this.#head;
  }

  /** True while the 20 ms clock is running. */
  get ticking(): boolean {
    return this.#timer !== undefined;
  }

  /** Queue mono PCM at the codec's rate; a new talkspurt starts at once. */
  push(pcm: Int16Array): void {
    if (this.#closed || pcm.length === 0) return;
    this.#reserve(pcm.length);
    this.#queue.set(pcm, this.#tail);
    this.#tail += pcm.length;
    if (this.#sending) return; // the running clock sends it
    this.#sending = true;
    const now = this.#now();
    if (this.#lastDue !== undefined) {
      // Skip the timestamp over the silence since the last talkspurt.
      const silentPackets = Math.floor((now - this.#lastDue) / PACKET_MS) - 1;
      if (silentPackets >= 1) this.#rtp.silence(silentPackets * this.#frameSamples);
    }
    if (this.#timer === undefined) {
      this.#nextDue = now;
      this.#tick();
    } else if (this.queuedSamples >= this.#frameSamples) {
      // The clock runs for the inbound side: start the talkspurt now, not at its next tick.
      this.#sendOne(this.#frameSamples);
      this.#lastDue = now;
    }
  }

  /** Make sure the clock runs (an inbound packet came); `onTick` decides when it may stop. */
  wake(): void {
    if (this.#closed || this.#timer !== undefined) return;
    this.#nextDue = this.#now();
    this.#tick();
  }

  /** Drop everything queued (barge-in). The stream's sequence stays continuous. */
  clear(): void {
    this.#head = this.#tail = 0;
    this.#partialTicks = 0;
    this.#sending = false;
  }

  /** Stop for good; clears the timer. */
  close(): void {
    this.#closed = true;
    this.clear();
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #reserve(n: number): void {
    if (this.#tail + n <= this.#queue.length) return;
    const queued = this.#tail - this.#head;
    if (queued + n <= this.#queue.length) {
      this.#queue.copyWithin(0, this.#head, this.#tail);
    } else {
      const grown = new Int16Array((queued + n) * 2);
      grown.set(this.#queue.subarray(this.#head, this.#tail));
      this.#queue = grown;
    }
    this.#head = 0;
    this.#tail = queued;
  }

  #tick = (): void => {
    this.#timer = undefined;
    if (this.#closed) return;
    const now = this.#now();
    if (now - this.#nextDue > MAX_LAG_MS) this.#nextDue = now;
    let listening = false;
    while (this.#nextDue <= now + 1) {
      if (this.#sending) this.#sendDue();
      listening = this.#onTick?.() ?? false;
      if (this.#closed) return;
      this.#nextDue += PACKET_MS;
    }
    if (!this.#sending && !listening) return; // idle until the next push or wake
    this.#timer = setTimeout(this.#tick, Math.max(0, this.#nextDue - this.#now()));
  };

  /** The packet due at this tick, if any. */
  #sendDue(): void {
    const queued = this.#tail - this.#head;
    if (queued === 0) {
      this.#sending = false;
      this.#partialTicks = 0;
      return;
    }
    if (queued < this.#frameSamples && this.#partialTicks < PARTIAL_WAIT_TICKS) {
      // Give the producer a moment to complete the packet before padding it with silence.
      this.#partialTicks++;
      return;
    }
    this.#sendOne(Math.min(queued, this.#frameSamples));
    this.#lastDue = this.#nextDue;
  }

  #sendOne(n: number): void {
    this.#frame.fill(0);
    this.#frame.set(this.#queue.subarray(this.#head, this.#head + n));
    this.#head += n;
    if (this.#head === this.#tail) this.#head = this.#tail = 0;
    this.#partialTicks = 0;
    const payload = this.#encoder.encode(this.#frame);
    this.packetsSent++;
    this.#send(this.#rtp.audio(payload, this.#frameSamples));
  }
}

/** G.711 mu-law frames of 160 samples (8 kHz), the encoder of {@link PcmuPacer}. */
class PcmuEncoder implements FrameEncoder {
  readonly frameSamples = SAMPLES_PER_20MS;
  readonly #payload = new Uint8Array(SAMPLES_PER_20MS);
  encode(frame: Int16Array): Uint8Array {
    return ulawEncode(frame, this.#payload);
  }
}

/** Options of a {@link PcmuPacer}. */
export type PcmuPacerOptions = Omit<RtpPacerOptions, "payloadType">;

/** An {@link RtpPacer} for 8 kHz PCM sent as PCMU (payload type 0). */
export class PcmuPacer extends RtpPacer {
  /** A PCMU pacer writing packets through `send`. */
  constructor(send: (packet: Uint8Array) => void, opts: PcmuPacerOptions = {}) {
    super(send, new PcmuEncoder(), { ...opts, payloadType: 0 });
  }
}
