import assert from "node:assert/strict";
import { toneAmplitude } from "./_audio_helpers.ts";
import { AudioRecorder } from "../core/audio/recorder.ts";
import { decodeWav } from "../core/audio/wav.ts";
import { rms, sine } from "../core/audio/pcm.ts";
import type { AudioFrame } from "../core/frames.ts";
import { FlowcatError } from "../core/errors.ts";

const MS = 1_000_000; // ns per ms

function frames(pcm: Int16Array, rate: number, frameMs = 20): AudioFrame[] {
  const step = (rate * frameMs) / 1000;
  const out: AudioFrame[] = [];
  for (let i = 0; i < pcm.length; i += step) {
    out.push({ pcm: pcm.subarray(i, i + step), sampleRate: rate, numChannels: 1 });
  }
  return out;
}

Deno.test("recorder: legs at different rates land at their timestamps; gaps are silence", () => {
  const rec = new AudioRecorder({ sampleRate: 16000 });
  const caller = sine({ freq: 440, sampleRate: 8000, samples: 8000, amplitude: 8000 });
  const bot = sine({ freq: 1000, sampleRate: 24000, samples: 12000, amplitude: 6000 });
  const t0 = 5_000 * MS; // pipeline clock does not start at zero
  frames(caller, 8000).forEach((f, i) => rec.addInput(f, t0 + i * 20 * MS));
  frames(bot, 24000).forEach((f, i) => rec.addOutput(f, t0 + 2000 * MS + i * 20 * MS));
  const wav = decodeWav(rec.toWav());
  assert.equal(wav.sampleRate, 16000);
  assert.equal(wav.numChannels, 1);
  assert.equal(wav.pcm.length, 2.5 * 16000);
  assert.equal(rec.durationSecs, 2.5);
  const first = wav.pcm.subarray(1600, 16000 - 800);
  const gap = wav.pcm.subarray(16000 + 160, 32000);
  const last = wav.pcm.subarray(32000 + 800, 40000);
  assert.ok(Math.abs(20 * Math.log10(toneAmplitude(first, 440, 16000) / 8000)) < 0.5);
  assert.ok(toneAmplitude(first, 1000, 16000) < 10);
  assert.equal(rms(gap), 0);
  assert.ok(Math.abs(20 * Math.log10(toneAmplitude(last, 1000, 16000) / 6000)) < 0.5);
  assert.ok(toneAmplitude(last, 440, 16000) < 10);
});

Deno.test("recorder: overlapping legs are summed with saturation", () => {
  const rec = new AudioRecorder({ sampleRate: 8000 });
  const loud = new Int16Array(160).fill(30000);
  const quiet = new Int16Array(160).fill(-1000);
  rec.addInput({ pcm: loud, sampleRate: 8000, numChannels: 1 }, 0);
  rec.addOutput({ pcm: loud, sampleRate: 8000, numChannels: 1 }, 0);
  rec.addInput({ pcm: loud, sampleRate: 8000, numChannels: 1 }, 20 * MS);
  rec.addOutput({ pcm: quiet, sampleRate: 8000, numChannels: 1 }, 20 * MS);
  const neg = new Int16Array(160).fill(-30000);
  rec.addInput({ pcm: neg, sampleRate: 8000, numChannels: 1 }, 40 * MS);
  rec.addOutput({ pcm: neg, sampleRate: 8000, numChannels: 1 }, 40 * MS);
  const mixed = rec.mix();
  assert.equal(mixed.length, 480);
  assert.ok(mixed.subarray(0, 160).every((v) => v === 32767));
  assert.ok(mixed.subarray(160, 320).every((v) => v === 29000));
  assert.ok(mixed.subarray(320).every((v) => v === -32768));
});

Deno.test("recorder: a leg never overlaps itself; bursts play back to back", () => {
  const rec = new AudioRecorder({ sampleRate: 8000 });
  for (let i = 0; i < 10; i++) {
    const pcm = new Int16Array(160).fill(i + 1);
    rec.addOutput({ pcm, sampleRate: 8000, numChannels: 1 }, 0); // TTS burst, same stamp
  }
  const mixed = rec.mix();
  assert.equal(mixed.length, 1600);
  for (let i = 0; i < 10; i++) assert.equal(mixed[i * 160 + 80], i + 1);
});

