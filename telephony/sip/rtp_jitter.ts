/**
 * Inbound RTP helpers: a small reordering jitter buffer keyed by 16-bit sequence number (with
 * wrap-around), and the symmetric-RTP source check that drops packets from unexpected
 * addresses (seed: "RTP from an unexpected source address is dropped").
 * @module
 */

/** What {@link JitterBuffer.push} did with a packet. */
export type PushOutcome = "queued" | "duplicate" | "late" | "overflow" | "out-of-range" | "reset";

/** Counters of a {@link JitterBuffer}. */
export interface JitterStats {
  /** Packets queued. */
  received: number;
  /** Packets handed out by pop/drain. */
  released: number;
  /** Sequence numbers skipped because they had not arrived in time. */
  lost: number;
  /** Packets dropped because their slot had already been played or skipped. */
  late: number;
  /** Packets dropped as copies of one already queued or played. */
  duplicate: number;
  /** Packets dropped because the buffer was full (the consumer is not popping). */
  overflow: number;
  /** Packets dropped for a sequence jump larger than `maxJump` (before a resync). */
  outOfRange: number;
  /** Resyncs to a new sequence space (e.g. the sender restarted). */
  resets: number;
}

/** Options for {@link JitterBuffer}. */
export interface JitterOptions {
  /** Packets held before a gap is declared lost; 3 = 60 ms of 20 ms packets. Default 3. */
  depth?: number;
  /** Sequence jumps larger than this are suspicious; two in a row resync. Default 1000. */
  maxJump?: number;
}

/** Signed distance a - b in 16-bit sequence space (-32768 to 32767). */
export function seqDiff(a: number, b: number): number {
  return ((a - b) << 16) >> 16;
}

const HISTORY = 64;
const LOST_FLAG = 0x10000;

/**
 * Reorders packets by RTP sequence number. An in-order packet is released at once (no added
 * latency); a gap is waited for until `depth` packets are held, then declared lost.
 *
 * @example
 * ```ts
 * const jb = new JitterBuffer<Uint8Array>({ depth: 3 });
 * jb.push(pkt.sequence, pkt.payload);
 * for (let p = jb.pop(); p !== undefined; p = jb.pop()) play(p);
 * ```
 */
export class JitterBuffer<T> {
  /** Running counters. */
  readonly stats: JitterStats = {
    received: 0,
    released: 0,
    lost: 0,
    late: 0,
    duplicate: 0,
    overflow: 0,
    outOfRange: 0,
    resets: 0,
  };
  readonly #depth: number;
  readonly #maxJump: number;
  #expected = -1;
  #probation = -1;
  // Sorted by distance from #expected; at most a few entries, so arrays beat a ring here.
  #seqs: number[] = [];
  #items: T[] = [];
  // Recently played (seq) or skipped (seq | LOST_FLAG) numbers, to tell duplicates from late.
  #history = new Int32Array(HISTORY).fill(-1);

  /** A buffer holding at most `depth` packets while it waits for a gap. */
  constructor(opts: JitterOptions = {}) {
    this.#depth = Math.max(1, opts.depth ?? 3);
    this.#maxJump = opts.maxJump ?? 1000;
  }

  /** Packets currently held. */
  get size(): number {
    return this.#seqs.length;
  }

  /** Sequence number expected next, or -1 before the first packet. */
  get expected(): number {
    return this.#expected;
  }

  /** Offer a packet. Duplicates, late and far-out-of-range packets are dropped and counted. */
  push(sequence: number, item: T): PushOutcome {
    const seq = sequence & 0xffff;
    if (this.#expected < 0) this.#expected = seq;
    const d = seqDiff(seq, this.#expected);
    if (d > this.#maxJump || d < -this.#maxJump) {
      if (seq !== this.#probation) {
        this.#probation = (seq + 1) & 0xffff;
        this.stats.outOfRange++;
        return "out-of-range";
      }
      this.#seqs.length = 0;
      this.#items.length = 0;
      this.#expected = seq;
      this.#probation = -1;
      this.stats.resets++;
      this.#insert(seq, item, 0);
      return "reset";
    }
    this.#probation = -1;
    if (d < 0) {
      if (this.#history[seq % HISTORY] === seq) {
        this.stats.duplicate++;
        return "duplicate";
      }
      this.stats.late++;
      return "late";
    }
    if (this.#seqs.includes(seq)) {
      this.stats.duplicate++;
      return "duplicate";
    }
    if (this.#seqs.length >= this.#depth * 4) {
      this.stats.overflow++;
      return "overflow";
    }
    this.#insert(seq, item, d);
    return "queued";
  }

  #insert(seq: number, item: T, d: number): void {
    let i = this.#seqs.length;
    while (i > 0 && seqDiff(this.#seqs[i - 1], this.#expected) > d) i--;
    this.#seqs.splice(i, 0, seq);
    this.#items.splice(i, 0, item);
    this.stats.received++;
  }

  /** The next packet in order, or undefined while waiting (for a gap, or for more packets). */
  pop(): T | undefined {
    return this.#take(false);
  }

  /** Like {@link pop} but never waits for a gap: for end of stream or a playout deadline. */
  drain(): T | undefined {
    return this.#take(true);
  }

  #take(force: boolean): T | undefined {
    if (this.#seqs.length === 0) return undefined;
    const head = this.#seqs[0];
    const gap = seqDiff(head, this.#expected);
    if (gap > 0) {
      if (!force && this.#seqs.length < this.#depth) return undefined;
      this.stats.lost += gap;
      for (let k = Math.max(0, gap - HISTORY); k < gap; k++) {
        const s = (this.#expected + k) & 0xffff;
        this.#history[s % HISTORY] = s | LOST_FLAG;
      }
    }
    this.#seqs.shift();
    const item = this.#items.shift() as T;
    this.#history[head % HISTORY] = head;
    this.#expected = (head + 1) & 0xffff;
    this.stats.released++;
    return item;
  }
}

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
 * const filter = new RtpSourceFilter({ hostname: "203.0.113.5", port: 30000 });
 * if (!filter.accept(remoteAddr)) return; // dropped and counted in filter.dropped
 * socket.send(pkt, filter.remote);
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
