import assert from "node:assert/strict";
import { EchoCanceller } from "../core/audio/aec.ts";
import { noise } from "../core/audio/pcm.ts";
import { erleDb } from "../bench/aec_set.ts";

/**
 * White noise as the reference, and its echo as a phone whose clock runs `ppm` fast plays and
 * records it: read at a rate 1 + ppm/1e6 (windowed-sinc interpolation), 100 ms late, through a
 * short path.
 */
function driftingEcho(rate: number, secs: number, ppm: number) {
  const ref = noise(rate * secs, 4000, 11);
  const mic = new Int16Array(ref.length), step = 1 + ppm * 1e-6, delay = 0.1 * rate;
  const taps = [0.5, -0.3, 0.15, 0.05];
  const at = (x: number) => {
    // Hann-windowed sinc over 16 neighbours.
    const k0 = Math.floor(x);
    let acc = 0;
    for (let k = k0 - 7; k <= k0 + 8; k++) {
      if (k < 0 || k >= ref.length) continue;
      const d = x - k, w = 0.5 + 0.5 * Math.cos((Math.PI * d) / 8.5);
      acc += ref[k] * w * (d === 0 ? 1 : Math.sin(Math.PI * d) / (Math.PI * d));
    }
    return acc;
  };
  for (let i = 0; i < mic.length; i++) {
    let acc = 0;
    for (let j = 0; j < taps.length; j++) {
      const x = (i - delay - 2 * j) * step;
      if (x >= 0) acc += taps[j] * at(x);
    }
    mic[i] = Math.round(acc);
  }
  return { ref, mic };
}

/** The linear filter alone over 20 ms frames: the output aligned to the input, and the drift. */
function cancel(mic: Int16Array, ref: Int16Array, rate: number, trackDrift: boolean) {
  const aec = new EchoCanceller({ sampleRate: rate, suppress: false, trackDrift });
  const n = rate / 50, out = new Int16Array(mic.length);
  for (let i = 0; i + n <= mic.length; i += n) {
    aec.process(mic.subarray(i, i + n), ref.subarray(i, i + n), out.subarray(i, i + n));
  }
  return { out: out.slice(aec.latency), ppm: aec.driftPpm };
}

for (const ppm of [100, -100]) {
  Deno.test(`drift tracker: follows the far end's clock ${ppm} ppm off`, () => {
    const rate = 8000, secs = 10;
    const { ref, mic } = driftingEcho(rate, secs, ppm);
    const tracked = cancel(mic, ref, rate, true);
    assert.ok(
      Math.abs(tracked.ppm - ppm) <= 25,
      `drift followed: ${tracked.ppm.toFixed(1)} ppm, not ${ppm}`,
    );
    const end = tracked.out.length, from = end - 3 * rate;
    const erle = erleDb(mic, tracked.out, from, end);
    const fixed = cancel(mic, ref, rate, false);
    const without = erleDb(mic, fixed.out, from, end);
    assert.equal(fixed.ppm, 0);
    // Over the last 3 s the path has moved by about 2 samples: the filter alone lags behind.
    assert.ok(erle >= 25, `linear ERLE with tracking ${erle.toFixed(1)} dB`);
    assert.ok(
      erle >= without + 6,
      `tracking ${erle.toFixed(1)} dB, without ${without.toFixed(1)} dB`,
    );
  });
}

Deno.test("drift tracker: no drift, none followed", () => {
  const rate = 8000;
  const { ref, mic } = driftingEcho(rate, 6, 0);
  const { ppm } = cancel(mic, ref, rate, true);
  assert.ok(Math.abs(ppm) <= 10, `drift followed on a steady path: ${ppm.toFixed(1)} ppm`);
});
