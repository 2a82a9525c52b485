/**
 * SRTP and SRTCP (RFC 3711) with the AES_CM_128_HMAC_SHA1_80 and _32 suites, the ones SDES
 * (`a=crypto`, RFC 4568) offers. One {@link SrtpContext} protects what we send with our master
 * key; another unprotects what the peer sends with its key. Packets that fail authentication or
 * replay a packet index already seen (64-packet window) are dropped and counted; the rollover
 * counter follows sequence wraps on both sides.
 *
 * Synchronous and allocation-light: {@link SrtpContext.protect} writes into one reused buffer
 * (send it before protecting the next packet), {@link SrtpContext.unprotect} decrypts in place.
 *
 * @example
 * ```ts
 * import { SrtpContext } from "@flowcat/flowcat/sip";
 * declare const key: Uint8Array; // 16 bytes
 * declare const salt: Uint8Array; // 14 bytes
 * declare const rtp: Uint8Array;
 * const tx = new SrtpContext({ suite: "AES_CM_128_HMAC_SHA1_80", key, salt });
 * const rx = new SrtpContext({ suite: "AES_CM_128_HMAC_SHA1_80", key, salt });
 * const wire = tx.protect(rtp).slice();
 * const plain = rx.unprotect(wire); // the RTP packet again, or undefined (counted in rx.stats)
 * ```
 * @module
 */

import { HmacSha1 } from "./hmac_sha1.ts";
import {
  deriveSessionKeys,
  MASTER_KEY_BYTES,
  MASTER_SALT_BYTES,
  packetIv,
  type SessionKeys,
} from "./srtp_cipher.ts";

/** The SDES crypto suites supported. */
export type SrtpSuite = "AES_CM_128_HMAC_SHA1_80" | "AES_CM_128_HMAC_SHA1_32";

/** Supported suites, strongest first (our offer's order). */
export const SRTP_SUITES: readonly SrtpSuite[] = Object.freeze([
  "AES_CM_128_HMAC_SHA1_80",
  "AES_CM_128_HMAC_SHA1_32",
]);

/** SRTP authentication tag length of a suite, bytes (SRTCP always uses 10). */
export function srtpTagBytes(suite: SrtpSuite): number {
  return suite === "AES_CM_128_HMAC_SHA1_32" ? 4 : 10;
}

/** One direction's master key material. */
export interface SrtpKeyMaterial {
  /** Crypto suite. */
  suite: SrtpSuite;
  /** 16-byte master key. */
  key: Uint8Array;
  /** 14-byte master salt. */
  salt: Uint8Array;
}

/** Why packets were dropped by {@link SrtpContext.unprotect} and `unprotectRtcp`. */
export interface SrtpStats {
  /** Authentication tag did not match (tampered, or the wrong key). */
  authFailed: number;
  /** Packet index already received or older than the replay window. */
  replayed: number;
  /** Too short to hold a header and a tag. */
  malformed: number;
}

const SRTCP_TAG_BYTES = 10;
const REPLAY_WINDOW = 64;

/** Receive state of one SSRC: highest index, rollover counter and the replay window. */
interface ReplayState {
  roc: number;
  seq: number;
  /** Bit i set: highest index - i was received (i < 64), as two 32-bit halves. */
  lo: number;
  hi: number;
}

/** Bytes of RTP header (fixed part, CSRCs and extension) in `pkt`, or -1 when truncated. */
function rtpHeaderBytes(pkt: Uint8Array, len: number): number {
  if (len < 12 || pkt[0] >> 6 !== 2) return -1;
  let n = 12 + 4 * (pkt[0] & 0x0f);
  if (pkt[0] & 0x10) {
    if (len < n + 4) return -1;
    n += 4 + 4 * ((pkt[n + 2] << 8) | pkt[n + 3]);
  }
  return n <= len ? n : -1;
}

function u32(b: Uint8Array, o: number): number {
  return ((b[o] << 24) | (b[o + 1] << 16) | (b[o + 2] << 8) | b[o + 3]) >>> 0;
}

/** Constant-time comparison of `n` tag bytes. */
function tagsEqual(a: Uint8Array, ao: number, b: Uint8Array, bo: number, n: number): boolean {
  let diff = 0;
  for (let i = 0; i < n; i++) diff |= a[ao + i] ^ b[bo + i];
  return diff === 0;
}