Deno.test("recorder: jitter within tolerance adds no gap; a real gap is silence", () => {
  const rec = new AudioRecorder({ sampleRate: 8000, startNs: 0 });
  const pcm = new Int16Array(160).fill(100);
  const audio = { pcm, sampleRate: 8000, numChannels: 1 };
  const jitterMs = [0, 3, 6, 2, 5, 1];
  for (const [i, j] of jitterMs.entries()) rec.addInput(audio, (i * 20 + j) * MS);
  assert.equal(rec.mix().length, 6 * 160, "jitter under 30 ms is absorbed");
  rec.addInput(audio, 220 * MS); // 100 ms later than the leg's end (120 ms)
  const mixed = rec.mix();
  assert.equal(mixed.length, 240 * 8);
  assert.ok(mixed.subarray(120 * 8, 220 * 8).every((v) => v === 0));
  assert.ok(mixed.subarray(220 * 8).every((v) => v === 100));
});

Deno.test("recorder: frames without timestamps follow on; startNs trims earlier audio", () => {
  const rec = new AudioRecorder({ sampleRate: 8000, startNs: 100 * MS });
  const ramp = Int16Array.from({ length: 1600 }, (_, i) => i);
  rec.addInput({ pcm: ramp, sampleRate: 8000, numChannels: 1 }, 50 * MS); // starts 50 ms early
  rec.addInput({ pcm: new Int16Array(80).fill(-5), sampleRate: 8000, numChannels: 1 });
  const mixed = rec.mix();
  assert.equal(mixed[0], 400); // 50 ms at 8 kHz trimmed
  assert.equal(mixed.length, 1200 + 80);
  assert.equal(mixed[1199], 1599);
  assert.equal(mixed[1200], -5);
});

Deno.test("recorder: stereo input is averaged to mono", () => {
  const rec = new AudioRecorder({ sampleRate: 8000 });
  rec.addInput({ pcm: new Int16Array([100, 300, -100, -300]), sampleRate: 8000, numChannels: 2 });
  assert.deepEqual([...rec.mix()], [200, -200]);
});

Deno.test("recorder: maxSeconds bounds memory and counts the dropped samples", () => {
  const rec = new AudioRecorder({ sampleRate: 8000, maxSeconds: 0.1, startNs: 0 });
  const audio = { pcm: new Int16Array(480).fill(1), sampleRate: 8000, numChannels: 1 };
  rec.addInput(audio);
  rec.addInput(audio);
  rec.addOutput(audio, 50 * MS); // lands at 400: 400 kept, 80 dropped
  rec.addOutput(audio, 5000 * MS); // past the end: all dropped
  assert.equal(rec.mix().length, 800);
  assert.equal(rec.mix()[799], 2);
  assert.equal(rec.droppedSamples, 160 + 80 + 480);
  rec.reset();
  assert.equal(rec.mix().length, 0);
  assert.equal(rec.droppedSamples, 0);
  assert.equal(decodeWav(rec.toWav()).pcm.length, 0);
});

Deno.test("recorder: ten minutes of timestamp gap mixes as zeros", () => {
  const rec = new AudioRecorder({ sampleRate: 16000 });
  const audio = { pcm: new Int16Array(320).fill(7), sampleRate: 16000, numChannels: 1 };
  rec.addInput(audio, 0);
  rec.addInput(audio, 600_000 * MS); // ten minutes later
  const wav = decodeWav(rec.toWav());
  assert.equal(wav.pcm.length, 600 * 16000 + 320);
  assert.equal(wav.pcm[100], 7);
  assert.equal(wav.pcm[300 * 16000], 0);
  assert.equal(wav.pcm[600 * 16000 + 5], 7);
});

Deno.test("recorder: bad options and bad audio throw FlowcatError", () => {
  assert.throws(() => new AudioRecorder({ sampleRate: 0 }), FlowcatError);
  assert.throws(() => new AudioRecorder({ maxSeconds: 0 }), FlowcatError);
  const rec = new AudioRecorder();
  assert.throws(
    () => rec.addInput({ pcm: new Int16Array(1), sampleRate: 0, numChannels: 1 }),
    FlowcatError,
  );
});
