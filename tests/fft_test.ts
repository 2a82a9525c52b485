import assert from "node:assert/strict";
import { RealFft } from "../core/audio/fft.ts";
import { fftKernelAvailable } from "../core/audio/fft_kernel.ts";
import { assembleWat, wasmModuleSource, WAT_KERNELS } from "../tools/build_wasm.ts";

const FFT = WAT_KERNELS.find((k) => k.wat.endsWith("fft.wat"))!;

/** Every size the echo canceller and suppressor use (2 x block: 64 at 8 kHz, 128 at 16 kHz). */
const IN_USE = [128, 256];

/** The spectrum by the definition, for comparison. */
function naiveDft(x: Float32Array): { re: number[]; im: number[] } {
  const n = x.length;
  const re: number[] = [], im: number[] = [];
  for (let k = 0; k <= n / 2; k++) {
    let r = 0, i = 0;
    for (let t = 0; t < n; t++) {
      r += x[t] * Math.cos((2 * Math.PI * k * t) / n);
      i -= x[t] * Math.sin((2 * Math.PI * k * t) / n);
    }
    re.push(r);
    im.push(i);
  }
  return { re, im };
}

/** A test signal of `n` samples. */
function signal(n: number, kind: "mixed" | "zeros" | "impulse" | "full-scale"): Float32Array {
  const x = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    if (kind === "mixed") x[i] = Math.sin(i * 1.7) + ((i * 7919) % 13) / 13 - 0.5;
    if (kind === "full-scale") x[i] = i % 3 === 0 ? -32768 : 32767;
  }
  if (kind === "impulse") x[n >> 2 | 1] = 32767;
  return x;
}

/** Largest absolute difference between `a` and `b` over the first `n` values. */
function maxDiff(a: Float32Array, b: Float32Array, n = a.length): number {
  let d = 0;
  for (let i = 0; i < n; i++) d = Math.max(d, Math.abs(a[i] - b[i]));
  return d;
}

/** Largest absolute value of `a`. */
function peakOf(...arrays: Float32Array[]): number {
  let p = 0;
  for (const a of arrays) for (const v of a) p = Math.max(p, Math.abs(v));
  return p;
}

Deno.test("real fft matches the DFT and inverts, at every size used, on both paths", () => {
  for (const simd of [true, false]) {
    for (const n of [4, 8, 16, 32, 64, 128, 256, 512]) {
      const fft = new RealFft(n, { simd });
      const x = signal(n, "mixed");
      const re = new Float32Array(n / 2 + 1), im = new Float32Array(n / 2 + 1);
      fft.forward(x, re, im);
      const want = naiveDft(x);
      const at = `simd=${fft.simd} n=${n}`;
      for (let k = 0; k <= n / 2; k++) {
        assert(Math.abs(re[k] - want.re[k]) < 1e-3 * n, `${at} re[${k}] ${re[k]} vs ${want.re[k]}`);
        assert(Math.abs(im[k] - want.im[k]) < 1e-3 * n, `${at} im[${k}] ${im[k]} vs ${want.im[k]}`);
      }
      const back = new Float32Array(n);
      fft.inverse(re, im, back);
      for (let i = 0; i < n; i++) assert(Math.abs(back[i] - x[i]) < 1e-4, `${at} x[${i}]`);
    }
  }
});

Deno.test("real fft: the committed kernel bytes are fft.wat assembled (deno task wasm)", async () => {
  const bytes = await assembleWat(FFT.wat, await Deno.readTextFile(FFT.wat));
  assert.equal(await Deno.readTextFile(FFT.module), wasmModuleSource(bytes, FFT));
});

Deno.test("real fft: the SIMD kernel loads in Deno and serves by default, JavaScript on request", () => {
  assert.ok(fftKernelAvailable());
  for (const n of IN_USE) {
    assert.equal(new RealFft(n).simd, true);
    assert.equal(new RealFft(n, { simd: false }).simd, false);
  }
  // Below 32 points the kernel's first pass (four groups of four at a time) does not fit.
  assert.equal(new RealFft(32).simd, true);
  assert.equal(new RealFft(16).simd, false);
});

