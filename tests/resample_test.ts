import assert from "node:assert/strict";
import { toneAmplitude } from "./_audio_helpers.ts";
import { resample, Resampler, transitionFor } from "../core/audio/resample.ts";
import { noise, rms, sine } from "../core/audio/pcm.ts";
import { FlowcatError } from "../core/errors.ts";

const RATE_PAIRS: [number, number][] = [
  [8000, 16000],
  [16000, 8000],
  [8000, 24000],
  [24000, 8000],
  [16000, 24000],
  [24000, 16000],
  [8000, 48000],
  [48000, 8000],
  [16000, 48000],
  [48000, 16000],
  [24000, 48000],
  [48000, 24000],
];

/** Middle of a resampled buffer, past the filter's start-up transient. */
function steady(out: Int16Array, r: Resampler): Int16Array {
  const skip = Math.ceil(2 * r.delay()) + 8;
  return out.subarray(skip, out.length - 8);
}

function db(x: number): number {
  return 20 * Math.log10(x);
}

function testSignal(rate: number, seconds: number): Int16Array {
  const n = Math.round(rate * seconds);
  const a = sine({ freq: 440, sampleRate: rate, samples: n, amplitude: 9000 });
  const b = sine({ freq: 2900, sampleRate: rate, samples: n, amplitude: 7000, phase: 1 });
  const c = noise(n, 4000, 7);
  const out = new Int16Array(n);
  for (let i = 0; i < n; i++) out[i] = a[i] + b[i] + c[i];
  return out;
}

Deno.test("resample: 20 ms frames give exactly 20 ms of output, every frame", () => {
  for (const [inRate, outRate] of [...RATE_PAIRS, [44100, 16000], [16000, 44100]]) {
    const r = new Resampler(inRate, outRate);
    const frameIn = new Int16Array(inRate / 50).fill(1000);
    for (let i = 0; i < 500; i++) {
      assert.equal(r.process(frameIn).length, outRate / 50, `${inRate}->${outRate} frame ${i}`);
    }
  }
});

Deno.test("resample: total length is ceil(n * out / in) for ragged chunks", () => {
  for (const [inRate, outRate] of [[8000, 24000], [24000, 16000], [44100, 16000], [48000, 8000]]) {
    const r = new Resampler(inRate, outRate);
    let fed = 0;
    let got = 0;
    for (let i = 0; i < 400; i++) {
      const n = (i * 37 + 11) % 301;
      const predicted = r.outputLength(n);
      const out = r.process(new Int16Array(n));
      assert.equal(out.length, predicted);
      fed += n;
      got += out.length;
      assert.equal(got, Math.ceil((fed * outRate) / inRate), `${inRate}->${outRate} after ${fed}`);
    }
  }
});

Deno.test("resample: streaming 20 ms frames equals one-shot, sample for sample", () => {
  for (const [inRate, outRate] of RATE_PAIRS) {
    const input = testSignal(inRate, 0.5);
    const whole = resample(input, inRate, outRate);
    const r = new Resampler(inRate, outRate);
    const step = inRate / 50;
    const scratch = new Int16Array(outRate / 50);
    const streamed = new Int16Array(whole.length);
    let o = 0;
    for (let i = 0; i < input.length; i += step) {
      const out = r.process(input.subarray(i, i + step), scratch);
      streamed.set(out, o);
      o += out.length;
    }
    assert.equal(o, whole.length);
    assert.deepEqual(streamed, whole, `${inRate}->${outRate}`);
  }
});

Deno.test("resample: ragged chunking equals one-shot too", () => {
  const input = testSignal(24000, 0.3);
  const whole = resample(input, 24000, 16000);
  const r = new Resampler(24000, 16000);
  const parts: number[] = [];
  for (let i = 0, k = 0; i < input.length; k++) {
    const n = [1, 2, 479, 480, 481, 7, 1000][k % 7];
    for (const v of r.process(input.subarray(i, i + n))) parts.push(v);
    i += n;
  }
  assert.deepEqual(Int16Array.from(parts), whole);
});

