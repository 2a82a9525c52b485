/**
 * The real FFT's transform in JavaScript (float64 work buffers): the reference for the
 * WebAssembly SIMD kernel of ./fft_kernel.ts and the path wherever that does not load.
 *
 * A length-N real signal is packed as M = N/2 complex points and transformed by a
 * decimation-in-time complex FFT: the first two radix-2 stages (whose twiddles are 1 and -i, so
 * no multiplications) run as one pass that also reads the input in bit-reversed order, the rest
 * run two stages per pass (radix-2^2: each point is loaded and stored once per two stages), with
 * one radix-2 pass first when their number is odd. Every pass reads its twiddles from its own
 * contiguous run of the table. The split into the N/2+1 bins of the real spectrum (the "two reals
 * in one complex" trick) follows.
 * @module
 */

/** Tables of one transform length, shared by the JavaScript and WebAssembly paths. */
export interface FftPlan {
  /** Real length N. */
  readonly size: number;
  /** Complex length M = N/2. */
  readonly half: number;
  /** Bit reversal of log2(M) bits, per index below M. */
  readonly bitrev: Uint32Array;
  /** Whether a lone radix-2 pass (length 8) precedes the two-stage passes. */
  readonly radix2: boolean;
  /**
   * Twiddles of the passes after the first, in pass order. The radix-2 pass of half-length h:
   * (cos, -sin) of 2 pi j / 2h per j below h. A two-stage pass of lengths L and 2L (h = L/2):
   * per j below h, (cos, -sin) of 2 pi j / L then of 2 pi j / 2L.
   */
  readonly twiddles: Float64Array;
  /** Split step twiddles: cos and -sin of 2 pi k / N for k = 0..M. */
  readonly splitCos: Float64Array;
  readonly splitSin: Float64Array;
}

/** The tables of a transform of `size` real points (a power of two, at least 4). */
export function fftPlan(size: number): FftPlan {
  const m = size / 2, bits = Math.log2(m);
  const bitrev = new Uint32Array(m);
  for (let i = 0; i < m; i++) {
    let r = 0;
    for (let b = 0; b < bits; b++) r |= ((i >> b) & 1) << (bits - 1 - b);
    bitrev[i] = r;
  }
  const radix2 = m >= 8 && (bits - 2) % 2 === 1;
  const tw: number[] = [];
  let len = 8;
  if (radix2) {
    for (let j = 0; j < 4; j++) {
      tw.push(Math.cos((2 * Math.PI * j) / 8), -Math.sin((2 * Math.PI * j) / 8));
    }
    len = 16;
  }
  for (; 2 * len <= m; len *= 4) {
    for (let j = 0; j < len / 2; j++) {
      const a = (2 * Math.PI * j) / len, b = (2 * Math.PI * j) / (2 * len);
      tw.push(Math.cos(a), -Math.sin(a), Math.cos(b), -Math.sin(b));
    }
  }
  const splitCos = new Float64Array(m + 1), splitSin = new Float64Array(m + 1);
  for (let k = 0; k <= m; k++) {
    splitCos[k] = Math.cos((2 * Math.PI * k) / size);
    splitSin[k] = -Math.sin((2 * Math.PI * k) / size);
  }
  return { size, half: m, bitrev, radix2, twiddles: Float64Array.from(tw), splitCos, splitSin };
}

/** Forward and inverse real FFT of one plan in JavaScript; allocation-free after construction. */
export class JsFft {
  readonly #p: FftPlan;
  readonly #zr: Float64Array;
  readonly #zi: Float64Array;

  /** The transform of `plan`'s length. */
  constructor(plan: FftPlan) {
    this.#p = plan;
    this.#zr = new Float64Array(plan.half);
    this.#zi = new Float64Array(plan.half);
  }

  /** Spectrum of `x` (N samples) into `re`/`im` (N/2 + 1 bins). */
  forward(x: Float32Array, re: Float32Array, im: Float32Array): void {
    const m = this.#p.half, zr = this.#zr, zi = this.#zi, br = this.#p.bitrev;
    if (m === 2) {
      zr[0] = x[0] + x[2];
      zi[0] = x[1] + x[3];
      zr[1] = x[0] - x[2];
      zi[1] = x[1] - x[3];
    } else {
      // Stages of length 2 and 4 on the bit-reversed input: twiddles 1 and -i.
      for (let q = 0; q < m; q += 4) {
        const n0 = 2 * br[q], n1 = 2 * br[q + 1], n2 = 2 * br[q + 2], n3 = 2 * br[q + 3];
        this.#quad(q, x[n0], x[n0 + 1], x[n1], x[n1 + 1], x[n2], x[n2 + 1], x[n3], x[n3 + 1]);
      }
      this.#passes();
    }
    const wc = this.#p.splitCos, ws = this.#p.splitSin;
    re[0] = zr[0] + zi[0];
    im[0] = 0;
    re[m] = zr[0] - zi[0];
    im[m] = 0;
    for (let k = 1; k < m; k++) {
      const ar = zr[k], ai = zi[k];
      const br2 = zr[m - k], bi = -zi[m - k]; // conj(Z[M-k])
      const er = 0.5 * (ar + br2), ei = 0.5 * (ai + bi);
      // Fo = (Z[k] - conj(Z[M-k])) / 2i
      const or = 0.5 * (ai - bi), oi = -0.5 * (ar - br2);
      const c = wc[k], s = ws[k];
      re[k] = er + (or * c - oi * s);
      im[k] = ei + (or * s + oi * c);
    }
  }

