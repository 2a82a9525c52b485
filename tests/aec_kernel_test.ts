import assert from "node:assert/strict";
import { aecArena, aecKernelAvailable } from "../core/audio/aec_kernel.ts";
import { type MdfBlockEnergy, MdfFilter } from "../core/audio/aec_mdf.ts";
import { EchoCanceller } from "../core/audio/aec.ts";
import { assembleWat, wasmModuleSource, WAT_KERNELS } from "../tools/build_wasm.ts";

const AEC = WAT_KERNELS.find((k) => k.wat.endsWith("aec.wat"))!;

/** Deterministic noise in [-0.5, 0.5). */
function noise(seed: number): () => number {
  let s = seed;
  return () => ((s = (s * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff) - 0.5;
}

/** Reference and microphone blocks: noise through a path of bulk delay `delay` samples. */
function echoBlocks(block: number, blocks: number, delay: number) {
  const rnd = noise(7);
  const far = new Float32Array(block * blocks + delay);
  for (let i = 0; i < far.length; i++) far[i] = rnd() * 8000;
  const refs: Float32Array[] = [], mics: Float32Array[] = [];
  for (let b = 0; b < blocks; b++) {
    const ref = new Float32Array(block), mic = new Float32Array(block);
    for (let i = 0; i < block; i++) {
      const t = b * block + i + delay;
      ref[i] = far[t];
      mic[i] = 0.4 * far[t - delay] - 0.2 * far[t - delay + 3] + rnd() * 2;
    }
    refs.push(ref);
    mics.push(mic);
  }
  return { refs, mics };
}

Deno.test("aec kernel: the committed bytes are aec.wat assembled (deno task wasm)", async () => {
  const bytes = await assembleWat(AEC.wat, await Deno.readTextFile(AEC.wat));
  assert.equal(await Deno.readTextFile(AEC.module), wasmModuleSource(bytes, AEC));
});

Deno.test("aec kernel: loads in Deno (WebAssembly SIMD) and the filter uses it", () => {
  assert.ok(aecKernelAvailable());
  assert.equal(new MdfFilter(64, 8).simd, true);
  assert.equal(new MdfFilter(64, 8, { simd: false }).simd, false);
});

Deno.test("aec kernel: SIMD and JavaScript filters cancel alike, block by block", () => {
  for (const [block, partitions, delay] of [[64, 40, 1800], [128, 20, 700]]) {
    const { refs, mics } = echoBlocks(block, 600, delay);
    const simd = new MdfFilter(block, partitions);
    const js = new MdfFilter(block, partitions, { simd: false });
    const outS = new Float32Array(block), outJ = new Float32Array(block);
    const eS: MdfBlockEnergy = { mic: 0, echo: 0, error: 0 };
    const eJ: MdfBlockEnergy = { mic: 0, echo: 0, error: 0 };
    let micTail = 0, errS = 0, errJ = 0;
    for (let b = 0; b < refs.length; b++) {
      simd.process(refs[b], mics[b], outS, 1, eS);
      js.process(refs[b], mics[b], outJ, 1, eJ);
      // The drift rotation runs through the kernel too.
      if (b % 50 === 49) {
        simd.shift(0.01);
        js.shift(0.01);
      }
      if (b >= refs.length - 100) {
        micTail += eS.mic;
        errS += eS.error;
        errJ += eJ.error;
      }
    }
    const erle = (e: number) => 10 * Math.log10(micTail / e);
    // Both learn the path; float32 and float64 rounding part them by well under a dB of ERLE.
    assert.ok(erle(errS) > 25, `${block}: SIMD ERLE ${erle(errS).toFixed(1)} dB`);
    assert.ok(Math.abs(erle(errS) - erle(errJ)) < 1, `${erle(errS)} vs ${erle(errJ)} dB`);
    const wS = simd.background, wJ = js.background;
    assert.equal(wS.stride, wJ.stride);
    assert.equal(wS.stride % 4, 0);
    let diff = 0, norm = 0;
    for (let i = 0; i < wS.re.length; i++) {
      diff += (wS.re[i] - wJ.re[i]) ** 2 + (wS.im[i] - wJ.im[i]) ** 2;
      norm += wJ.re[i] ** 2 + wJ.im[i] ** 2;
    }
    assert.ok(diff < 1e-3 * norm, `coefficients differ by ${Math.sqrt(diff / norm)}`);
    // The padding bins stay zero.
    for (let p = 0; p < partitions; p++) {
      for (let j = block + 1; j < wS.stride; j++) assert.equal(wS.re[p * wS.stride + j], 0);
    }
  }
});

Deno.test("aec kernel: a whole canceller runs on it at both telephone rates", () => {
  for (const rate of [8000, 16000]) {
    const aec = new EchoCanceller({ sampleRate: rate });
    const n = rate / 50, rnd = noise(3);
    const far = new Float32Array(n * 300 + 4000);
    for (let i = 0; i < far.length; i++) far[i] = rnd() * 9000;
    const delay = Math.round(rate * 0.12);
    let micE = 0, outE = 0;
    for (let f = 0; f < 300; f++) {
      const ref = new Int16Array(n), mic = new Int16Array(n);
      for (let i = 0; i < n; i++) {
        const t = f * n + i + delay;
        ref[i] = far[t];
        mic[i] = 0.3 * far[t - delay];
      }
      const out = aec.process(mic, ref);
      if (f >= 250) {
        for (let i = 0; i < n; i++) {
          micE += mic[i] * mic[i];
          outE += out[i] * out[i];
        }
      }
    }
    assert.ok(10 * Math.log10(micE / (outE + 1)) > 25, `${rate}: echo left`);
  }
});

Deno.test("aec kernel: an arena refuses to hand out more than it holds", () => {
  const arena = aecArena(8);
  const a = arena.take(5); // rounded up to 8 floats
  assert.equal(a.length, 5);
  assert.equal(arena.addressOf(a) % 16, 0);
  assert.throws(() => arena.take(1), RangeError);
  const js = aecArena(8, false);
  assert.equal(js.kernel, undefined);
  assert.equal(js.take(100).length, 100);
});
