/**
 * Real FFT of a power-of-two length, allocation-free after construction.
 *
 * A length-N real signal is packed as N/2 complex points, transformed by an in-place iterative
 * radix-2^2 FFT, and split into the N/2+1 bins of the real spectrum (the usual "two reals in one
 * complex" trick), so a real transform costs about half a complex one. Spectra are held as
 * separate real and imaginary arrays of N/2+1 bins. The inverse includes the 1/N scale, so
 * `inverse(forward(x)) = x`.
 *
 * The transform runs in WebAssembly SIMD in float32 (./fft_kernel.ts) where that loads and the
 * length is at least 32, and otherwise (or with `simd: false`) in JavaScript in float64
 * (./fft_js.ts, the reference); the two agree to float32 rounding.
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
import { fftPlan, JsFft } from "./fft_js.ts";
import { type FftKernelPlan, fftKernelPlan } from "./fft_kernel.ts";

/** Options of a {@link RealFft}. */
export interface RealFftOptions {
  /** Use the WebAssembly SIMD transform where it loads, from 32 points (default true). */
  simd?: boolean;
}

/** Forward and inverse real FFT of one fixed power-of-two length. */
export class RealFft {
  /** Transform length (real samples). */
  readonly size: number;
  /** True when the WebAssembly SIMD kernel runs the transform. */
  readonly simd: boolean;
  readonly #impl: FftKernelPlan | JsFft;

  /** A transform of `size` real samples (a power of two, at least 4). */
  constructor(size: number, options: RealFftOptions = {}) {
    if (!Number.isInteger(size) || size < 4 || (size & (size - 1)) !== 0) {
      throw new FlowcatError("config", `fft size must be a power of two >= 4, got ${size}`);
    }
    this.size = size;
    const kernel = options.simd === false ? undefined : fftKernelPlan(size);
    this.simd = kernel !== undefined;
    this.#impl = kernel ?? new JsFft(fftPlan(size));
  }

  /** Spectrum of `x` (length `size`) into `re`/`im` (length `size/2 + 1`). */
  forward(x: Float32Array, re: Float32Array, im: Float32Array): void {
    this.#impl.forward(x, re, im);
  }

  /** Signal (length `size`) of the spectrum `re`/`im` into `x`, scaled by 1/size. */
  inverse(re: Float32Array, im: Float32Array, x: Float32Array): void {
    this.#impl.inverse(re, im, x);
  }
}
