/**
 * The outbound side of an RTP session as a clock-driven queue: one packet per 20 ms tick,
 * whatever the pipeline does. Queued voice goes first; with nothing queued a silence packet
 * goes out (or, without idle silence, the timestamp advances unsent), so the far end sees a
 * steady 20 ms cadence and timestamps that follow the wall clock while the agent speaks and
 * while it is quiet. Pure: the caller supplies the clock ticks and the send functions.
 *
 * @example
 * ```ts
 * import { joinRtpClock, RtpPacer, RtpSender } from "@flowcat/flowcat/sip";
 * import { ulawEncode } from "@flowcat/flowcat/audio";
 * declare const sock: { send(packet: Uint8Array): void };
 * declare const sender: RtpSender;
 * declare const pcm160: Int16Array;
 * const pacer = new RtpPacer({ send: (p) => sock.send(sender.audio(p)), skip: (n) => sender.silence(160 * n),
 *   silence: new Uint8Array(160).fill(0xff) });
 * pacer.push((slot) => ulawEncode(pcm160, slot));
 * joinRtpClock((now) => pacer.tick(now));
 * ```
 * @module
 */

import { RTP_TICK_MS } from "./rtp_clock.ts";

/** Samples (and G.711 bytes) per 20 ms packet at 8 kHz. */
const FRAME = 160;
/** A lag beyond this many packets (after a stall) is skipped in the timestamps, not burst. */
const MAX_CATCH_UP = 3;

/** What the pacer drives. */
export interface PacerSink {
  /** Send one packet with this 160-byte payload (only valid during the call). */
  send(payload: Uint8Array): void;
  /** Let `frames` packets' worth of time pass unsent (the next voice packet starts a talkspurt). */
  skip(frames: number): void;
  /** The payload sent while idle; undefined sends nothing (timestamps still advance). */
  silence?: Uint8Array;
}

/** Counters of a {@link RtpPacer}. */
export interface PacerStats {
  /** Voice packets sent. */
  voice: number;
  /** Silence packets sent while idle. */
  silence: number;
  /** Packet slots skipped (idle without silence, or after a stall). */
  skipped: number;
  /** Queued voice packets dropped by {@link RtpPacer.clear} (barge-in). */
  cleared: number;
}

/** One session's outbound queue and schedule. */
export class RtpPacer {
  /** Running counters. */
  readonly stats: PacerStats = { voice: 0, silence: 0, skipped: 0, cleared: 0 };
  readonly #sink: PacerSink;
  // A ring of reusable 160-byte payload buffers: no allocation per packet once warmed up.
  #ring: Uint8Array[] = [];
  #head = 0;
  #count = 0;
  #anchor = -1;
  #due = 0;

  /** A pacer feeding `sink`. */
  constructor(sink: PacerSink) {
    this.#sink = sink;
  }

  /** Voice packets waiting. */
  get queued(): number {
    return this.#count;
  }

  /** Queue one packet; `fill` writes its 160-byte payload into the slot it is given. */
  push(fill: (slot: Uint8Array) => void): void {
    if (this.#count === this.#ring.length) this.#grow();
    const slot = this.#ring[(this.#head + this.#count) % this.#ring.length];
    fill(slot);
    this.#count++;
  }

  #grow(): void {
    const size = Math.max(4, this.#ring.length * 2);
    const next: Uint8Array[] = [];
    for (let i = 0; i < this.#count; i++) {
      next.push(this.#ring[(this.#head + i) % this.#ring.length]);
    }
    while (next.length < size) next.push(new Uint8Array(FRAME));
    this.#ring = next;
    this.#head = 0;
  }

  /** Drop every queued packet (barge-in: the caller must not hear what was held back). */
  clear(): void {
    this.stats.cleared += this.#count;
    this.#head = 0;
    this.#count = 0;
  }

  /** Forget the schedule: the next tick starts a new one (after RFC 4733 events, which carry their own timing). */
  resync(): void {
    this.#anchor = -1;
  }

  /** A clock tick at `now` (ms): send the packets now due, one per 20 ms since the schedule began. */
  tick(now: number): void {
    if (this.#anchor < 0) {
      this.#anchor = now;
      this.#due = 0;
    }
    // Rounded, so a tick that fires a little early or late still owes exactly one packet.
    let owed = Math.round((now - this.#anchor) / RTP_TICK_MS) + 1 - this.#due;
    if (owed <= 0) return;
    if (owed > MAX_CATCH_UP) {
      // The loop stalled: keep the timestamps on the clock, send only the latest slot.
      this.#sink.skip(owed - 1);
      this.stats.skipped += owed - 1;
      this.#due += owed - 1;
      owed = 1;
    }
    for (; owed > 0; owed--) {
      this.#due++;
      this.#sendOne();
    }
  }

  #sendOne(): void {
    if (this.#count > 0) {
      const payload = this.#ring[this.#head];
      this.#head = (this.#head + 1) % this.#ring.length;
      this.#count--;
      this.stats.voice++;
      this.#sink.send(payload);
      return;
    }
    const silence = this.#sink.silence;
    if (silence === undefined) {
      this.stats.skipped++;
      this.#sink.skip(1);
      return;
    }
    this.stats.silence++;
    this.#sink.send(silence);
  }
}
