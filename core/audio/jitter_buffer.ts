/**
 * Adaptive playout jitter buffer for inbound RTP, generic over the payload (an Opus or G.711
 * payload, a decoded frame, anything). Packets go in as they arrive ({@link JitterBuffer.push}:
 * sequence number, RTP timestamp, payload, arrival time); the receiver pulls once per frame
 * tick ({@link JitterBuffer.pull}, e.g. every 20 ms) and gets the next packet's payload, the
 * {@link LOST} marker (run packet-loss concealment for that frame), or `undefined` (nothing to
 * play yet: before the stream starts, while it refills after running dry, or after it stopped).
 *
 * - **Order.** Packets are kept in a ring indexed by extended (wrap-free) sequence number, so
 *   reordering within the buffer's depth costs nothing and sequence 65535 is followed by 0.
 * - **Duplicates** of a packet buffered or already played, and **late** packets (their frame
 *   was already played or concealed), are dropped and counted.
 * - **Depth.** Playout starts, and restarts after an underrun, once the buffer spans the target
 *   depth (or its first frame has waited that many pulls: the sender may have stopped): the RFC
 *   3550 (A.8) interarrival jitter estimate times `jitterFactor`, clamped to
 *   `minDelayMs`..`maxDelayMs` and rounded up to whole frames. A packet that would make the
 *   buffer span more than `maxDelayMs` moves playout forward (older frames are discarded or
 *   counted lost); and when the buffer stays two frames or more above its target for half a
 *   second, one frame is discarded, so a delay spike does not leave the call late for good.
 * - **Reset.** A new SSRC starts over at once. A sequence jump beyond `maxDropout` ahead or
 *   `maxMisorder` behind (RFC 3550 A.1) drops the packet, and starts over when the next packet
 *   follows it (the sender restarted).
 *
 * Allocation-free per packet and per pull; counters are in {@link JitterBuffer.stats}. (The SIP
 * leg's reordering buffer, telephony/sip/rtp_source.ts, releases packets as they arrive instead
 * of on a clock; this one is what a leg with a playout tick uses: the WebRTC leg.)
 *
 * @example
 * ```ts
 * import { JitterBuffer, LOST } from "@flowcat/flowcat/audio";
 * import type { RtpPacket } from "@flowcat/flowcat/sip";
 * declare const pkt: RtpPacket;
 * declare const codec: { conceal(): Int16Array; decode(payload: Uint8Array): Int16Array };
 * declare function play(pcm: Int16Array): void;
 * const jb = new JitterBuffer<Uint8Array>({ clockRate: 48000 });
 * // on each RTP packet:
 * jb.push(pkt.sequence, pkt.timestamp, pkt.payload.slice(), performance.now(), pkt.ssrc);
 * // every 20 ms:
 * const next = jb.pull();
 * if (next === LOST) play(codec.conceal());
 * else if (next !== undefined) play(codec.decode(next));
 * ```
 * @module
 */

/** What {@link JitterBuffer.pull} returns for a frame whose packet did not come in time. */
export const LOST: unique symbol = Symbol("jitter-buffer-lost");

/** The type of {@link LOST}. */
export type Lost = typeof LOST;

/** What {@link JitterBuffer.push} did with a packet. */
export type JitterPush =
  | "queued"
  | "duplicate"
  | "late"
  | "out-of-range"
  | "reset";

/** Options of a {@link JitterBuffer}. */
export interface JitterBufferOptions {
  /** RTP clock rate of the stream (48000 for Opus, 8000 for G.711). */
  clockRate: number;
  /** Milliseconds of audio per packet, one per pull; default 20. */
  frameMs?: number;
  /** Least target delay, ms; default 20 (one frame). */
  minDelayMs?: number;
  /** Most delay the buffer holds, ms; default 200. */
  maxDelayMs?: number;
  /** Target delay = this times the interarrival jitter estimate (then clamped); default 4. */
  jitterFactor?: number;
  /** Largest forward sequence jump taken as loss rather than a restart; default 3000. */
  maxDropout?: number;
  /** Largest backward sequence jump taken as reordering rather than a restart; default 100. */
  maxMisorder?: number;
}

/** Counters of a {@link JitterBuffer} (updated in place). */
export interface JitterBufferStats {
  /** Packets accepted into the buffer. */
  received: number;
  /** Copies of a packet already buffered or played, dropped. */
  duplicates: number;
  /** Packets that came after their frame was played or concealed, dropped. */
  late: number;
  /** Sequence numbers never received in time (concealed, or skipped after an outage). */
  lost: number;
  /** {@link LOST} markers handed out by pull (frames the caller concealed). */
  concealed: number;
  /** Buffered packets discarded to keep the delay bounded. */
  discarded: number;
  /** Pulls that found the buffer empty while playing (playout then refills to the target). */
  underruns: number;
  /** Packets dropped for a sequence jump beyond maxDropout / maxMisorder. */
  outOfRange: number;
  /** Starts over: new SSRC, or a confirmed sequence jump. */
  resets: number;
}