Deno.test("resample: passband tones keep their amplitude within 0.5 dB", () => {
  const cases: [number, number, number[]][] = [
    [8000, 16000, [300, 1000, 3000, 3400]],
    [16000, 8000, [300, 1000, 3000, 3400]],
    [24000, 8000, [500, 2000, 3400]],
    [8000, 24000, [1000, 3400]],
    [24000, 16000, [1000, 5000, 6800]],
    [16000, 24000, [1000, 6800]],
    [48000, 16000, [1000, 6000]],
    [48000, 24000, [1000, 10000]],
  ];
  for (const [inRate, outRate, freqs] of cases) {
    for (const f of freqs) {
      const input = sine({ freq: f, sampleRate: inRate, samples: inRate / 5, amplitude: 12000 });
      const r = new Resampler(inRate, outRate);
      const out = steady(r.process(input), r);
      const gain = db(rms(out) / (12000 / Math.SQRT2));
      assert.ok(Math.abs(gain) <= 0.5, `${inRate}->${outRate} ${f} Hz: ${gain.toFixed(3)} dB`);
    }
  }
});

Deno.test("resample: tones above the new Nyquist are attenuated by >= 50 dB", () => {
  const cases: [number, number, number[]][] = [
    [16000, 8000, [4200, 4500, 5000, 7000, 7900]],
    [24000, 8000, [4200, 6000, 9000, 11500]],
    [48000, 8000, [4500, 12000, 20000]],
    [24000, 16000, [8300, 10000, 11500]],
    [48000, 16000, [8500, 16000, 23000]],
    [48000, 24000, [12500, 20000]],
  ];
  for (const [inRate, outRate, freqs] of cases) {
    for (const f of freqs) {
      const input = sine({ freq: f, sampleRate: inRate, samples: inRate / 5, amplitude: 16000 });
      const r = new Resampler(inRate, outRate);
      const out = steady(r.process(input), r);
      const att = db(rms(out) / (16000 / Math.SQRT2));
      assert.ok(att <= -50, `${inRate}->${outRate} ${f} Hz leaks at ${att.toFixed(1)} dB`);
    }
  }
});

Deno.test("resample: upsampling images are attenuated by >= 50 dB", () => {
  for (
    const [inRate, outRate, f] of [[8000, 16000, 1000], [8000, 48000, 3000], [16000, 24000, 5000]]
  ) {
    const input = sine({ freq: f, sampleRate: inRate, samples: inRate / 5, amplitude: 16000 });
    const r = new Resampler(inRate, outRate);
    const out = steady(r.process(input), r);
    const main = toneAmplitude(out, f, outRate);
    assert.ok(Math.abs(db(main / 16000)) < 0.5);
    for (let k = 1; k * inRate - f < outRate / 2; k++) {
      for (const img of [k * inRate - f, k * inRate + f]) {
        if (img >= outRate / 2) continue;
        const level = db(toneAmplitude(out, img, outRate) / 16000);
        assert.ok(level <= -50, `${inRate}->${outRate}: image ${img} Hz at ${level.toFixed(1)} dB`);
      }
    }
  }
});

Deno.test("resample: output is in step with the input (group delay reported)", () => {
  const r = new Resampler(8000, 16000);
  const impulse = new Int16Array(400);
  impulse[100] = 16000;
  const out = r.process(impulse);
  let at = 0;
  for (let i = 1; i < out.length; i++) if (out[i] > out[at]) at = i;
  assert.ok(Math.abs(at - (200 + r.delay())) <= 1, `peak at ${at}, delay ${r.delay()}`);
  assert.ok(r.delay() < 0.004 * 16000, "latency under 4 ms");
});

Deno.test("resample: equal rates pass through; bad rates and small out throw", () => {
  const pcm = new Int16Array([1, 2, 3]);
  const same = new Resampler(16000, 16000);
  assert.equal(same.process(pcm), pcm);
  assert.deepEqual(resample(pcm, 8000, 8000), pcm);
  assert.throws(() => new Resampler(0, 8000), FlowcatError);
  assert.throws(() => new Resampler(8000.5, 16000), FlowcatError);
  assert.throws(() => new Resampler(8000, 7919 * 3), FlowcatError); // ratio 7919*3/8000
  assert.throws(
    () => new Resampler(8000, 16000).process(new Int16Array(160), new Int16Array(10)),
    FlowcatError,
  );
});

Deno.test("resample: reset forgets history", () => {
  const r = new Resampler(16000, 8000);
  const x = testSignal(16000, 0.05);
  const first = r.process(x).slice();
  r.process(testSignal(16000, 0.02));
  r.reset();
  assert.deepEqual(r.process(x), first);
});

