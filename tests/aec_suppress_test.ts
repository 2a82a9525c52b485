import assert from "node:assert/strict";
import { ResidualSuppressor } from "../core/audio/aec_suppress.ts";

const RATE = 8000, B = 64;

/** Power of `x` at `freq` Hz (Goertzel), per sample. */
function powerAt(x: Float32Array, freq: number): number {
  const w = (2 * Math.PI * freq) / RATE, c = 2 * Math.cos(w);
  let s1 = 0, s2 = 0;
  for (let i = 0; i < x.length; i++) {
    const s = x[i] + c * s1 - s2;
    s2 = s1;
    s1 = s;
  }
  return (s1 * s1 + s2 * s2 - c * s1 * s2) / x.length;
}

/** Mean square of a signal. */
function meanSquare(x: Float32Array): number {
  let s = 0;
  for (let i = 0; i < x.length; i++) s += x[i] * x[i];
  return s / x.length;
}

/**
 * A reference of three tones around 600 Hz whose level comes and goes like speech, its residual
 * echo (a tenth of it, 30 ms late), and the caller: a 2.5 kHz tone from `talkAt` s on.
 */
function signals(secs: number, talkAt: number) {
  const n = secs * RATE;
  const ref = new Float32Array(n), err = new Float32Array(n), caller = new Float32Array(n);
  const lag = Math.round(0.03 * RATE);
  for (let i = 0; i < n; i++) {
    const t = i / RATE, env = 0.5 + 0.5 * Math.sin(2 * Math.PI * 3 * t);
    ref[i] = env *
      (3000 * Math.sin(2 * Math.PI * 450 * t) + 2000 * Math.sin(2 * Math.PI * 620 * t + 1) +
        1500 * Math.sin(2 * Math.PI * 790 * t + 2));
    if (t >= talkAt) caller[i] = 1000 * Math.sin(2 * Math.PI * 2500 * t);
  }
  for (let i = lag; i < n; i++) err[i] = 0.1 * ref[i - lag] + caller[i];
  return { ref, err, caller };
}

/** Run the suppressor over whole blocks; the output aligned with the input (one block late). */
function run(s: ResidualSuppressor, ref: Float32Array, err: Float32Array, learnUntil: number) {
  const out = new Float32Array(err.length);
  const block = new Float32Array(B);
  for (let i = 0; i + B <= err.length; i += B) {
    s.process(err.subarray(i, i + B), ref.subarray(i, i + B), {
      far: true,
      learn: i < learnUntil,
      doubleTalk: false,
    }, block);
    if (i >= B) out.set(block, i - B);
  }
  return out;
}

Deno.test("residual suppressor: attenuates the bands holding only echo, passes the caller", () => {
  const { ref, err, caller } = signals(6, 3);
  const s = new ResidualSuppressor(B, RATE, { partitions: 12 });
  // Learns the echo power in single talk for the first 3 s; the caller talks from 3 s on.
  const out = run(s, ref, err, 3 * RATE);
  const single = [RATE, 3 * RATE], talk = [4 * RATE, 6 * RATE - 2 * B];
  for (const f of [450, 620, 790]) {
    const before = powerAt(err.subarray(single[0], single[1]), f);
    const after = powerAt(out.subarray(single[0], single[1]), f);
    const db = 10 * Math.log10(before / after);
    assert.ok(db >= 25, `echo at ${f} Hz, single talk: ${db.toFixed(1)} dB down`);
    const inTalk = 10 * Math.log10(
      powerAt(err.subarray(talk[0], talk[1]), f) / powerAt(out.subarray(talk[0], talk[1]), f),
    );
    assert.ok(inTalk >= 25, `echo at ${f} Hz, double talk: ${inTalk.toFixed(1)} dB down`);
  }
  const kept = 10 * Math.log10(
    powerAt(out.subarray(talk[0], talk[1]), 2500) /
      powerAt(caller.subarray(talk[0], talk[1]), 2500),
  );
  assert.ok(Math.abs(kept) <= 1, `the caller's tone changed by ${kept.toFixed(2)} dB`);
});