  /** Signal (N samples) of the spectrum `re`/`im` into `x`, scaled by 1/N. */
  inverse(re: Float32Array, im: Float32Array, x: Float32Array): void {
    const m = this.#p.half, zr = this.#zr, zi = this.#zi, br = this.#p.bitrev;
    const wc = this.#p.splitCos, ws = this.#p.splitSin;
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
    if (m === 2) {
      const ar = zr[0], ai = zi[0];
      zr[0] = ar + zr[1];
      zi[0] = ai + zi[1];
      zr[1] = ar - zr[1];
      zi[1] = ai - zi[1];
    } else {
      for (let q = 0; q < m; q += 4) {
        this.#quad(
          q,
          zr[q],
          zi[q],
          zr[q + 1],
          zi[q + 1],
          zr[q + 2],
          zi[q + 2],
          zr[q + 3],
          zi[q + 3],
        );
      }
      this.#passes();
    }
    const scale = 1 / m;
    for (let n = 0; n < m; n++) {
      x[2 * n] = zr[n] * scale;
      x[2 * n + 1] = -zi[n] * scale;
    }
  }

  /**
   * Stages of length 2 and 4 (twiddles 1 and -i) on four points in bit-reversed order, into the
   * work buffer at `q`.
   */
  #quad(
    q: number,
    p0r: number,
    p0i: number,
    p1r: number,
    p1i: number,
    p2r: number,
    p2i: number,
    p3r: number,
    p3i: number,
  ): void {
    const zr = this.#zr, zi = this.#zi;
    const ar = p0r + p1r, ai = p0i + p1i, br = p0r - p1r, bi = p0i - p1i;
    const cr = p2r + p3r, ci = p2i + p3i, dr = p2r - p3r, di = p2i - p3i;
    zr[q] = ar + cr;
    zi[q] = ai + ci;
    zr[q + 2] = ar - cr;
    zi[q + 2] = ai - ci;
    // d x (-i) = di - i dr
    zr[q + 1] = br + di;
    zi[q + 1] = bi - dr;
    zr[q + 3] = br - di;
    zi[q + 3] = bi + dr;
  }

  /** The stages after the first two: one radix-2 pass if their count is odd, then pairs. */
  #passes(): void {
    const m = this.#p.half, zr = this.#zr, zi = this.#zi, tw = this.#p.twiddles;
    let len = 8, t = 0;
    if (this.#p.radix2) {
      for (let i = 0; i < m; i += 8) {
        for (let j = 0; j < 4; j++) {
          const c = tw[2 * j], s = tw[2 * j + 1];
          const a = i + j, b = a + 4;
          const xr = zr[b] * c - zi[b] * s, xi = zr[b] * s + zi[b] * c;
          zr[b] = zr[a] - xr;
          zi[b] = zi[a] - xi;
          zr[a] += xr;
          zi[a] += xi;
        }
      }
      len = 16;
      t = 8;
    }
    for (; 2 * len <= m; len *= 4) {
      const h = len >> 1;
      for (let i = 0; i < m; i += 2 * len) {
        for (let j = 0, o = t; j < h; j++, o += 4) {
          const wc = tw[o], ws = tw[o + 1], uc = tw[o + 2], us = tw[o + 3];
          const a = i + j, b = a + h, c = a + len, d = c + h;
          // Stage of length L: (a, b) and (c, d) with W_L^j.
          let xr = zr[b] * wc - zi[b] * ws, xi = zr[b] * ws + zi[b] * wc;
          const Ar = zr[a] + xr, Ai = zi[a] + xi, Br = zr[a] - xr, Bi = zi[a] - xi;
          xr = zr[d] * wc - zi[d] * ws;
          xi = zr[d] * ws + zi[d] * wc;
          const Cr = zr[c] + xr, Ci = zi[c] + xi, Dr = zr[c] - xr, Di = zi[c] - xi;
          // Stage of length 2L: (a, c) with u = W_2L^j, (b, d) with -i u.
          xr = Cr * uc - Ci * us;
          xi = Cr * us + Ci * uc;
          zr[a] = Ar + xr;
          zi[a] = Ai + xi;
          zr[c] = Ar - xr;
          zi[c] = Ai - xi;
          // D u (-i) = (Du).im - i (Du).re
          const yr = Dr * us + Di * uc, yi = -(Dr * uc - Di * us);
          zr[b] = Br + yr;
          zi[b] = Bi + yi;
          zr[d] = Br - yr;
          zi[d] = Bi - yi;
        }
      }
      t += 4 * h;
    }
  }
}