/** Pulls over which the lowest buffer level is watched before a frame may be discarded. */
const SHRINK_WINDOW = 25;
/** Extended sequence numbers start here, so that reordering at the start stays positive. */
const EXT_BASE = 0x10000;

/** Counters of a buffer that has seen nothing yet. */
export function emptyJitterStats(): JitterBufferStats {
  return {
    received: 0,
    duplicates: 0,
    late: 0,
    lost: 0,
    concealed: 0,
    discarded: 0,
    underruns: 0,
    outOfRange: 0,
    resets: 0,
  };
}

/**
 * A playout buffer for one RTP stream. Push every packet as it arrives; pull once per frame.
 */
export class JitterBuffer<T> {
  /** Running counters. */
  readonly stats: JitterBufferStats = emptyJitterStats();
  readonly #clockMs: number;
  readonly #frameMs: number;
  readonly #minFrames: number;
  readonly #maxFrames: number;
  readonly #minDelayMs: number;
  readonly #maxDelayMs: number;
  readonly #factor: number;
  readonly #maxDropout: number;
  readonly #maxMisorder: number;
  readonly #mask: number;
  /** Extended sequence number last stored in each slot; -1 when never used. */
  readonly #seqs: Int32Array;
  /** Payload waiting in each slot; undefined once played or never filled. */
  readonly #items: (T | undefined)[];
  #started = false;
  #playing = false;
  #playedSinceStart = false;
  #ssrc: number | undefined;
  /** Extended sequence number of the next frame to play, and the highest one received. */
  #play = 0;
  #highest = 0;
  /** The 16-bit sequence number a wild jump must be followed by to be believed; -1 none. */
  #probation = -1;
  #jitterMs = 0;
  #lastTransit = Number.NaN;
  #target: number;
  #minLevel = Infinity;
  #windowPulls = 0;
  /** Pulls made while refilling with something buffered. */
  #waitPulls = 0;

