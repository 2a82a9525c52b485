/**
 * Small PCM helpers: Int16 <-> little-endian bytes, level measures, saturating mix, and test
 * signal generators.
 *
 * @example
 * ```ts
 * import { int16ToBytes, rms, sine } from "@flowcat/flowcat/audio";
 * const tone = sine({ freq: 1000, sampleRate: 8000, samples: 160, amplitude: 8000 });
 * rms(tone); // ~5657
 * int16ToBytes(tone).length; // 320
 * ```
 * @module
 */

import { FlowcatError } from "../errors.ts";

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/**
 * Int16 samples to little-endian bytes. Zero-copy view on little-endian hosts when no `out` is
 * given (the result then shares memory with `pcm`).
 */
export function int16ToBytes(pcm: Int16Array, out?: Uint8Array): Uint8Array {
  const n = pcm.length * 2;
  if (!out && LITTLE_ENDIAN) return new Uint8Array(pcm.buffer, pcm.byteOffset, n);
  const dst = out ?? new Uint8Array(n);
  if (dst.length < n) {
    throw new FlowcatError("other", `int16ToBytes: out holds ${dst.length} < ${n}`);
  }
  if (LITTLE_ENDIAN) {
    dst.set(new Uint8Array(pcm.buffer, pcm.byteOffset, n));
  } else {
    const view = new DataView(dst.buffer, dst.byteOffset, n);
    for (let i = 0; i < pcm.length; i++) view.setInt16(i * 2, pcm[i], true);
  }
  return dst;
}

/**
 * Little-endian bytes to Int16 samples (an odd trailing byte is ignored). Always copies, so the
 * result is aligned and independent of `bytes`.
 */
export function bytesToInt16(bytes: Uint8Array, out?: Int16Array): Int16Array {
  const n = bytes.length >> 1;
  const dst = out ?? new Int16Array(n);
  if (dst.length < n) {
    throw new FlowcatError("other", `bytesToInt16: out holds ${dst.length} < ${n}`);
  }
  if (LITTLE_ENDIAN) {
    new Uint8Array(dst.buffer, dst.byteOffset, n * 2).set(bytes.subarray(0, n * 2));
  } else {
    const view = new DataView(bytes.buffer, bytes.byteOffset, n * 2);
    for (let i = 0; i < n; i++) dst[i] = view.getInt16(i * 2, true);
  }
  return n === dst.length ? dst : dst.subarray(0, n);
}

/** Root-mean-square level of `pcm` (0 for an empty buffer), in sample units. */
export function rms(pcm: Int16Array | Float32Array): number {
  if (pcm.length === 0) return 0;
  let acc = 0;
  for (let i = 0; i < pcm.length; i++) acc += pcm[i] * pcm[i];
  return Math.sqrt(acc / pcm.length);
}

/** Largest absolute sample of `pcm` (0 for an empty buffer). */
export function peak(pcm: Int16Array | Float32Array): number {
  let p = 0;
  for (let i = 0; i < pcm.length; i++) p = Math.max(p, Math.abs(pcm[i]));
  return p;
}

/** RMS level in dB relative to full scale (32768); -Infinity for digital silence. */
export function dbfs(pcm: Int16Array): number {
  return 20 * Math.log10(rms(pcm) / 32768);
}

/**
 * Sum `a` and `b` sample by sample with saturation at the int16 range. The result has the length
 * of the longer input; the shorter one counts as silence past its end.
 */
export function mixSaturate(a: Int16Array, b: Int16Array, out?: Int16Array): Int16Array {
  const n = Math.max(a.length, b.length);
  const dst = out ?? new Int16Array(n);
  if (dst.length < n) {
    throw new FlowcatError("other", `mixSaturate: out holds ${dst.length} < ${n}`);
  }
  const common = Math.min(a.length, b.length);
  for (let i = 0; i < common; i++) dst[i] = Math.max(-32768, Math.min(32767, a[i] + b[i]));
  const rest = a.length > b.length ? a : b;
  dst.set(rest.subarray(common, n), common);
  return dst;
}

/** Int16 samples to float32 in [-1, 1) (divided by 32768). */
export function int16ToFloat32(pcm: Int16Array, out?: Float32Array): Float32Array {
  const dst = out ?? new Float32Array(pcm.length);
  for (let i = 0; i < pcm.length; i++) dst[i] = pcm[i] / 32768;
  return dst;
}

/** Options of {@link sine}. */
export interface SineOptions {
  /** Frequency in Hz. */
  freq: number;
  /** Samples per second. */
  sampleRate: number;
  /** Number of samples to make. */
  samples: number;
  /** Peak amplitude in sample units (default 16384, i.e. -6 dBFS). */
  amplitude?: number;
  /** Start phase in radians (default 0). */
  phase?: number;
}

/**
 * A sine tone as int16 (rounded, saturated).
 *
 * @example
 * ```ts
 * const s = sine({ freq: 440, sampleRate: 16000, samples: 320 });
 * ```
 */
export function sine(opts: SineOptions): Int16Array {
  const out = new Int16Array(opts.samples);
  const amp = opts.amplitude ?? 16384;
  const w = 2 * Math.PI * opts.freq / opts.sampleRate;
  const ph = opts.phase ?? 0;
  for (let i = 0; i < out.length; i++) {
    out[i] = Math.max(-32768, Math.min(32767, Math.round(amp * Math.sin(w * i + ph))));
  }
  return out;
}

/**
 * Deterministic white noise (uniform, xorshift32), for tests and comfort noise.
 *
 * @example
 * ```ts
 * const n = noise(160, 1000, 42); // 160 samples within +-1000
 * ```
 */
export function noise(samples: number, amplitude: number, seed = 1): Int16Array {
  const out = new Int16Array(samples);
  let x = (seed | 0) || 1;
  for (let i = 0; i < samples; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = Math.round(((x >>> 0) / 4294967296 * 2 - 1) * amplitude);
  }
  return out;
}

/** Concatenate int16 buffers into one new buffer. */
export function concatInt16(parts: readonly Int16Array[]): Int16Array {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Int16Array(n);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}
