/**
 * The resampler's inner loop in WebAssembly SIMD (./fir.wat): four taps per instruction instead
 * of one multiply-add at a time in JavaScript. One instance and one linear memory per isolate:
 * filter banks are copied in once (they are cached per ratio), and each call copies the stream's
 * history and the new input into a scratch area, runs the kernel and copies the output out, so
 * no per-stream state lives in the module (nothing to free when a call ends).
 *
 * Where WebAssembly or its SIMD extension is missing, {@link firKernelAvailable} is false and the
 * resampler keeps its JavaScript loop.
 * @module
 */

import { FIR_WASM_BASE64 } from "./fir_wasm.ts";

interface FirExports {
  memory: WebAssembly.Memory;
  widen: (src: number, dst: number, n: number) => void;
  fir: (
    c: number,
    se: number,
    taps4: number,
    up: number,
    down: number,
    x: number,
    phase: number,
    n: number,
    buf: number,
    out: number,
  ) => void;
}

/** A filter bank's place in the kernel's memory. */
export interface WasmBank {
  /** Byte address of the coefficients (f32, phase-major, `taps4` per phase). */
  readonly c: number;
  /** Byte address of the per-phase first/end taps (i32 pairs). */
  readonly se: number;
  /** Taps per phase, padded to a multiple of 4. */
  readonly taps4: number;
}

let kernel: FirExports | null | undefined;
/** First free byte after the banks; the scratch area starts here (16-byte aligned). */
let top = 0;
let f32: Float32Array<ArrayBufferLike> = new Float32Array(0);
let i16: Int16Array<ArrayBufferLike> = new Int16Array(0);
let i32: Int32Array<ArrayBufferLike> = new Int32Array(0);

function load(): FirExports | null {
  if (kernel !== undefined) return kernel;
  try {
    const bytes = Uint8Array.fromBase64(FIR_WASM_BASE64);
    const instance = new WebAssembly.Instance(new WebAssembly.Module(bytes));
    kernel = instance.exports as unknown as FirExports;
  } catch {
    kernel = null; // no WebAssembly SIMD here: the JavaScript loop serves
  }
  return kernel;
}

const align16 = (n: number) => (n + 15) & ~15;

/** Grow the memory to hold `bytes` and refresh the views (a grow detaches the old buffer). */
function reserve(k: FirExports, bytes: number): void {
  if (bytes <= f32.byteLength) return; // the common case: no getter call, nothing to do
  const have = k.memory.buffer.byteLength;
  if (bytes > have) k.memory.grow(Math.ceil((bytes - have) / 65536));
  const buffer = k.memory.buffer;
  f32 = new Float32Array(buffer);
  i16 = new Int16Array(buffer);
  i32 = new Int32Array(buffer);
}

/** True when the WebAssembly SIMD kernel loaded. */
export function firKernelAvailable(): boolean {
  return load() !== null;
}

/**
 * Copy a bank into the kernel's memory: `taps` coefficients per phase (`coeffs`, phase-major)
 * and per phase the first and one-past-last tap worth running. `undefined` without the kernel.
 */
export function loadBank(
  coeffs: Float64Array,
  first: Int32Array,
  last: Int32Array,
  taps: number,
  up: number,
): WasmBank | undefined {
  const k = load();
  if (k === null) return undefined;
  const taps4 = (taps + 3) & ~3;
  const c = align16(top);
  const se = c + up * taps4 * 4;
  top = align16(se + up * 8);
  reserve(k, top);
  for (let p = 0; p < up; p++) {
    const row = (c >> 2) + p * taps4;
    for (let j = 0; j < taps4; j++) f32[row + j] = j < taps ? coeffs[p * taps + j] : 0;
    // A phase with one tap (the centre of a centered design) keeps its exact [first, first + 1):
    // the kernel multiplies once instead of running a vector.
    const single = last[p] - first[p] === 1;
    i32[(se >> 2) + 2 * p] = single ? first[p] : first[p] & ~3;
    i32[(se >> 2) + 2 * p + 1] = single ? last[p] : Math.min(taps4, (last[p] + 3) & ~3);
  }
  return { c, se, taps4 };
}

/**
 * Run `n` outputs of a bank over `history` followed by `pcm`, starting at input `x` (relative to
 * the start of the history) and `phase`; write them to `dst` and leave the last
 * `history.length` samples of the stream in `history`.
 */
export function firRun(
  bank: WasmBank,
  history: Float32Array,
  pcm: Int16Array,
  x: number,
  phase: number,
  n: number,
  up: number,
  down: number,
  dst: Int16Array,
): void {
  const k = kernel!;
  const hist = history.length;
  const len = pcm.length;
  const buf = align16(top);
  const src = align16(buf + (hist + len + 4) * 4);
  const out = align16(src + len * 2);
  reserve(k, out + n * 2);
  const base = buf >> 2;
  f32.set(history, base);
  i16.set(pcm, src >> 1);
  k.widen(src, buf + hist * 4, len); // and the four zeros the padded taps read
  k.fir(bank.c, bank.se, bank.taps4, up, down, x, phase, n, buf, out);
  dst.set(i16.subarray(out >> 1, (out >> 1) + n));
  history.set(f32.subarray(base + len, base + len + hist));
}