Deno.test("resample: centered transition keeps the passband, halves the taps, and stays exact across frames", () => {
  for (const [inRate, outRate] of [[8000, 16000], [8000, 24000], [16000, 24000], [24000, 8000]]) {
    const strict = new Resampler(inRate, outRate);
    const centered = new Resampler(inRate, outRate, { transition: "centered" });
    assert.ok(
      centered.tapsPerOutput <= Math.ceil(strict.tapsPerOutput / 2) + 1,
      `${inRate}->${outRate}: ${centered.tapsPerOutput} taps vs ${strict.tapsPerOutput}`,
    );
    const lower = Math.min(inRate, outRate);
    for (const f of [300, 1000, 0.85 * lower / 2]) {
      const input = sine({ freq: f, sampleRate: inRate, samples: inRate / 5, amplitude: 12000 });
      const r = new Resampler(inRate, outRate, { transition: "centered" });
      const gain = db(rms(steady(r.process(input), r)) / (12000 / Math.SQRT2));
      assert.ok(Math.abs(gain) <= 0.5, `${inRate}->${outRate} ${f} Hz: ${gain.toFixed(3)} dB`);
    }
    const input = testSignal(inRate, 0.5);
    const whole = new Resampler(inRate, outRate, { transition: "centered" }).process(input);
    const r = new Resampler(inRate, outRate, { transition: "centered" });
    const parts: number[] = [];
    for (let i = 0; i < input.length; i += inRate / 50) {
      for (const v of r.process(input.subarray(i, i + inRate / 50))) parts.push(v);
    }
    assert.deepEqual(Int16Array.from(parts), whole);
  }
});

Deno.test("resample: centered 8k -> 16k images beyond 4.6 kHz are attenuated by >= 50 dB", () => {
  const r = new Resampler(8000, 16000, { transition: "centered" });
  const f = 1000;
  const out = steady(
    r.process(sine({ freq: f, sampleRate: 8000, samples: 1600, amplitude: 16000 })),
    r,
  );
  const image = db(toneAmplitude(out, 8000 - f, 16000) / 16000);
  assert.ok(image <= -50, `image at ${image.toFixed(1)} dB`);
  // One of the two phases is the single centre tap: every other output is a scaled input.
  const impulse = new Int16Array(64);
  impulse[10] = 16000;
  const resp = new Resampler(8000, 16000, { transition: "centered" }).process(impulse);
  const nonzero = Array.from(resp).filter((v) => v !== 0).length;
  assert.ok(nonzero <= 40, `impulse response has ${nonzero} non-zero samples`);
});

Deno.test("resample: transitionFor picks centered for telephony legs; 24k -> 8k folds nothing audible", () => {
  assert.equal(transitionFor(24000, 8000), "centered");
  assert.equal(transitionFor(8000, 16000), "centered");
  assert.equal(transitionFor(16000, 24000), "strict");
  assert.equal(transitionFor(48000, 16000), "strict");
  // A 5 kHz tone (above the 4.6 kHz stop edge) folds to 3 kHz: it must arrive >= 50 dB down.
  const r = new Resampler(24000, 8000, { transition: transitionFor(24000, 8000) });
  const out = steady(
    r.process(sine({ freq: 5000, sampleRate: 24000, samples: 4800, amplitude: 16000 })),
    r,
  );
  const alias = db(toneAmplitude(out, 3000, 8000) / 16000);
  assert.ok(alias <= -50, `alias at ${alias.toFixed(1)} dB`);
});

Deno.test("resample: processLent gives process's samples in one reused buffer", () => {
  const input = noise(480 * 10, 8000, 5);
  const plain = new Resampler(24000, 8000, { transition: transitionFor(24000, 8000) });
  const lent = new Resampler(24000, 8000, { transition: transitionFor(24000, 8000) });
  const buffers = new Set<ArrayBufferLike>();
  for (let i = 0; i < input.length; i += 480) {
    const frame = input.subarray(i, i + 480);
    const out = lent.processLent(frame);
    assert.deepEqual(out, plain.process(frame));
    buffers.add(out.buffer);
  }
  assert.equal(buffers.size, 1, "every frame in the same buffer");
  // A larger chunk grows the buffer; equal rates copy into it.
  assert.equal(lent.processLent(new Int16Array(4800)).length, 1600);
  const same = new Resampler(8000, 8000);
  const pcm = new Int16Array([1, 2, 3]);
  const got = same.processLent(pcm);
  assert.deepEqual(got, pcm);
  assert.notEqual(got.buffer, pcm.buffer);
});