/** SRTP/SRTCP transforms for one direction (one master key), any number of SSRCs. */
export class SrtpContext {
  /** The suite in use. */
  readonly suite: SrtpSuite;
  readonly #rtp: SessionKeys;
  readonly #rtcp: SessionKeys;
  readonly #rtpMac: HmacSha1;
  readonly #rtcpMac: HmacSha1;
  readonly #tag: number;
  readonly #iv = new Uint8Array(16);
  readonly #mac = new Uint8Array(20);
  #out = new Uint8Array(256);
  /** Send side: rollover counter and last sequence per SSRC. */
  readonly #sendRoc = new Map<number, { roc: number; seq: number }>();
  #rtcpIndex = 0;
  readonly #recv = new Map<number, ReplayState>();
  readonly #recvRtcp = new Map<number, ReplayState>();
  readonly #stats: SrtpStats = { authFailed: 0, replayed: 0, malformed: 0 };

  /** Derive the session keys of `material`. Throws a RangeError on wrong key or salt sizes. */
  constructor(material: SrtpKeyMaterial) {
    if (material.key.length !== MASTER_KEY_BYTES || material.salt.length !== MASTER_SALT_BYTES) {
      throw new RangeError("SRTP needs a 16-byte master key and a 14-byte master salt");
    }
    this.suite = material.suite;
    this.#tag = srtpTagBytes(material.suite);
    this.#rtp = deriveSessionKeys(material.key, material.salt, false);
    this.#rtcp = deriveSessionKeys(material.key, material.salt, true);
    this.#rtpMac = new HmacSha1(this.#rtp.auth);
    this.#rtcpMac = new HmacSha1(this.#rtcp.auth);
  }