Deno.test("real fft: SIMD and JavaScript agree to float32 rounding, odd inputs included", () => {
  for (const n of [32, 64, ...IN_USE, 1024]) {
    const simd = new RealFft(n), js = new RealFft(n, { simd: false });
    assert.ok(simd.simd, `n=${n}: the kernel serves`);
    const bins = n / 2 + 1;
    for (const kind of ["mixed", "zeros", "impulse", "full-scale"] as const) {
      const x = signal(n, kind);
      const sr = new Float32Array(bins), si = new Float32Array(bins);
      const jr = new Float32Array(bins), ji = new Float32Array(bins);
      simd.forward(x, sr, si);
      js.forward(x, jr, ji);
      const at = `n=${n} ${kind}`;
      // float32 rounding over log2(n) stages, relative to the spectrum's peak
      const tol = 4e-7 * Math.log2(n) * peakOf(jr, ji);
      assert(maxDiff(sr, jr) <= tol, `${at} re ${maxDiff(sr, jr)} > ${tol}`);
      assert(maxDiff(si, ji) <= tol, `${at} im ${maxDiff(si, ji)} > ${tol}`);
      const ys = new Float32Array(n), yj = new Float32Array(n);
      simd.inverse(jr, ji, ys);
      js.inverse(jr, ji, yj);
      const tolX = 4e-7 * Math.log2(n) * peakOf(x);
      assert(maxDiff(ys, yj) <= tolX, `${at} inverse ${maxDiff(ys, yj)} > ${tolX}`);
      assert(maxDiff(ys, x) <= tolX + 1e-6, `${at} round trip ${maxDiff(ys, x)}`);
      if (kind === "zeros") assert.equal(peakOf(sr, si, ys), 0, `${at}: zeros in, zeros out`);
      if (kind === "impulse") {
        // A full-scale impulse has a flat magnitude spectrum.
        for (let k = 0; k < bins; k++) {
          const err = Math.abs(Math.hypot(sr[k], si[k]) - 32767);
          assert(err < 1e-6 * Math.log2(n) * 32767, `${at} |X[${k}]| off by ${err}`);
        }
      }
    }
  }
});

Deno.test("real fft: spectra in longer arrays (padded rows) get only their bins written", () => {
  for (const simd of [true, false]) {
    const n = 128, fft = new RealFft(n, { simd });
    const re = new Float32Array(n / 2 + 4).fill(7), im = new Float32Array(n / 2 + 4).fill(7);
    fft.forward(signal(n, "mixed"), re, im);
    assert.deepEqual([...re.subarray(n / 2 + 1)], [7, 7, 7], `simd=${simd}`);
    assert.deepEqual([...im.subarray(n / 2 + 1)], [7, 7, 7], `simd=${simd}`);
    const x = new Float32Array(n);
    fft.inverse(re, im, x);
    assert(maxDiff(x, signal(n, "mixed")) < 1e-5, `simd=${simd}: the padding is not read`);
  }
});

Deno.test("real fft: transforms of every length share the kernel's memory, which may grow", () => {
  const small = new RealFft(128), js = new RealFft(128, { simd: false });
  const x = signal(128, "mixed");
  const want = { re: new Float32Array(65), im: new Float32Array(65) };
  js.forward(x, want.re, want.im);
  const re = new Float32Array(65), im = new Float32Array(65);
  small.forward(x, re, im);
  // A long transform grows the memory under the short one's views.
  const big = new RealFft(1 << 16);
  assert.equal(big.simd, true);
  const bx = signal(1 << 16, "mixed"), br = new Float32Array((1 << 15) + 1);
  const bi = new Float32Array((1 << 15) + 1), back = new Float32Array(1 << 16);
  big.forward(bx, br, bi);
  big.inverse(br, bi, back);
  assert(maxDiff(back, bx) < 1e-4);
  re.fill(0);
  im.fill(0);
  small.forward(x, re, im);
  assert(maxDiff(re, want.re) < 1e-4 && maxDiff(im, want.im) < 1e-4);
});

Deno.test("real fft refuses a length that is not a power of two", () => {
  let threw = false;
  try {
    new RealFft(160);
  } catch {
    threw = true;
  }
  assert(threw);
});
