/**
 * Bench group `fft`: the echo canceller's real FFT (core/audio/fft.ts), a forward plus an inverse
 * transform per size in use (128 and 256 real points: the canceller's and suppressor's blocks of
 * 64 at 8 kHz and 128 at 16 kHz), on the WebAssembly SIMD kernel and on the JavaScript path.
 * Batches of the two paths alternate, so load on a shared machine falls on both alike; figures
 * are microseconds per forward + inverse pair, percentiles over batches.
 *
 * Run alone: `deno run --allow-read=. bench/fft.ts` (prints JSON), or `deno task bench --only fft`.
 * @module
 */

import { RealFft } from "../core/audio/fft.ts";
import { percentile } from "./core.ts";

const r = (x: number) => Number(x.toPrecision(4));

/** Microseconds per forward + inverse pair of `fft`, over one batch of `pairs`. */
function batch(fft: RealFft, x: Float32Array, re: Float32Array, im: Float32Array, pairs: number) {
  const t0 = performance.now();
  for (let i = 0; i < pairs; i++) {
    fft.forward(x, re, im);
    fft.inverse(re, im, x);
  }
  return ((performance.now() - t0) * 1000) / pairs;
}

/** Results of the `fft` group. */
export function runFftBench(quick = false): Record<string, unknown> {
  const runs = quick ? 11 : 41, pairs = 500;
  const sizes: Record<string, unknown> = {};
  for (const size of [128, 256]) {
    const paths = [new RealFft(size), new RealFft(size, { simd: false })];
    const us: number[][] = [[], []];
    const x = new Float32Array(size);
    for (let i = 0; i < size; i++) x[i] = 8000 * Math.sin(i * 0.37) + ((i * 7919) % 101);
    const re = new Float32Array(size / 2 + 1), im = new Float32Array(size / 2 + 1);
    for (const fft of paths) batch(fft, x, re, im, pairs); // warm-up
    for (let k = 0; k < runs; k++) {
      for (let p = 0; p < 2; p++) us[p].push(batch(paths[p], x, re, im, pairs));
    }
    const [simd, js] = us.map((u) => ({
      p50: r(percentile(u, 50)),
      p99: r(percentile(u, 99)),
      runs: u.length,
    }));
    sizes[String(size)] = {
      simd_kernel: paths[0].simd,
      simd_us_per_forward_inverse: simd,
      js_us_per_forward_inverse: js,
      js_over_simd_p50: r(js.p50 / simd.p50),
    };
  }
  return { pairs_per_batch: pairs, sizes };
}

if (import.meta.main) {
  console.log(JSON.stringify(runFftBench(Deno.args.includes("--quick")), null, 2));
}