  /** Drop counters so far (a copy). */
  get stats(): SrtpStats {
    return { ...this.#stats };
  }

  #output(len: number): Uint8Array {
    if (this.#out.length < len) this.#out = new Uint8Array(len * 2);
    return this.#out;
  }

  /**
   * Encrypt and sign one RTP packet. The result is a view of a reused buffer, valid until the
   * next call. Throws a RangeError when `rtp` is not an RTP packet.
   */
  protect(rtp: Uint8Array): Uint8Array {
    const hdr = rtpHeaderBytes(rtp, rtp.length);
    if (hdr < 0) throw new RangeError("SRTP: not an RTP packet");
    const ssrc = u32(rtp, 8);
    const seq = (rtp[2] << 8) | rtp[3];
    let st = this.#sendRoc.get(ssrc);
    if (st === undefined) {
      st = { roc: 0, seq };
      this.#sendRoc.set(ssrc, st);
    } else {
      // The sequence wrapped: a new rollover period (a jump back over half the space).
      if (seq < st.seq && st.seq - seq > 0x8000) st.roc = (st.roc + 1) >>> 0;
      st.seq = seq;
    }
    const out = this.#output(rtp.length + this.#tag);
    out.set(rtp, 0);
    const body = out.subarray(hdr, rtp.length);
    packetIv(this.#iv, this.#rtp.salt, ssrc, st.roc * 0x10000 + seq);
    this.#rtp.cipher.xor(this.#iv, body);
    this.#rtpMac.sign(out.subarray(0, rtp.length), st.roc, out, rtp.length, this.#tag);
    return out.subarray(0, rtp.length + this.#tag);
  }

  /**
   * Check and decrypt one SRTP packet in place; the RTP packet (a view of `srtp`), or undefined
   * when it is malformed, fails authentication or is a replay (each counted in {@link stats}).
   */
  unprotect(srtp: Uint8Array): Uint8Array | undefined {
    const len = srtp.length - this.#tag;
    const hdr = rtpHeaderBytes(srtp, len);
    if (hdr < 0) {
      this.#stats.malformed++;
      return undefined;
    }
    const ssrc = u32(srtp, 8);
    const seq = (srtp[2] << 8) | srtp[3];
    let st = this.#recv.get(ssrc);
    let roc = 0;
    if (st !== undefined) {
      // RFC 3711 §3.3.1: guess the rollover counter from the highest sequence seen.
      roc = st.roc;
      if (st.seq < 0x8000) {
        if (seq - st.seq > 0x8000) roc = st.roc - 1;
      } else if (st.seq - 0x8000 > seq) roc = st.roc + 1;
      if (roc < 0 || this.#seen(st, roc * 0x10000 + seq)) {
        this.#stats.replayed++;
        return undefined;
      }
    }
    this.#rtpMac.sign(srtp.subarray(0, len), roc >>> 0, this.#mac, 0, this.#tag);
    if (!tagsEqual(this.#mac, 0, srtp, len, this.#tag)) {
      this.#stats.authFailed++;
      return undefined;
    }
    const index = roc * 0x10000 + seq;
    if (st === undefined) {
      st = { roc, seq, lo: 1, hi: 0 };
      this.#recv.set(ssrc, st);
    } else this.#mark(st, index, roc, seq);
    packetIv(this.#iv, this.#rtp.salt, ssrc, index);
    this.#rtp.cipher.xor(this.#iv, srtp.subarray(hdr, len));
    return srtp.subarray(0, len);
  }

  /** True when `index` was received already or is older than the window. */
  #seen(st: ReplayState, index: number): boolean {
    const delta = st.roc * 0x10000 + st.seq - index;
    // delta 0 is the newest index itself (bit 0 of the window), so its replay is caught too.
    if (delta < 0) return false;
    if (delta >= REPLAY_WINDOW) return true;
    return delta < 32 ? (st.lo >>> delta & 1) === 1 : (st.hi >>> (delta - 32) & 1) === 1;
  }

  /** Record an authenticated `index` in the window, moving the window when it is newer. */
  #mark(st: ReplayState, index: number, roc: number, seq: number): void {
    const top = st.roc * 0x10000 + st.seq;
    const delta = index - top;
    if (delta > 0) {
      if (delta >= REPLAY_WINDOW) {
        st.lo = 1;
        st.hi = 0;
      } else if (delta >= 32) {
        st.hi = st.lo << (delta - 32);
        st.lo = 1;
      } else {
        st.hi = (st.hi << delta) | (st.lo >>> (32 - delta));
        st.lo = (st.lo << delta) | 1;
      }
      st.roc = roc;
      st.seq = seq;
      return;
    }
    const back = -delta;
    if (back < 32) st.lo |= 1 << back;
    else st.hi |= 1 << (back - 32);
  }

  /**
   * Encrypt and sign one RTCP compound packet (E flag set, 31-bit SRTCP index appended). The
   * result is a view of a reused buffer, valid until the next call.
   */
  protectRtcp(rtcp: Uint8Array): Uint8Array {
    if (rtcp.length < 8) throw new RangeError("SRTCP: not an RTCP packet");
    const index = this.#rtcpIndex;
    this.#rtcpIndex = (index + 1) & 0x7fffffff;
    const n = rtcp.length;
    const out = this.#output(n + 4 + SRTCP_TAG_BYTES);
    out.set(rtcp, 0);
    packetIv(this.#iv, this.#rtcp.salt, u32(rtcp, 4), index);
    this.#rtcp.cipher.xor(this.#iv, out.subarray(8, n));
    const eIndex = (0x80000000 | index) >>> 0;
    out[n] = eIndex >>> 24;
    out[n + 1] = eIndex >>> 16;
    out[n + 2] = eIndex >>> 8;
    out[n + 3] = eIndex;
    this.#rtcpMac.sign(out.subarray(0, n), eIndex, out, n + 4, SRTCP_TAG_BYTES);
    return out.subarray(0, n + 4 + SRTCP_TAG_BYTES);
  }

  /** Check and decrypt one SRTCP packet in place; the RTCP packet, or undefined (counted). */
  unprotectRtcp(srtcp: Uint8Array): Uint8Array | undefined {
    const n = srtcp.length - 4 - SRTCP_TAG_BYTES;
    if (n < 8) {
      this.#stats.malformed++;
      return undefined;
    }
    const eIndex = u32(srtcp, n);
    const index = eIndex & 0x7fffffff;
    const ssrc = u32(srtcp, 4);
    const st = this.#recvRtcp.get(ssrc);
    if (st !== undefined && this.#seen(st, index)) {
      this.#stats.replayed++;
      return undefined;
    }
    this.#rtcpMac.sign(srtcp.subarray(0, n), eIndex, this.#mac, 0, SRTCP_TAG_BYTES);
    if (!tagsEqual(this.#mac, 0, srtcp, n + 4, SRTCP_TAG_BYTES)) {
      this.#stats.authFailed++;
      return undefined;
    }
    if (st === undefined) this.#recvRtcp.set(ssrc, { roc: 0, seq: index, lo: 1, hi: 0 });
    else this.#mark(st, index, 0, index);
    if (eIndex & 0x80000000) {
      packetIv(this.#iv, this.#rtcp.salt, ssrc, index);
      this.#rtcp.cipher.xor(this.#iv, srtcp.subarray(8, n));
    }
    return srtcp.subarray(0, n);
  }
}
