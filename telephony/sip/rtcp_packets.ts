/**
 * RTCP packets (RFC 3550 §6): the compound report we send (SR when we have sent media since the
 * last report, else RR, then SDES with our CNAME, and BYE when we leave), the receive statistics
 * its report block carries (§6.4.1, appendix A.3 and A.8), and the validity check of an RTCP
 * datagram we receive (appendix A.2, relaxed for the reduced-size RTCP of RFC 5506: baresip, for
 * one, sends a lone APP packet as a keep-alive).
 * @module
 */

/** RTCP packet types. */
const SR = 200;
const RR = 201;
const SDES = 202;
const BYE = 203;
/** The last RTCP packet type (206: payload-specific feedback, RFC 4585). */
const LAST_TYPE = 206;
/** Seconds from 1900 (NTP) to 1970 (Unix). */
const NTP_EPOCH_OFFSET = 2208988800;

/** What we report about the peer's stream: one report block (RFC 3550 §6.4.1). */
export interface ReportBlock {
  /** The peer's SSRC. */
  ssrc: number;
  /** Fraction lost since the last report, 0-255 (of 256). */
  fractionLost: number;
  /** Packets lost since the start (may go negative with duplicates). */
  cumulativeLost: number;
  /** Highest sequence number received, with the count of wraps in the top 16 bits. */
  extendedHighestSeq: number;
  /** Interarrival jitter, in timestamp units. */
  jitter: number;
  /** Middle 32 bits of the NTP time of the peer's last SR (0: none yet). */
  lastSr: number;
  /** Time since that SR, in 1/65536 s (0: none yet). */
  delaySinceLastSr: number;
}

/** What we sent since the session began (the SR's sender info). */
export interface SenderInfo {
  /** RTP timestamp that corresponds to now. */
  rtpTimestamp: number;
  /** RTP packets sent. */
  packets: number;
  /** Payload octets sent. */
  octets: number;
}

/** The NTP time of `ms` (Unix epoch) as seconds and a 32-bit fraction. */
export function ntpTime(ms: number): { seconds: number; fraction: number } {
  const seconds = Math.floor(ms / 1000);
  return {
    seconds: (seconds + NTP_EPOCH_OFFSET) >>> 0,
    fraction: Math.floor(((ms - seconds * 1000) / 1000) * 0x100000000) >>> 0,
  };
}

/**
 * Our compound RTCP packet: SR (with `sender`) or RR, one report block when `block` is given,
 * SDES CNAME, and BYE when `bye`.
 */
export function encodeCompound(
  ssrc: number,
  cname: string,
  nowMs: number,
  sender: SenderInfo | undefined,
  block: ReportBlock | undefined,
  bye = false,
): Uint8Array {
  const name = new TextEncoder().encode(cname.slice(0, 255));
  const reportLen = 8 + (sender !== undefined ? 20 : 0) + (block !== undefined ? 24 : 0);
  // SDES chunk: SSRC, CNAME item (type, length, text), then at least one null octet to a word.
  const sdesLen = 4 + Math.ceil((4 + 2 + name.length + 1) / 4) * 4;
  const byeLen = bye ? 8 : 0;
  const out = new Uint8Array(reportLen + sdesLen + byeLen);
  const v = new DataView(out.buffer);
  const count = block !== undefined ? 1 : 0;
  v.setUint8(0, 0x80 | count);
  v.setUint8(1, sender !== undefined ? SR : RR);
  v.setUint16(2, reportLen / 4 - 1);
  v.setUint32(4, ssrc);
  let o = 8;
  if (sender !== undefined) {
    const ntp = ntpTime(nowMs);
    v.setUint32(o, ntp.seconds);
    v.setUint32(o + 4, ntp.fraction);
    v.setUint32(o + 8, sender.rtpTimestamp >>> 0);
    v.setUint32(o + 12, sender.packets >>> 0);
    v.setUint32(o + 16, sender.octets >>> 0);
    o += 20;
  }
  if (block !== undefined) {
    v.setUint32(o, block.ssrc);
    const lost = Math.max(-0x800000, Math.min(0x7fffff, block.cumulativeLost));
    v.setUint32(o + 4, ((block.fractionLost & 0xff) << 24 | (lost & 0xffffff)) >>> 0);
    v.setUint32(o + 8, block.extendedHighestSeq >>> 0);
    v.setUint32(o + 12, block.jitter >>> 0);
    v.setUint32(o + 16, block.lastSr >>> 0);
    v.setUint32(o + 20, block.delaySinceLastSr >>> 0);
    o += 24;
  }
  v.setUint8(o, 0x81);
  v.setUint8(o + 1, SDES);
  v.setUint16(o + 2, sdesLen / 4 - 1);
  v.setUint32(o + 4, ssrc);
  v.setUint8(o + 8, 1); // CNAME
  v.setUint8(o + 9, name.length);
  out.set(name, o + 10);
  o += sdesLen; // the rest of the chunk stays zero: the END item and padding
  if (bye) {
    v.setUint8(o, 0x81);
    v.setUint8(o + 1, BYE);
    v.setUint16(o + 2, 1);
    v.setUint32(o + 4, ssrc);
  }
  return out;
}