  /** A buffer for a stream at `opts.clockRate`. */
  constructor(opts: JitterBufferOptions) {
    if (!(opts.clockRate > 0)) throw new RangeError("JitterBuffer: clockRate must be positive");
    this.#frameMs = opts.frameMs ?? 20;
    this.#clockMs = opts.clockRate / 1000;
    this.#minDelayMs = opts.minDelayMs ?? 20;
    this.#maxDelayMs = Math.max(this.#minDelayMs, opts.maxDelayMs ?? 200);
    this.#minFrames = Math.max(1, Math.ceil(this.#minDelayMs / this.#frameMs));
    this.#maxFrames = Math.max(this.#minFrames, Math.ceil(this.#maxDelayMs / this.#frameMs));
    this.#factor = opts.jitterFactor ?? 4;
    this.#maxDropout = opts.maxDropout ?? 3000;
    this.#maxMisorder = opts.maxMisorder ?? 100;
    let size = 16;
    while (size < this.#maxFrames + this.#maxMisorder + 1) size *= 2;
    this.#mask = size - 1;
    this.#seqs = new Int32Array(size).fill(-1);
    this.#items = new Array<T | undefined>(size).fill(undefined);
    this.#target = this.#minFrames;
  }

  /** Frames from the next one to play to the newest received (gaps included); 0 when empty. */
  get depth(): number {
    return this.#started ? Math.max(0, this.#highest - this.#play + 1) : 0;
  }

  /** The depth, in frames, playout starts (and restarts) at; it follows the jitter estimate. */
  get targetDepth(): number {
    return this.#target;
  }

  /** RFC 3550 interarrival jitter estimate, ms. */
  get jitterMs(): number {
    return this.#jitterMs;
  }

  /** True while frames are being played out (false before the start and after an underrun). */
  get playing(): boolean {
    return this.#playing;
  }

  /**
   * Offer a packet: its 16-bit sequence number, 32-bit RTP timestamp, payload (kept as is:
   * pass a copy if the caller reuses the buffer), arrival time in ms and, when known, SSRC.
   */
  push(
    sequence: number,
    timestamp: number,
    payload: T,
    arrivalMs: number,
    ssrc?: number,
  ): JitterPush {
    let outcome: JitterPush = "queued";
    if (ssrc !== undefined && this.#ssrc !== undefined && ssrc !== this.#ssrc && this.#started) {
      this.#restart();
      outcome = "reset";
    }
    if (ssrc !== undefined) this.#ssrc = ssrc;
    const seq = sequence & 0xffff;
    let ext: number;
    if (!this.#started) {
      ext = EXT_BASE + seq;
      this.#started = true;
      this.#play = this.#highest = ext;
    } else {
      const d = ((seq - (this.#highest & 0xffff)) << 16) >> 16;
      const wild = d >= this.#maxDropout || -d > this.#maxMisorder;
      if (wild) {
        if (seq !== this.#probation) {
          this.#probation = (seq + 1) & 0xffff;
          this.stats.outOfRange++;
          return "out-of-range";
        }
        this.#restart();
        this.#started = true;
        ext = EXT_BASE + seq;
        this.#play = this.#highest = ext;
        outcome = "reset";
      } else ext = this.#highest + d;
    }
    this.#probation = -1;
    this.#estimateJitter(timestamp, arrivalMs);
    const slot = ext & this.#mask;
    if (ext < this.#play) {
      const reach = this.#highest - ext + 1;
      if (!this.#playedSinceStart && reach <= this.#maxFrames && this.#seqs[slot] !== ext) {
        this.#play = ext; // reordered at the very start: nothing played yet, so take it
      } else {
        if (this.#seqs[slot] === ext) this.stats.duplicates++;
        else this.stats.late++;
        return this.#seqs[slot] === ext ? "duplicate" : "late";
      }
    } else if (this.#seqs[slot] === ext) {
      this.stats.duplicates++;
      return "duplicate";
    }
    if (ext - this.#play + 1 > this.#maxFrames) this.#skipTo(ext - this.#target + 1);
    this.#seqs[slot] = ext;
    this.#items[slot] = payload;
    if (ext > this.#highest) this.#highest = ext;
    this.stats.received++;
    return outcome;
  }

  /**
   * Once per frame tick: the next payload, {@link LOST} for a frame that did not come in time
   * (conceal it), or undefined when there is nothing to play (not started, refilling after an
   * underrun, or the sender went quiet).
   */
  pull(): T | Lost | undefined {
    if (!this.#started) return undefined;
    const level = this.#highest - this.#play + 1;
    if (!this.#playing) {
      // Refilling: start at the target depth, or once the first frame has waited that long
      // (the sender may have stopped: its last frames must not stay in the buffer).
      if (level <= 0) return undefined;
      if (level < this.#target && ++this.#waitPulls < this.#target) return undefined;
      this.#playing = true;
      this.#waitPulls = 0;
      this.#minLevel = Infinity;
      this.#windowPulls = 0;
    }
    if (level <= 0) {
      // Ran dry: wait until the target depth has built up again (a longer delay, not a loss).
      this.#playing = false;
      this.stats.underruns++;
      return undefined;
    }
    if (level < this.#minLevel) this.#minLevel = level;
    if (++this.#windowPulls >= SHRINK_WINDOW) {
      // Two frames or more above the target for the whole window: cut one frame of delay.
      if (this.#minLevel >= this.#target + 2) this.#skipTo(this.#play + 1);
      this.#minLevel = Infinity;
      this.#windowPulls = 0;
    }
    this.#playedSinceStart = true;
    const slot = this.#play & this.#mask;
    const item = this.#items[slot];
    const here = this.#seqs[slot] === this.#play && item !== undefined;
    this.#play++;
    if (here) {
      this.#items[slot] = undefined;
      return item;
    }
    this.stats.lost++;
    this.stats.concealed++;
    return LOST;
  }

  /** Forget the stream (buffered packets, position, SSRC); counters and jitter estimate stay. */
  reset(): void {
    this.#restart();
    this.#ssrc = undefined;
  }

  #restart(): void {
    if (this.#started) this.stats.resets++;
    this.#items.fill(undefined);
    this.#seqs.fill(-1);
    this.#started = this.#playing = this.#playedSinceStart = false;
    this.#probation = -1;
    this.#waitPulls = 0;
    this.#lastTransit = Number.NaN;
  }

  /** Move playout forward to `to`: buffered frames before it are discarded, missing ones lost. */
  #skipTo(to: number): void {
    for (; this.#play < to; this.#play++) {
      const slot = this.#play & this.#mask;
      if (this.#seqs[slot] === this.#play && this.#items[slot] !== undefined) {
        this.#items[slot] = undefined;
        this.stats.discarded++;
      } else this.stats.lost++;
    }
  }

  /** RFC 3550 A.8: J += (|D| - J) / 16, D the change in transit time between packets. */
  #estimateJitter(timestamp: number, arrivalMs: number): void {
    // Transit in ms, modulo 2^32 timestamp units: only differences of it are used.
    const transit = arrivalMs - (timestamp >>> 0) / this.#clockMs;
    const last = this.#lastTransit;
    this.#lastTransit = transit;
    if (Number.isNaN(last)) return;
    let d = Math.abs(transit - last);
    // A timestamp wrap shows up as a jump of 2^32 units: take the difference modulo it.
    const wrapMs = 0x100000000 / this.#clockMs;
    if (d > wrapMs / 2) d = Math.abs(d - wrapMs);
    this.#jitterMs += (d - this.#jitterMs) / 16;
    const want = Math.ceil(
      Math.min(this.#maxDelayMs, Math.max(this.#minDelayMs, this.#factor * this.#jitterMs)) /
        this.#frameMs,
    );
    this.#target = Math.min(this.#maxFrames, Math.max(this.#minFrames, want));
  }
}
