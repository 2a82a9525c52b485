/**
 * G.711 mu-law (PCMU) and A-law (PCMA) codecs over whole buffers, table-driven.
 *
 * Decoding is bit-exact with the ITU-T G.711 tables (mu-law +-32124, A-law +-32256 at 16-bit
 * scale). Encoding follows the classic Sun `g711.c` quantiser that Python's `audioop` (and
 * therefore pipecat) uses: the int16 sample is shifted arithmetically to 14 bits (mu-law) or
 * 13 bits (A-law) and looked up in a precomputed table, so the hot path has no per-sample
 * branch. The tables cost 16 KiB (mu-law) + 8 KiB (A-law) + 1 KiB, built once at import.
 *
 * @example
 * ```ts
 * import { ulawDecode, ulawEncode } from "@flowcat/flowcat/audio";
 * const bytes = ulawEncode(new Int16Array([0, 1000, -1000])); // [0xff, 0xce, 0x4e]
 * const pcm = ulawDecode(bytes); // [0, 988, -988]
 * ```
 * @module
 */

import { FlowcatError } from "../errors.ts";

const ULAW_SEG_END = [0x3f, 0x7f, 0xff, 0x1ff, 0x3ff, 0x7ff, 0xfff, 0x1fff];
const ALAW_SEG_END = [0x1f, 0x3f, 0x7f, 0xff, 0x1ff, 0x3ff, 0x7ff, 0xfff];

function segment(v: number, ends: readonly number[]): number {
  for (let i = 0; i < ends.length; i++) if (v <= ends[i]) return i;
  return ends.length;
}

/** mu-law code of a 14-bit two's complement value (Sun g711.c `linear2ulaw`). */
function ulawFrom14(v: number): number {
  let mask = 0xff;
  if (v < 0) {
    v = -v;
    mask = 0x7f;
  }
  v = Math.min(v, 8159) + 0x21;
  const seg = segment(v, ULAW_SEG_END);
  if (seg >= 8) return 0x7f ^ mask;
  return ((seg << 4) | ((v >> (seg + 1)) & 0x0f)) ^ mask;
}

/** A-law code of a 13-bit two's complement value (Sun g711.c `linear2alaw`). */
function alawFrom13(v: number): number {
  let mask = 0xd5;
  if (v < 0) {
    mask = 0x55;
    v = -v - 1;
  }
  const seg = segment(v, ALAW_SEG_END);
  if (seg >= 8) return 0x7f ^ mask;
  const mant = seg < 2 ? (v >> 1) & 0x0f : (v >> seg) & 0x0f;
  return ((seg << 4) | mant) ^ mask;
}

function ulawTo16(u: number): number {
  u = ~u & 0xff;
  const e = (u >> 4) & 7;
  const s = ((((u & 0x0f) << 3) + 0x84) << e) - 0x84;
  return u & 0x80 ? -s : s;
}

function alawTo16(a: number): number {
  a ^= 0x55;
  let t = (a & 0x0f) << 4;
  const seg = (a & 0x70) >> 4;
  if (seg === 0) t += 8;
  else if (seg === 1) t += 0x108;
  else t = (t + 0x108) << (seg - 1);
  return a & 0x80 ? t : -t;
}

// Encode tables are indexed by the shifted sample's low bits (two's complement wrap), so
// `(s >> 2) & 0x3fff` needs no sign branch.
const ULAW_ENC = new Uint8Array(1 << 14);
const ALAW_ENC = new Uint8Array(1 << 13);
const ULAW_DEC = new Int16Array(256);
const ALAW_DEC = new Int16Array(256);
for (let v = -(1 << 13); v < 1 << 13; v++) ULAW_ENC[v & 0x3fff] = ulawFrom14(v);
for (let v = -(1 << 12); v < 1 << 12; v++) ALAW_ENC[v & 0x1fff] = alawFrom13(v);
for (let c = 0; c < 256; c++) {
  ULAW_DEC[c] = ulawTo16(c);
  ALAW_DEC[c] = alawTo16(c);
}

function outBytes(n: number, out: Uint8Array | undefined, fn: string): Uint8Array {
  if (!out) return new Uint8Array(n);
  if (out.length < n) throw new FlowcatError("other", `${fn}: out holds ${out.length} < ${n}`);
  return out;
}

function outPcm(n: number, out: Int16Array | undefined, fn: string): Int16Array {
  if (!out) return new Int16Array(n);
  if (out.length < n) throw new FlowcatError("other", `${fn}: out holds ${out.length} < ${n}`);
  return out;
}

/**
 * Encode int16 PCM to mu-law bytes. Writes into `out` when given (it must hold `pcm.length`
 * bytes) and returns the part written.
 *
 * @example
 * ```ts
 * import { ulawEncode } from "@flowcat/flowcat/audio";
 * declare const frame: { pcm: Int16Array };
 * const scratch = new Uint8Array(160);
 * const payload = ulawEncode(frame.pcm, scratch); // no allocation
 * ```
 */
export function ulawEncode(pcm: Int16Array, out?: Uint8Array): Uint8Array {
  const n = pcm.length;
  const dst = outBytes(n, out, "ulawEncode");
  for (let i = 0; i < n; i++) dst[i] = ULAW_ENC[(pcm[i] >> 2) & 0x3fff];
  return n === dst.length ? dst : dst.subarray(0, n);
}

/** Decode mu-law bytes to int16 PCM, into `out` when given; returns the part written. */
export function ulawDecode(bytes: Uint8Array, out?: Int16Array): Int16Array {
  const n = bytes.length;
  const dst = outPcm(n, out, "ulawDecode");
  for (let i = 0; i < n; i++) dst[i] = ULAW_DEC[bytes[i]];
  return n === dst.length ? dst : dst.subarray(0, n);
}

// The A-law pair repeats the mu-law pair with its own table: a shared loop taking the table
// would cost an indirection per sample on the hot path.

/** Encode int16 PCM to A-law bytes, into `out` when given; returns the part written. */
export function alawEncode(pcm: Int16Array, out?: Uint8Array): Uint8Array {
  const n = pcm.length;
  const dst = outBytes(n, out, "alawEncode");
  for (let i = 0; i < n; i++) dst[i] = ALAW_ENC[(pcm[i] >> 3) & 0x1fff];
  return n === dst.length ? dst : dst.subarray(0, n);
}

/** Decode A-law bytes to int16 PCM, into `out` when given; returns the part written. */
export function alawDecode(bytes: Uint8Array, out?: Int16Array): Int16Array {
  const n = bytes.length;
  const dst = outPcm(n, out, "alawDecode");
  for (let i = 0; i < n; i++) dst[i] = ALAW_DEC[bytes[i]];
  return n === dst.length ? dst : dst.subarray(0, n);
}

/** mu-law code of one int16 sample. */
export function linearToUlaw(sample: number): number {
  return ULAW_ENC[(sample >> 2) & 0x3fff];
}

/** int16 value of one mu-law code. */
export function ulawToLinear(code: number): number {
  return ULAW_DEC[code & 0xff];
}

/** A-law code of one int16 sample. */
export function linearToAlaw(sample: number): number {
  return ALAW_ENC[(sample >> 3) & 0x1fff];
}

/** int16 value of one A-law code. */
export function alawToLinear(code: number): number {
  return ALAW_DEC[code & 0xff];
}

/** mu-law byte of digital silence. */
export const ULAW_SILENCE = 0xff;
/** A-law byte closest to silence (decodes to +8). */
export const ALAW_SILENCE = 0xd5;
