/**
 * Paced PCMU sender for the WebRTC leg: 8 kHz PCM in, one 20 ms RTP packet out per tick.
 *
 * The pipeline's TransportOutput already delivers audio at real time, so the queue here stays
 * about one packet deep; the pacer exists so a caller that writes faster (a whole greeting at
 * once) still reaches the browser at 50 packets a second instead of in a burst its jitter
 * buffer would drop. Sequence numbers are continuous; timestamps advance 160 per packet, and
 * when the queue has run dry for a while the timestamp skips the silent time and the next
 * packet carries the marker (a new talkspurt), as RFC 3551 asks.
 * @module
 */

import { ulawEncode } from "../core/audio/g711.ts";
import { RtpSender, SAMPLES_PER_20MS } from "../telephony/sip/rtp.ts";

/** Milliseconds of audio in one packet. */
export const PACKET_MS = 20;
/** Ticks a partial packet waits for more samples before it is padded with silence and sent. */
const PARTIAL_WAIT_TICKS = 2;
/** When the sender has fallen this far behind its schedule, it resynchronises to now. */
const MAX_LAG_MS = 200;

/** Options of a {@link PcmuPacer}. */
export interface PcmuPacerOptions {
  /** Clock in milliseconds; `performance.now` by default (tests pass a fake). */
  now?: () => number;
  /** SSRC, first sequence number and first timestamp; random by default. */
  ssrc?: number;
  sequence?: number;
  timestamp?: number;
}

/**
 * Queues 8 kHz PCM and hands `send` one serialized PCMU RTP packet every 20 ms while audio is
 * queued. `send` gets a view that is reused on the next call: copy it if you keep it.
 */
export class PcmuPacer {
  readonly #send: (packet: Uint8Array) => void;
  readonly #now: () => number;
  readonly #rtp: RtpSender;
  #queue = new Int16Array(8000);
  #head = 0;
  #tail = 0;
  readonly #frame = new Int16Array(SAMPLES_PER_20MS);
  readonly #payload = new Uint8Array(SAMPLES_PER_20MS);
  #timer: ReturnType<typeof setTimeout> | undefined;
  #nextDue = 0;
  /** Due time of the last packet sent; undefined before the first. */
  #lastDue: number | undefined;
  #partialTicks = 0;
  #closed = false;
  /** Packets sent so far. */
  packetsSent = 0;

  /** A pacer writing packets through `send`. */
  constructor(send: (packet: Uint8Array) => void, opts: PcmuPacerOptions = {}) {
    this.#send = send;
    this.#now = opts.now ?? (() => performance.now());
    this.#rtp = new RtpSender({
      payloadType: 0,
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

  /** Queue 8 kHz mono PCM and start pacing if idle. */
  push(pcm: Int16Array): void {
    if (this.#closed || pcm.length === 0) return;
    this.#reserve(pcm.length);
    this.#queue.set(pcm, this.#tail);
    this.#tail += pcm.length;
    if (this.#timer === undefined) this.#resume();
  }

  /** Drop everything queued (barge-in). The stream's sequence stays continuous. */
  clear(): void {
    this.#head = this.#tail = 0;
    this.#partialTicks = 0;
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

  /** Start a run of packets; skip the timestamp over the silence since the last run. */
  #resume(): void {
    const now = this.#now();
    if (this.#lastDue !== undefined) {
      const silentPackets = Math.floor((now - this.#lastDue) / PACKET_MS) - 1;
      if (silentPackets >= 1) this.#rtp.silence(silentPackets * SAMPLES_PER_20MS);
    }
    this.#nextDue = now;
    this.#tick();
  }

  #tick = (): void => {
    this.#timer = undefined;
    if (this.#closed) return;
    const now = this.#now();
    if (now - this.#nextDue > MAX_LAG_MS) this.#nextDue = now;
    while (this.#nextDue <= now + 1) {
      const queued = this.#tail - this.#head;
      if (queued === 0) {
        this.#partialTicks = 0;
        return; // idle until the next push
      }
      if (queued < SAMPLES_PER_20MS && this.#partialTicks < PARTIAL_WAIT_TICKS) {
        // Give the producer a moment to complete the packet before padding it with silence.
        this.#partialTicks++;
        this.#nextDue += PACKET_MS;
        break;
      }
      this.#sendOne(Math.min(queued, SAMPLES_PER_20MS));
      this.#lastDue = this.#nextDue;
      this.#nextDue += PACKET_MS;
    }
    this.#timer = setTimeout(this.#tick, Math.max(0, this.#nextDue - this.#now()));
  };

  #sendOne(n: number): void {
    this.#frame.fill(0);
    this.#frame.set(this.#queue.subarray(this.#head, this.#head + n));
    this.#head += n;
    if (this.#head === this.#tail) this.#head = this.#tail = 0;
    this.#partialTicks = 0;
    ulawEncode(this.#frame, this.#payload);
    this.packetsSent++;
    this.#send(this.#rtp.audio(this.#payload));
  }
}
