/**
 * The echo canceller's partitioned complex loops in WebAssembly SIMD (./aec.wat): the echo
 * estimate, the NLMS step, the partitions' energies and the drift rotation, four bins per
 * instruction. Each filter gets its own instance over its own linear memory, sized once, and
 * keeps its spectra there as `Float32Array` views: nothing is copied per block, and the memory
 * goes with the filter when the call ends.
 *
 * Where WebAssembly or its SIMD extension is missing, {@link aecKernelAvailable} is false and the
 * filter keeps its JavaScript loops over ordinary arrays of the same layout.
 * @module
 */

import { AEC_WASM_BASE64 } from "./aec_wasm.ts";

/** The kernel's functions, over byte addresses in the filter's memory. */
export interface AecKernelExports {
  /** y = sum over p of W_p x X_(head-p), per bin. */
  estimate(
    wr: number,
    wi: number,
    xr: number,
    xi: number,
    head: number,
    k: number,
    stride: number,
    yr: number,
    yi: number,
  ): void;
  /** W_p += g[p] conj(X_(head-p)) x E, for every partition. */
  adapt(
    wr: number,
    wi: number,
    xr: number,
    xi: number,
    head: number,
    k: number,
    stride: number,
    er: number,
    ei: number,
    g: number,
  ): void;
  /** out[p] = sum of |W_p|^2 over the bins. */
  energies(wr: number, wi: number, k: number, stride: number, out: number): void;
  /** Every row of re/im times the row rr/ri. */
  rotate(re: number, im: number, rows: number, stride: number, rr: number, ri: number): void;
}

let compiled: WebAssembly.Module | null | undefined;

function module(): WebAssembly.Module | null {
  if (compiled !== undefined) return compiled;
  try {
    compiled = new WebAssembly.Module(Uint8Array.fromBase64(AEC_WASM_BASE64));
    // Instantiating proves SIMD validated here too (compiling alone may be lazy).
    new WebAssembly.Instance(compiled, { env: { memory: new WebAssembly.Memory({ initial: 1 }) } });
  } catch {
    compiled = null; // no WebAssembly SIMD here: the JavaScript loops serve
  }
  return compiled;
}

/** True when the WebAssembly SIMD kernel loads here. */
export function aecKernelAvailable(): boolean {
  return module() !== null;
}

/**
 * Float32 arrays carved from one memory, each 16-byte aligned, and the kernel bound to that
 * memory (`kernel` undefined when the JavaScript loops serve, and the arrays are ordinary).
 */
export interface AecArena {
  /** The kernel over this arena's memory, when WebAssembly SIMD is here and wanted. */
  readonly kernel: AecKernelExports | undefined;
  /** Byte address of an array from {@link AecArena.take} (0 without the kernel). */
  addressOf(a: Float32Array): number;
  /** The next array of `length` floats, zeroed. */
  take(length: number): Float32Array;
}

/**
 * An arena of `floats` float32s in all (the sum of what will be taken, each rounded up to a
 * multiple of 4), with the kernel when `simd` and it loads.
 */
export function aecArena(floats: number, simd = true): AecArena {
  const mod = simd ? module() : null;
  if (mod === null) {
    return {
      kernel: undefined,
      addressOf: () => 0,
      take: (length) => new Float32Array(length),
    };
  }
  const bytes = floats * 4;
  const memory = new WebAssembly.Memory({ initial: Math.max(1, Math.ceil(bytes / 65536)) });
  const kernel = new WebAssembly.Instance(mod, { env: { memory } })
    .exports as unknown as AecKernelExports;
  const buffer = memory.buffer;
  let top = 0;
  return {
    kernel,
    addressOf: (a) => a.byteOffset,
    take(length) {
      const rounded = (length + 3) & ~3;
      if (top + rounded > ((floats + 3) & ~3)) {
        throw new RangeError(`aec arena: ${top + rounded} floats asked of ${floats}`);
      }
      const a = new Float32Array(buffer, top * 4, length);
      top += rounded;
      return a;
    },
  };
}
