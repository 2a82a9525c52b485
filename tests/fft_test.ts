import assert from "node:assert/strict";
import { RealFft } from "../core/audio/fft.ts";

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

Deno.test("real fft matches the DFT and inverts, at every size used", () => {
  for (const n of [4, 8, 16, 128, 256]) {
    const fft = new RealFft(n);
    const x = new Float32Array(n);
    for (let i = 0; i < n; i++) x[i] = Math.sin(i * 1.7) + ((i * 7919) % 13) / 13 - 0.5;
    const re = new Float32Array(n / 2 + 1), im = new Float32Array(n / 2 + 1);
    fft.forward(x, re, im);
    const want = naiveDft(x);
    for (let k = 0; k <= n / 2; k++) {
      assert(Math.abs(re[k] - want.re[k]) < 1e-3 * n, `n=${n} re[${k}] ${re[k]} vs ${want.re[k]}`);
      assert(Math.abs(im[k] - want.im[k]) < 1e-3 * n, `n=${n} im[${k}] ${im[k]} vs ${want.im[k]}`);
    }
    const back = new Float32Array(n);
    fft.inverse(re, im, back);
    for (let i = 0; i < n; i++) assert(Math.abs(back[i] - x[i]) < 1e-4, `n=${n} x[${i}]`);
  }
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
