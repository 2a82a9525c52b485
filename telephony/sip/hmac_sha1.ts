/**
 * HMAC-SHA1 (RFC 2104) for SRTP authentication, synchronous and allocation-free per message:
 * the key's inner and outer pad states are hashed once, so each tag costs the message's own
 * SHA-1 blocks plus one. `node:crypto`'s `createHmac` needs a new object per message, which
 * costs more than the whole SRTP packet budget.
 *
 * @module
 */

/** SHA-1 state after absorbing one 64-byte block. */
type State = Int32Array;

const W = new Int32Array(80);

/** One SHA-1 compression of the 64 bytes of `block` at `off` into `h`. */
function compress(h: State, block: Uint8Array, off: number): void {
  for (let t = 0; t < 16; t++) {
    const i = off + 4 * t;
    W[t] = (block[i] << 24) | (block[i + 1] << 16) | (block[i + 2] << 8) | block[i + 3];
  }
  for (let t = 16; t < 80; t++) {
    const x = W[t - 3] ^ W[t - 8] ^ W[t - 14] ^ W[t - 16];
    W[t] = (x << 1) | (x >>> 31);
  }
  let a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
  for (let t = 0; t < 80; t++) {
    let f: number, k: number;
    if (t < 20) {
      f = (b & c) | (~b & d);
      k = 0x5a827999;
    } else if (t < 40) {
      f = b ^ c ^ d;
      k = 0x6ed9eba1;
    } else if (t < 60) {
      f = (b & c) | (b & d) | (c & d);
      k = 0x8f1bbcdc;
    } else {
      f = b ^ c ^ d;
      k = 0xca62c1d6;
    }
    const tmp = (((a << 5) | (a >>> 27)) + f + e + k + W[t]) | 0;
    e = d;
    d = c;
    c = (b << 30) | (b >>> 2);
    b = a;
    a = tmp;
  }
  h[0] = (h[0] + a) | 0;
  h[1] = (h[1] + b) | 0;
  h[2] = (h[2] + c) | 0;
  h[3] = (h[3] + d) | 0;
  h[4] = (h[4] + e) | 0;
}

const IV = [0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0];

function padState(key: Uint8Array, pad: number): State {
  const block = new Uint8Array(64).fill(pad);
  for (let i = 0; i < key.length; i++) block[i] ^= key[i];
  const h = Int32Array.from(IV);
  compress(h, block, 0);
  return h;
}

/** An HMAC-SHA1 key with its pad states precomputed; reuse it for every message. */
export class HmacSha1 {
  readonly #inner: State;
  readonly #outer: State;
  readonly #h = new Int32Array(5);
  #buf = new Uint8Array(256);
  readonly #outerBlock = new Uint8Array(64);

  /** A key of at most 64 bytes (SRTP's are 20). */
  constructor(key: Uint8Array) {
    if (key.length > 64) throw new RangeError("HMAC-SHA1 keys over 64 bytes are not supported");
    this.#inner = padState(key, 0x36);
    this.#outer = padState(key, 0x5c);
    // The outer message is always the 20-byte inner digest: its padding never changes.
    this.#outerBlock[20] = 0x80;
    this.#outerBlock[62] = ((64 + 20) * 8) >>> 8;
    this.#outerBlock[63] = ((64 + 20) * 8) & 0xff;
  }

  /**
   * Write the first `tagLen` bytes of HMAC(key, `data` || `trailer` as 4 big-endian bytes) into
   * `out` at `outOff` (SRTP authenticates the packet followed by its rollover counter or index).
   */
  sign(
    data: Uint8Array,
    trailer: number,
    out: Uint8Array,
    outOff: number,
    tagLen: number,
  ): void {
    const len = data.length + 4;
    const blocks = ((len + 8) >> 6) + 1;
    if (this.#buf.length < blocks * 64) this.#buf = new Uint8Array(blocks * 64);
    const buf = this.#buf;
    buf.set(data, 0);
    buf[data.length] = trailer >>> 24;
    buf[data.length + 1] = trailer >>> 16;
    buf[data.length + 2] = trailer >>> 8;
    buf[data.length + 3] = trailer;
    buf.fill(0, len, blocks * 64);
    buf[len] = 0x80;
    const bits = (len + 64) * 8;
    const end = blocks * 64;
    buf[end - 4] = bits >>> 24;
    buf[end - 3] = bits >>> 16;
    buf[end - 2] = bits >>> 8;
    buf[end - 1] = bits;
    const h = this.#h;
    h.set(this.#inner);
    for (let b = 0; b < blocks; b++) compress(h, buf, b * 64);
    const ob = this.#outerBlock;
    for (let i = 0; i < 5; i++) {
      ob[4 * i] = h[i] >>> 24;
      ob[4 * i + 1] = h[i] >>> 16;
      ob[4 * i + 2] = h[i] >>> 8;
      ob[4 * i + 3] = h[i];
    }
    h.set(this.#outer);
    compress(h, ob, 0);
    for (let i = 0; i < tagLen; i++) out[outOff + i] = h[i >> 2] >>> (24 - 8 * (i & 3));
  }
}
