/**
 * AES counter mode as SRTP uses it (RFC 3711 §4.1.1) and the SRTP key derivation (§4.3). AES
 * comes from `node:crypto` in ECB mode over counter blocks: one cipher object per key, reused
 * for every packet, synchronous (WebCrypto would cost a promise per packet).
 *
 * @module
 */

import { type Cipheriv, createCipheriv } from "node:crypto";

/** Master key length of the AES_CM_128 suites, bytes. */
export const MASTER_KEY_BYTES = 16;
/** Master salt length of the AES_CM_128 suites, bytes. */
export const MASTER_SALT_BYTES = 14;
/** Authentication key length (HMAC-SHA1), bytes. */
export const AUTH_KEY_BYTES = 20;

/** An AES-128 key turning 16-byte counter blocks into keystream. */
export class AesCounter {
  readonly #ecb: Cipheriv;
  #blocks = new Uint8Array(16 * 12);

  /** A 16-byte AES key. */
  constructor(key: Uint8Array) {
    this.#ecb = createCipheriv("aes-128-ecb", key, null);
    this.#ecb.setAutoPadding(false);
  }

  /**
   * XOR `data` with the keystream that starts at the 16-byte `iv` (its last two bytes are the
   * block counter, zero here). In place.
   */
  xor(iv: Uint8Array, data: Uint8Array): void {
    const n = (data.length + 15) >> 4;
    if (n === 0) return;
    if (this.#blocks.length < n * 16) this.#blocks = new Uint8Array(n * 16);
    const blocks = this.#blocks;
    for (let b = 0; b < n; b++) {
      const o = b * 16;
      blocks.set(iv, o);
      blocks[o + 14] = b >>> 8;
      blocks[o + 15] = b;
    }
    const ks = this.#ecb.update(blocks.subarray(0, n * 16));
    for (let i = 0; i < data.length; i++) data[i] ^= ks[i];
  }

  /** `n` bytes of keystream from `iv`. */
  keystream(iv: Uint8Array, n: number): Uint8Array {
    const out = new Uint8Array(n);
    this.xor(iv, out);
    return out;
  }
}

/** The keys one direction of SRTP or SRTCP uses, derived from the master key and salt. */
export interface SessionKeys {
  /** AES-128 session key. */
  cipher: AesCounter;
  /** 14-byte session salt. */
  salt: Uint8Array;
  /** 20-byte HMAC-SHA1 session key. */
  auth: Uint8Array;
}

/** The session keys of one label set: 0, 1, 2 for SRTP; 3, 4, 5 for SRTCP. */
export function deriveSessionKeys(
  masterKey: Uint8Array,
  masterSalt: Uint8Array,
  rtcp: boolean,
): SessionKeys {
  const prf = new AesCounter(masterKey);
  const base = rtcp ? 3 : 0;
  const derive = (label: number, n: number): Uint8Array => {
    // key_derivation_rate 0: x = (label << 48) XOR master_salt, IV = x * 2^16.
    const iv = new Uint8Array(16);
    iv.set(masterSalt, 0);
    iv[7] ^= label;
    return prf.keystream(iv, n);
  };
  return {
    cipher: new AesCounter(derive(base, MASTER_KEY_BYTES)),
    auth: derive(base + 1, AUTH_KEY_BYTES),
    salt: derive(base + 2, MASTER_SALT_BYTES),
  };
}

/**
 * The counter-mode IV of one packet into `iv`: session salt XOR SSRC (bytes 4..7) XOR the
 * 48-bit packet index (bytes 8..13), block counter zero.
 */
export function packetIv(iv: Uint8Array, salt: Uint8Array, ssrc: number, index: number): void {
  iv.set(salt, 0);
  iv[14] = 0;
  iv[15] = 0;
  iv[4] ^= ssrc >>> 24;
  iv[5] ^= ssrc >>> 16;
  iv[6] ^= ssrc >>> 8;
  iv[7] ^= ssrc;
  const hi = Math.floor(index / 0x100000000);
  const lo = index >>> 0;
  iv[8] ^= hi >>> 8;
  iv[9] ^= hi;
  iv[10] ^= lo >>> 24;
  iv[11] ^= lo >>> 16;
  iv[12] ^= lo >>> 8;
  iv[13] ^= lo;
}