/** What a valid compound packet from the peer told us. */
export interface ReceivedRtcp {
  /** The sender's SSRC (of its first packet). */
  ssrc: number;
  /** Middle 32 bits of the NTP time of its SR, when it was one. */
  srNtpMiddle?: number;
  /** Whether it carried a BYE. */
  bye: boolean;
}

/**
 * Check an RTCP datagram (RFC 3550 A.2, RFC 5506): every packet version 2, the first one of the
 * RTCP types (SR, RR, SDES, BYE, APP, feedback) without padding, lengths adding up to the
 * datagram. Undefined when it is not valid.
 */
export function parseCompound(bytes: Uint8Array): ReceivedRtcp | undefined {
  if (bytes.length < 8 || bytes.length % 4 !== 0) return undefined;
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const first = v.getUint8(1);
  if ((v.getUint8(0) & 0xe0) !== 0x80 || first < SR || first > LAST_TYPE) return undefined;
  const out: ReceivedRtcp = { ssrc: v.getUint32(4), bye: false };
  if (first === SR && bytes.length >= 16) {
    out.srNtpMiddle = ((v.getUint32(8) & 0xffff) << 16 | v.getUint32(12) >>> 16) >>> 0;
  }
  let o = 0;
  while (o < bytes.length) {
    if (o + 4 > bytes.length || (v.getUint8(o) & 0xc0) !== 0x80) return undefined;
    if (v.getUint8(o + 1) === BYE) out.bye = true;
    o += (v.getUint16(o + 2) + 1) * 4;
  }
  return o === bytes.length ? out : undefined;
}

/** Receive statistics of the peer's stream, for our report block (RFC 3550 A.1, A.3, A.8). */
export class ReceiveStats {
  #ssrc: number | undefined;
  #baseSeq = 0;
  #maxSeq = 0;
  #cycles = 0;
  #received = 0;
  #expectedPrior = 0;
  #receivedPrior = 0;
  #transit: number | undefined;
  #jitter = 0;
  #lastSr = 0;
  #lastSrAt = 0;

  /** A packet arrived: `sequence`, `timestamp` (8 kHz) at `arrivalMs`. */
  onPacket(ssrc: number, sequence: number, timestamp: number, arrivalMs: number): void {
    if (this.#ssrc !== ssrc) {
      this.#ssrc = ssrc;
      this.#baseSeq = this.#maxSeq = sequence;
      this.#cycles =
        this.#received =
        this.#expectedPrior =
        this.#receivedPrior =
          0;
      this.#transit = undefined;
      this.#jitter = 0;
    }
    this.#received++;
    const delta = (sequence - this.#maxSeq) & 0xffff;
    if (delta > 0 && delta < 0x8000) {
      if (sequence < this.#maxSeq) this.#cycles += 0x10000;
      this.#maxSeq = sequence;
    }
    const transit = Math.round(arrivalMs * 8) - timestamp;
    if (this.#transit !== undefined) {
      const d = Math.abs(transit - this.#transit);
      this.#jitter += (d - this.#jitter) / 16;
    }
    this.#transit = transit;
  }

  /** The peer sent an SR whose NTP middle bits are `ntpMiddle`, received at `nowMs`. */
  onSenderReport(ntpMiddle: number, nowMs: number): void {
    this.#lastSr = ntpMiddle;
    this.#lastSrAt = nowMs;
  }

  /** The report block as of `nowMs` (starts a new loss interval); undefined before any packet. */
  report(nowMs: number): ReportBlock | undefined {
    if (this.#ssrc === undefined) return undefined;
    const extended = this.#cycles + this.#maxSeq;
    const expected = extended - this.#baseSeq + 1;
    const expectedInterval = expected - this.#expectedPrior;
    const receivedInterval = this.#received - this.#receivedPrior;
    this.#expectedPrior = expected;
    this.#receivedPrior = this.#received;
    const lostInterval = expectedInterval - receivedInterval;
    return {
      ssrc: this.#ssrc,
      fractionLost: expectedInterval <= 0 || lostInterval <= 0
        ? 0
        : Math.floor((lostInterval << 8) / expectedInterval),
      cumulativeLost: expected - this.#received,
      extendedHighestSeq: extended >>> 0,
      jitter: Math.floor(this.#jitter),
      lastSr: this.#lastSr,
      delaySinceLastSr: this.#lastSrAt === 0
        ? 0
        : Math.floor(((nowMs - this.#lastSrAt) / 1000) * 65536),
    };
  }
}
