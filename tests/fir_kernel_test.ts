import assert from "node:assert/strict";
import { Resampler, type ResamplerOptions } from "../core/audio/resample.ts";
import { firKernelAvailable } from "../core/audio/fir_kernel.ts";
import { noise, sine } from "../core/audio/pcm.ts";
import { assembleWat, FIR_MODULE, FIR_WAT, wasmModuleSource } from "../tools/build_wasm.ts";

function signal(rate: number, samples: number, seed: number): Int16Array {
  const a = sine({ freq: 440, sampleRate: rate, samples, amplitude: 12000 });
  const b = sine({ freq: 0.4 * rate, sampleRate: rate, samples, amplitude: 9000, phase: 1 });
  const c = noise(samples, 9000, seed);
  const out = new Int16Array(samples);
  for (let i = 0; i < samples; i++) out[i] = Math.max(-32768, Math.min(32767, a[i] + b[i] + c[i]));
  return out;
}

/** Feed `input` in frames of varying size (0 and 1 sample included). */
function chunked(r: Resampler, input: Int16Array): Int16Array {
  const sizes = [0, 1, 7, 160, 0, 320, 33, 480, 1, 2];
  const parts: number[] = [];
  for (let i = 0, k = 0; i < input.length; k++) {
    const n = sizes[k % sizes.length];
    for (const v of r.process(input.subarray(i, i + n))) parts.push(v);
    i += n;
  }
  return Int16Array.from(parts);
}

const CASES: [number, number, ResamplerOptions][] = [
  [8000, 16000, { transition: "centered" }],
  [16000, 24000, { transition: "centered" }],
  [24000, 8000, {}],
  [24000, 8000, { transition: "centered" }],
  [24000, 16000, {}],
  [44100, 16000, {}],
  [16000, 48000, {}],
  [48000, 16000, {}],
];

Deno.test("fir kernel: the committed bytes are fir.wat assembled (deno task wasm)", async () => {
  const bytes = await assembleWat(FIR_WAT, await Deno.readTextFile(FIR_WAT));
  assert.equal(await Deno.readTextFile(FIR_MODULE), wasmModuleSource(bytes));
});

Deno.test("fir kernel: loads in Deno (WebAssembly SIMD) and the resampler uses it", () => {
  assert.ok(firKernelAvailable());
});

Deno.test("fir kernel: SIMD and JavaScript loops agree within one unit, chunked any way", () => {
  for (const [inRate, outRate, opts] of CASES) {
    const input = signal(inRate, Math.round(inRate * 0.3), inRate);
    const js = new Resampler(inRate, outRate, { ...opts, kernel: "js" }).process(input);
    const simd = chunked(new Resampler(inRate, outRate, opts), input);
    assert.equal(simd.length, js.length, `${inRate}->${outRate} length`);
    let worst = 0;
    for (let i = 0; i < js.length; i++) worst = Math.max(worst, Math.abs(js[i] - simd[i]));
    assert.ok(worst <= 1, `${inRate}->${outRate}: differs by ${worst}`);
    // Clipping input stays clamped to int16, not wrapped.
    const loud = new Int16Array(2000).fill(32767);
    for (const v of new Resampler(inRate, outRate, opts).process(loud)) {
      assert.ok(v >= -32768 && v <= 32767);
    }
  }
});

Deno.test("fir kernel: interleaved streams keep their own history; a huge frame grows memory", () => {
  const a = signal(24000, 4800, 1);
  const b = signal(24000, 4800, 2);
  const alone = [a, b].map((x) => new Resampler(24000, 8000).process(x));
  const ra = new Resampler(24000, 8000);
  const rb = new Resampler(24000, 8000);
  const pa: number[] = [];
  const pb: number[] = [];
  for (let i = 0; i < 4800; i += 480) {
    pa.push(...ra.process(a.subarray(i, i + 480)));
    pb.push(...rb.process(b.subarray(i, i + 480)));
  }
  assert.deepEqual(Int16Array.from(pa), alone[0]);
  assert.deepEqual(Int16Array.from(pb), alone[1]);
  // 20 s at 48 kHz in one call: more than the kernel's first memory page holds.
  const big = signal(48000, 48000 * 20, 3);
  const js = new Resampler(48000, 16000, { kernel: "js" }).process(big);
  const simd = new Resampler(48000, 16000).process(big);
  assert.equal(simd.length, js.length);
  for (let i = 0; i < js.length; i += 997) assert.ok(Math.abs(js[i] - simd[i]) <= 1);
  // And the earlier streams still run after the grow.
  assert.deepEqual(ra.process(new Int16Array(0)), new Int16Array(0));
  assert.equal(rb.process(a.subarray(0, 480)).length, 160);
});