Deno.test("residual suppressor: a caller louder than the echo in its band keeps most of it", () => {
  // The caller's tone sits on the echo's own 620 Hz, 12 dB above it.
  const n = 5 * RATE, lag = 240;
  const ref = new Float32Array(n), err = new Float32Array(n);
  for (let i = 0; i < n; i++) ref[i] = 3000 * Math.sin((2 * Math.PI * 620 * i) / RATE);
  for (let i = lag; i < n; i++) {
    err[i] = 0.1 * ref[i - lag] +
      (i >= 3 * RATE ? 1200 * Math.sin((2 * Math.PI * 640 * i) / RATE) : 0);
  }
  const s = new ResidualSuppressor(B, RATE, { partitions: 12 });
  const out = run(s, ref, err, 3 * RATE);
  const from = 3.5 * RATE, to = n - 2 * B;
  const db = 10 *
    Math.log10(powerAt(out.subarray(from, to), 640) / powerAt(err.subarray(from, to), 640));
  assert.ok(db > -6, `the caller lost ${(-db).toFixed(1)} dB`);
});

Deno.test("residual suppressor: with no reference the residual passes bit-exact, a block late", () => {
  const s = new ResidualSuppressor(B, RATE);
  const n = 40 * B, err = new Float32Array(n), out = new Float32Array(B);
  for (let i = 0; i < n; i++) err[i] = Math.round(8000 * Math.sin(i * 0.37) * Math.cos(i * 0.011));
  const zero = new Float32Array(B);
  for (let i = 0; i < n; i += B) {
    s.process(err.subarray(i, i + B), zero, { far: false, learn: false, doubleTalk: false }, out);
    for (let k = 0; k < B && i > 0; k++) {
      assert.equal(out[k], err[i - B + k], `sample ${i - B + k}`);
    }
  }
});

Deno.test("residual suppressor: an echo predicted but absent takes the caller down gradually", () => {
  // The model learns a 620 Hz echo 30 ms late (the tone in blocks on and off, so the model can
  // tell the lag); then the agent stops and the caller talks at 640 Hz, and at 4 s one 8 ms block
  // of the agent's tone, 20 dB louder, makes the model predict an echo well above the caller that
  // never comes (the residual is the caller's alone). The gain falls at most 10.5 dB a block, so a
  // block or two of it does not cut a hole in the caller.
  const n = 5 * RATE, lag = 240, burst = 4 * RATE;
  const ref = new Float32Array(n), err = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const k = Math.floor(i / B), training = i < 3 * RATE && (k * 7) % 5 < 2;
    const level = training ? 3000 : i >= burst && i < burst + B ? 30000 : 0;
    ref[i] = level * Math.sin((2 * Math.PI * 620 * i) / RATE);
    err[i] = i < 3 * RATE
      ? (i >= lag ? 0.1 * ref[i - lag] : 0)
      : 1200 * Math.sin((2 * Math.PI * 640 * i) / RATE);
  }
  const s = new ResidualSuppressor(B, RATE, { partitions: 12 });
  const out = run(s, ref, err, 3 * RATE);
  const before = meanSquare(out.subarray(burst - RATE / 4, burst));
  const levels: number[] = [];
  for (let i = burst; i < burst + RATE / 5; i += B) {
    levels.push(10 * Math.log10(meanSquare(out.subarray(i, i + B)) / before));
  }
  let prev = 0;
  for (const [i, db] of levels.entries()) {
    assert.ok(db > prev - 12, `block ${i}: ${db.toFixed(1)} dB after ${prev.toFixed(1)} dB`);
    prev = db;
  }
  assert.ok(Math.min(...levels) < -30, "the predicted echo is suppressed in the end");
});
