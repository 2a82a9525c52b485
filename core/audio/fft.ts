/**
 * Real FFT of a power-of-two length, allocation-free after construction.
 *
 * A length-N real signal is packed as N/2 complex points, transformed by an in-place iterative
 * radix-2 FFT, and split into the N/2+1 bins of the real spectrum (the usual "two reals in one
 * complex" trick), so a real transform costs about half a complex one. Spectra are held as
 * separate real and imaginary arrays of N/2+1 bins. The inverse includes the 1/N scale, so
 * `inverse(forward(x)) = x`.
 *
 * @example
 * ```ts
 * import { RealFft } from "@flowcat/flowcat/audio";
 * const fft = new RealFft(8);
 * const re = new Float32Array(5), im = new Float32Array(5), x = new Float32Array(8);
 * x[1] = 1;
 * fft.forward(x, re, im); // bins of an impulse at 1: e^{-2 pi i k / 8}
 * fft.inverse(re, im, x); // back to the impulse
 * ```
 * @module
 */

import { FlowcatError } from "../errors.ts";

/** Forward and inverse real FFT of one fixed power-of-two length. */
export class RealFft {
  /** Transform length (real samples). */
  readonly size: number;
  readonly #half: number;
  readonly #bitrev: Uint32Array;
  /** Twiddles of the half-length complex FFT: cos and -sin of 2 pi k / (N/2). */
  readonly #cos: Float64Array;
  readonly #sin: Float64Array;
  /** Twiddles of the split step: cos and -sin of 2 pi k / N. */
  readonly #splitCos: Float64Array;
  readonly #splitSin: Float64Array;
  readonly #zr: Float64Array;
  readonly #zi: Float64Array;

  /** A transform of `size` real samples (a power of two, at least 4). */
  constructor(size: number) {
    if (!Number.isInteger(size) || size < 4 || (size & (size - 1)) !== 0) {
      throw new FlowcatError("config", `fft size must be a power of two >= 4, got ${size}`);
    }
    this.size = size;
    const m = size / 2;
    this.#half = m;
    this.#bitrev = new Uint32Array(m);
    const bits = Math.log2(m);
    for (let i = 0; i < m; i++) {
      let r = 0;
      for (let b = 0; b < bits; b++) r |= ((i >> b) & 1) << (bits - 1 - b);
      this.#bitrev[i] = r;
    }
    this.#cos = new Float64Array(m / 2 || 1);
    this.#sin = new Float64Array(m / 2 || 1);
    for (let k = 0; k < m / 2; k++) {
      this.#cos[k] = Math.cos((2 * Math.PI * k) / m);
      this.#sin[k] = -Math.sin((2 * Math.PI * k) / m);
    }
    this.#splitCos = new Float64Array(m + 1);
    this.#splitSin = new Float64Array(m + 1);
    for (let k = 0; k <= m; k++) {
      this.#splitCos[k] = Math.cos((2 * Math.PI * k) / size);
      this.#splitSin[k] = -Math.sin((2 * Math.PI * k) / size);
    }
    this.#zr = new Float64Array(m);
    this.#zi = new Float64Array(m);
  }

  /** Spectrum of `x` (length `size`) into `re`/`im` (length `size/2 + 1`). */
  forward(x: Float32Array, re: Float32Array, im: Float32Array): void {
    const m = this.#half;
    const zr = this.#zr, zi = this.#zi, br = this.#bitrev;
    for (let n = 0; n < m; n++) {
      const j = br[n];
      zr[j] = x[2 * n];
      zi[j] = x[2 * n + 1];
    }
    this.#butterflies();
    const wc = this.#splitCos, ws = this.#splitSin;
    re[0] = zr[0] + zi[0];
    im[0] = 0;
    re[m] = zr[0] - zi[0];
    im[m] = 0;
    for (let k = 1; k < m; k++) {
      const ar = zr[k], ai = zi[k];
      const br2 = zr[m - k], bi = -zi[m - k]; // conj(Z[M-k])
      const er = 0.5 * (ar + br2), ei = 0.5 * (ai + bi);
      // Fo = (Z[k] - conj(Z[M-k])) / 2i
      const dr = 0.5 * (ar - br2), di = 0.5 * (ai - bi);
      const or = di, oi = -dr;
      const c = wc[k], s = ws[k];
      re[k] = er + (or * c - oi * s);
      im[k] = ei + (or * s + oi * c);
    }
  }

  /** Signal (length `size`) of the spectrum `re`/`im` into `x`, scaled by 1/size. */
  inverse(re: Float32Array, im: Float32Array, x: Float32Array): void {
    const m = this.#half;
    const zr = this.#zr, zi = this.#zi, br = this.#bitrev;
    const wc = this.#splitCos, ws = this.#splitSin;
    for (let k = 0; k < m; k++) {
      const ar = re[k], ai = im[k];
      const cr = re[m - k], ci = -im[m - k]; // conj(X[M-k])
      const er = 0.5 * (ar + cr), ei = 0.5 * (ai + ci);
      const dr = 0.5 * (ar - cr), di = 0.5 * (ai - ci);
      // Fo = D * W^{-k}; W^{-k} = c - i s (s holds -sin)
      const c = wc[k], s = -ws[k];
      const or = dr * c - di * s, oi = dr * s + di * c;
      // Z = Fe + i Fo, stored conjugated so the forward butterflies compute the inverse.
      const j = br[k];
      zr[j] = er - oi;
      zi[j] = -(ei + or);
    }
    this.#butterflies();
    const scale = 1 / m;
    for (let n = 0; n < m; n++) {
      x[2 * n] = zr[n] * scale;
      x[2 * n + 1] = -zi[n] * scale;
    }
  }

  /** In-place radix-2 butterflies over the bit-reversed half-length buffer. */
  #butterflies(): void {
    const m = this.#half;
    const zr = this.#zr, zi = this.#zi, tc = this.#cos, ts = this.#sin;
    for (let len = 2; len <= m; len <<= 1) {
      const halfLen = len >> 1;
      const step = m / len;
      for (let i = 0; i < m; i += len) {
        for (let j = 0; j < halfLen; j++) {
          const c = tc[j * step], s = ts[j * step];
          const a = i + j, b = a + halfLen;
          const xr = zr[b] * c - zi[b] * s;
          const xi = zr[b] * s + zi[b] * c;
          zr[b] = zr[a] - xr;
          zi[b] = zi[a] - xi;
          zr[a] += xr;
          zi[a] += xi;
        }
      }
    }
  }
}
