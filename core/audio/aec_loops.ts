/**
 * The echo canceller's loops over every partition and bin of its adaptive filter, behind one
 * interface with two implementations: the WebAssembly SIMD kernel (./aec.wat via
 * ./aec_kernel.ts, four bins per instruction, over the filter's own memory) and the same loops in
 * JavaScript, the fallback where WebAssembly SIMD is missing and the reference the kernel is
 * tested against. Spectra are rows of `stride` floats (the bins, then zeros that stay zero); a
 * ring of `k` rows holds the reference, newest at row `head`, and partition p pairs with row
 * (head - p) mod k.
 * @module
 */

import type { AecArena } from "./aec_kernel.ts";

/** The partitioned loops of the adaptive filter. */
export interface AecLoops {
  /** y = sum over p of W_p x X_(head-p), per bin (complex). */
  estimate(
    wr: Float32Array,
    wi: Float32Array,
    xr: Float32Array,
    xi: Float32Array,
    head: number,
    k: number,
    stride: number,
    yr: Float32Array,
    yi: Float32Array,
  ): void;
  /** W_p += g[p] conj(X_(head-p)) x E for every partition p. */
  adapt(
    wr: Float32Array,
    wi: Float32Array,
    xr: Float32Array,
    xi: Float32Array,
    head: number,
    k: number,
    stride: number,
    er: Float32Array,
    ei: Float32Array,
    g: Float32Array,
  ): void;
  /** out[p] = sum of |W_p|^2 over the row, for each of the k rows. */
  energies(wr: Float32Array, wi: Float32Array, k: number, stride: number, out: Float32Array): void;
  /** Every one of `rows` rows of re/im times the row rr/ri (a phase rotation). */
  rotate(
    re: Float32Array,
    im: Float32Array,
    rows: number,
    stride: number,
    rr: Float32Array,
    ri: Float32Array,
  ): void;
}

/** The loops of `arena`: its kernel where it loaded, else JavaScript. */
export function aecLoops(arena: AecArena): AecLoops {
  const kernel = arena.kernel;
  if (kernel === undefined) return JS_LOOPS;
  const at = arena.addressOf;
  return {
    estimate: (wr, wi, xr, xi, head, k, stride, yr, yi) =>
      kernel.estimate(at(wr), at(wi), at(xr), at(xi), head, k, stride, at(yr), at(yi)),
    adapt: (wr, wi, xr, xi, head, k, stride, er, ei, g) =>
      kernel.adapt(at(wr), at(wi), at(xr), at(xi), head, k, stride, at(er), at(ei), at(g)),
    energies: (wr, wi, k, stride, out) => kernel.energies(at(wr), at(wi), k, stride, at(out)),
    rotate: (re, im, rows, stride, rr, ri) =>
      kernel.rotate(at(re), at(im), rows, stride, at(rr), at(ri)),
  };
}

/** The loops in JavaScript (float64 arithmetic, float32 storage). */
export const JS_LOOPS: AecLoops = {
  estimate(wr, wi, xr, xi, head, k, stride, yr, yi) {
    yr.fill(0);
    yi.fill(0);
    for (let p = 0; p < k; p++) {
      const xo = ((head - p + k) % k) * stride, wo = p * stride;
      for (let j = 0; j < stride; j++) {
        const ar = wr[wo + j], ai = wi[wo + j], br = xr[xo + j], bi = xi[xo + j];
        yr[j] += ar * br - ai * bi;
        yi[j] += ar * bi + ai * br;
      }
    }
  },
  adapt(wr, wi, xr, xi, head, k, stride, er, ei, g) {
    for (let p = 0; p < k; p++) {
      const gp = g[p], xo = ((head - p + k) % k) * stride, wo = p * stride;
      for (let j = 0; j < stride; j++) {
        const ar = xr[xo + j], ai = -xi[xo + j]; // conj(X)
        wr[wo + j] += gp * (ar * er[j] - ai * ei[j]);
        wi[wo + j] += gp * (ar * ei[j] + ai * er[j]);
      }
    }
  },
  energies(wr, wi, k, stride, out) {
    for (let p = 0; p < k; p++) {
      let s = 0;
      for (let j = p * stride, end = j + stride; j < end; j++) s += wr[j] * wr[j] + wi[j] * wi[j];
      out[p] = s;
    }
  },
  rotate(re, im, rows, stride, rr, ri) {
    for (let o = 0; o < rows * stride; o += stride) {
      for (let j = 0; j < stride; j++) {
        const a = re[o + j], b = im[o + j];
        re[o + j] = a * rr[j] - b * ri[j];
        im[o + j] = a * ri[j] + b * rr[j];
      }
    }
  },
};
