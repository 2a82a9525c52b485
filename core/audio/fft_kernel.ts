/**
 * The real FFT in WebAssembly SIMD (./fft.wat), float32, four points per instruction.
 *
 * One instance and one memory serve every transform of the thread: each length's tables and work
 * buffers are laid out there once, on first use, and a transform copies its input in and its
 * output out (a few hundred floats: about a fifth of a forward + inverse pair at 128 points). A call therefore adds no
 * memory of its own, and since transforms are synchronous, one set of buffers per length is
 * never shared by two at once.
 *
 * Where WebAssembly or its SIMD extension is missing, {@link fftKernelPlan} returns undefined
 * and the JavaScript transform of ./fft_js.ts serves.
 * @module
 */

import { FFT_WASM_BASE64 } from "./fft_wasm.ts";
import { fftPlan } from "./fft_js.ts";

/** The kernel's functions, over byte addresses in its memory. */
interface FftExports {
  forward(plan: number, x: number, re: number, im: number): void;
  inverse(plan: number, re: number, im: number, x: number): void;
}

/** A transform length laid out in the kernel's memory. */
export interface FftKernelPlan {
  /** Spectrum of `x` (N samples) into `re`/`im` (N/2 + 1 bins). */
  forward(x: Float32Array, re: Float32Array, im: Float32Array): void;
  /** Signal (N samples) of the spectrum `re`/`im` into `x`, scaled by 1/N. */
  inverse(re: Float32Array, im: Float32Array, x: Float32Array): void;
}

interface Kernel {
  exports: FftExports;
  memory: WebAssembly.Memory;
  /** Next free byte. */
  top: number;
  plans: Map<number, FftKernelPlan>;
}

let kernel: Kernel | null | undefined;

function load(): Kernel | null {
  if (kernel !== undefined) return kernel;
  try {
    const mod = new WebAssembly.Module(Uint8Array.fromBase64(FFT_WASM_BASE64));
    const memory = new WebAssembly.Memory({ initial: 1 });
    const exports = new WebAssembly.Instance(mod, { env: { memory } })
      .exports as unknown as FftExports;
    kernel = { exports, memory, top: 0, plans: new Map() };
  } catch {
    kernel = null; // no WebAssembly SIMD here: the JavaScript transform serves
  }
  return kernel;
}

/** True when the WebAssembly SIMD transform loads here. */
export function fftKernelAvailable(): boolean {
  return load() !== null;
}

/** `floats` f32 of the kernel's memory, 16-byte aligned, growing it when full: its byte address. */
function reserve(k: Kernel, floats: number): number {
  const at = k.top, bytes = ((floats + 3) & ~3) * 4;
  const need = at + bytes - k.memory.buffer.byteLength;
  if (need > 0) k.memory.grow(Math.ceil(need / 65536));
  k.top = at + bytes;
  return at;
}

/**
 * The kernel's transform of `size` real points (a power of two), made once per length and shared;
 * undefined where the kernel does not load or below 32 points (its first pass takes four groups of
 * four points at a time).
 */
export function fftKernelPlan(size: number): FftKernelPlan | undefined {
  const k = load();
  if (k === null || size < 32) return undefined;
  const cached = k.plans.get(size);
  if (cached !== undefined) return cached;
  const p = fftPlan(size), m = p.half;
  // The JavaScript plan's pass twiddles come per j, (2 or 4 values) each; the kernel loads each
  // value for four j at once: transpose every block of four j.
  const tw = new Float32Array(p.twiddles.length);
  for (let o = 0, per = p.radix2 ? 2 : 4; o < tw.length; o += 4 * per, per = 4) {
    for (let j = 0; j < 4; j++) {
      for (let v = 0; v < per; v++) tw[o + 4 * v + j] = p.twiddles[o + per * j + v];
    }
  }
  const header = reserve(k, 10), bitrev = reserve(k, m), twiddles = reserve(k, tw.length);
  const cos = reserve(k, m + 4), sin = reserve(k, m + 4);
  const zr = reserve(k, m + 4), zi = reserve(k, m + 4);
  const ur = reserve(k, m + 4), ui = reserve(k, m + 4);
  const x = reserve(k, size), re = reserve(k, m + 4), im = reserve(k, m + 4);
  const buffer = k.memory.buffer; // final for this plan: nothing below grows it
  new Int32Array(buffer, header, 10).set([
    m,
    bitrev,
    p.radix2 ? 1 : 0,
    twiddles,
    cos,
    sin,
    zr,
    zi,
    ur,
    ui,
  ]);
  new Uint32Array(buffer, bitrev, m).set(p.bitrev);
  new Float32Array(buffer, twiddles, tw.length).set(tw);
  new Float32Array(buffer, cos, m + 1).set(p.splitCos);
  new Float32Array(buffer, sin, m + 1).set(p.splitSin);
  const plan = boundPlan(k, header, x, re, im, size);
  k.plans.set(size, plan);
  return plan;
}

/** Copy-in, transform, copy-out around the kernel, re-viewing the memory if it has grown. */
function boundPlan(
  k: Kernel,
  header: number,
  xAt: number,
  reAt: number,
  imAt: number,
  size: number,
): FftKernelPlan {
  const m = size / 2, { forward, inverse } = k.exports;
  const view = (buffer: ArrayBufferLike) => ({
    buffer,
    x: new Float32Array(buffer, xAt, size),
    re: new Float32Array(buffer, reAt, m + 1),
    im: new Float32Array(buffer, imAt, m + 1),
  });
  let v = view(k.memory.buffer);
  return {
    forward(x, re, im) {
      if (v.buffer !== k.memory.buffer) v = view(k.memory.buffer);
      v.x.set(x.length === size ? x : x.subarray(0, size));
      forward(header, xAt, reAt, imAt);
      // Rows may be padded past the N/2 + 1 bins: only the bins are written, as in JavaScript.
      re.set(re.length > m ? v.re : v.re.subarray(0, re.length));
      im.set(im.length > m ? v.im : v.im.subarray(0, im.length));
    },
    inverse(re, im, x) {
      if (v.buffer !== k.memory.buffer) v = view(k.memory.buffer);
      v.re.set(re.length === m + 1 ? re : re.subarray(0, m + 1));
      v.im.set(im.length === m + 1 ? im : im.subarray(0, m + 1));
      inverse(header, reAt, imAt, xAt);
      x.set(x.length === size ? v.x : v.x.subarray(0, x.length));
    },
  };
}
