import assert from "node:assert/strict";
import {
  type Frame,
  inputAudio,
  type Link,
  makeFrame,
  Pipeline,
  PipelineTask,
  type ProcessorSetup,
  type StartParams,
  ttsAudio,
} from "../mod.ts";
import { RecorderProcessor } from "../core/processors/recorder.ts";
import { decodeWav } from "../core/audio/wav.ts";
import { rms, sine } from "../core/audio/pcm.ts";
import { silentLogger } from "../core/log.ts";
import { toneAmplitude } from "./_audio_helpers.ts";
import { drive, Recorder } from "./_core_helpers.ts";

const RATE = 16000;
const MS = 1e6;

/** A recorder driven by hand: a settable clock and a link that keeps what was pushed. */
function harness(opts: { channels?: 1 | 2; sampleRate?: number } = {}) {
  let nowNs = 0;
  const pushed: Frame[] = [];
  const link = {
    push: (f: Frame) => void pushed.push(f),
    pushDown: (f: Frame) => void pushed.push(f),
  } as unknown as Link;
  const rec = new RecorderProcessor({ ...opts, clock: () => nowNs });
  rec.start({} as ProcessorSetup, {} as StartParams, link);
  return {
    rec,
    pushed,
    at(ms: number) {
      nowNs = ms * MS;
    },
    send(f: Frame) {
      rec.processFrame(f, "downstream", link);
    },
  };
}

/** 20 ms caller frames from `fromMs` to `toMs`, each sent at its own time. */
function caller(h: ReturnType<typeof harness>, fromMs: number, toMs: number, tone: boolean) {
  for (let t = fromMs; t < toMs; t += 20) {
    h.at(t);
    const pcm = tone
      ? sine({
        freq: 440,
        sampleRate: RATE,
        samples: 320,
        amplitude: 8000,
        phase: (t / 1000) * 2 * Math.PI * 440,
      })
      : new Int16Array(320);
    h.send(inputAudio({ pcm, sampleRate: RATE, numChannels: 1 }));
  }
}

const botTone = (secs: number) =>
  ttsAudio({
    pcm: sine({ freq: 1000, sampleRate: 24000, samples: secs * 24000, amplitude: 6000 }),
    sampleRate: 24000,
    numChannels: 1,
  });

/** Split interleaved stereo. */
function channels(pcm: Int16Array): [Int16Array, Int16Array] {
  const l = new Int16Array(pcm.length / 2);
  const r = new Int16Array(pcm.length / 2);
  for (let i = 0; i < l.length; i++) {
    l[i] = pcm[2 * i];
    r[i] = pcm[2 * i + 1];
  }
  return [l, r];
}

/** RMS of `pcm` between two times in ms. */
const level = (pcm: Int16Array, fromMs: number, toMs: number) =>
  rms(pcm.subarray((fromMs * RATE) / 1000, (toMs * RATE) / 1000));

/** Check every field of the canonical 44-byte header against what it should say. */
function checkHeader(bytes: Uint8Array, rate: number, ch: number): number {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const ascii = (at: number) => String.fromCharCode(...bytes.subarray(at, at + 4));
  assert.equal(ascii(0), "RIFF");
  assert.equal(v.getUint32(4, true), bytes.length - 8, "RIFF size");
  assert.equal(ascii(8), "WAVE");
  assert.equal(ascii(12), "fmt ");
  assert.equal(v.getUint32(16, true), 16, "fmt size");
  assert.equal(v.getUint16(20, true), 1, "PCM");
  assert.equal(v.getUint16(22, true), ch, "channels");
  assert.equal(v.getUint32(24, true), rate, "sample rate");
  assert.equal(v.getUint32(28, true), rate * ch * 2, "byte rate");
  assert.equal(v.getUint16(32, true), ch * 2, "block align");
  assert.equal(v.getUint16(34, true), 16, "bits per sample");
  assert.equal(ascii(36), "data");
  const data = v.getUint32(40, true);
  assert.equal(data, bytes.length - 44, "data size");
  assert.equal(data % (ch * 2), 0, "whole sample frames");
  return data / (ch * 2);
}

Deno.test("stereo: caller left, bot right, each at its time; frames pass unchanged", () => {
  const h = harness({ channels: 2 });
  caller(h, 0, 1000, true);
  caller(h, 1000, 1200, false);
  const bot = botTone(0.5);
  h.send(bot); // arrives at 1180 ms, plays 1180..1680
  caller(h, 1200, 2000, false);
  h.rec.stop({ kind: "end" });
  assert.equal(h.pushed.length, 101);
  assert.equal(h.pushed[60], bot, "bot frame forwarded as is");
  const bytes = h.rec.wav();
  assert.equal(checkHeader(bytes, RATE, 2), 2 * RATE);
  const wav = decodeWav(bytes);
  assert.equal(wav.numChannels, 2);
  const [l, r] = channels(wav.pcm);
  assert.ok(Math.abs(toneAmplitude(l.subarray(0, RATE), 440, RATE) - 8000) < 100);
  assert.ok(level(l, 1010, 2000) < 1, "caller silent after 1 s");
  assert.ok(level(r, 0, 1170) < 1, "bot silent before it speaks");
  const botPart = r.subarray((1190 * RATE) / 1000, (1670 * RATE) / 1000);
  assert.ok(Math.abs(toneAmplitude(botPart, 1000, RATE) - 6000) < 100, "bot tone at 1.18 s");
  assert.ok(level(r, 1700, 2000) < 1, "bot silent after 0.5 s of speech");
  assert.ok(toneAmplitude(l, 1000, RATE) < 1, "no bot in the caller channel");
});

Deno.test("mono: the two legs mixed", () => {
  const h = harness();
  caller(h, 0, 400, true);
  h.at(100);
  h.send(botTone(0.2));
  h.rec.stop({ kind: "end" });
  const [l, r] = channels(decodeWav(h.rec.wav(2)).pcm);
  const mono = h.rec.wav();
  assert.equal(checkHeader(mono, RATE, 1), l.length);
  const pcm = decodeWav(mono).pcm;
  for (let i = 0; i < pcm.length; i++) {
    assert.equal(pcm[i], Math.max(-32768, Math.min(32767, l[i] + r[i])), `sample ${i}`);
  }
  assert.ok(toneAmplitude(pcm.subarray(1600, 4800), 1000, RATE) > 5900);
  assert.ok(toneAmplitude(pcm.subarray(1600, 4800), 440, RATE) > 7900);
});

Deno.test("bursty TTS is laid back to back and kept only once played", () => {
  const h = harness({ channels: 2 });
  h.at(1000);
  for (let i = 0; i < 5; i++) h.send(botTone(0.2));
  h.at(1500);
  h.send(makeFrame("Text", { text: "tick" }));
  // By 1.5 s two of the five (1.0..1.4 s) have played; the timeline starts at 0.
  assert.ok(Math.abs(h.rec.durationSecs - 1.4) < 0.01, `${h.rec.durationSecs} s recorded by 1.5 s`);
  h.at(2500);
  h.send(makeFrame("Text", { text: "tick" }));
  const [, r] = channels(decodeWav(h.rec.wav()).pcm);
  assert.equal(r.length, 2 * RATE);
  assert.ok(level(r, 0, 990) < 1);
  assert.ok(Math.abs(toneAmplitude(r.subarray(RATE + 160, 2 * RATE), 1000, RATE) - 6000) < 100);
});

Deno.test("barge-in: the bot leg keeps what was played, cut at the interruption", () => {
  const h = harness({ channels: 2 });
  caller(h, 0, 500, false);
  h.send(botTone(3)); // at 480 ms: would play to 3480 ms
  caller(h, 500, 1500, true);
  h.at(1500);
  h.rec.onInterruption();
  caller(h, 1500, 2000, false);
  h.send(botTone(0.3)); // the next reply, at 1980 ms
  caller(h, 2000, 3000, false);
  h.rec.stop({ kind: "end" });
  const [, r] = channels(decodeWav(h.rec.wav()).pcm);
  assert.equal(r.length, 3 * RATE - 0, "the recording is as long as the call");
  assert.ok(level(r, 500, 1490) > 4000, "bot heard until the interruption");
  assert.ok(level(r, 1510, 1970) < 1, "unplayed bot audio dropped");
  assert.ok(level(r, 1990, 2270) > 4000, "the next reply at its time");
  assert.ok(level(r, 2300, 3000) < 1);
});

Deno.test("cancel keeps only the bot audio already played; end keeps it all", () => {
  for (const kind of ["cancel", "end"] as const) {
    const h = harness({ channels: 2 });
    h.at(0);
    h.send(botTone(2));
    h.at(500);
    h.rec.stop(kind === "cancel" ? { kind, reason: "hangup" } : { kind });
    const [, r] = channels(decodeWav(h.rec.wav()).pcm);
    const expect = kind === "cancel" ? 0.5 : 2;
    assert.ok(Math.abs(r.length / RATE - expect) < 0.01, `${kind}: ${r.length / RATE} s`);
  }
});

Deno.test("recording rate: 8 kHz stereo header; bot at 24 kHz resampled", () => {
  const h = harness({ channels: 2, sampleRate: 8000 });
  h.send(botTone(1));
  h.rec.stop({ kind: "end" });
  const bytes = h.rec.wav();
  assert.equal(checkHeader(bytes, 8000, 2), 8000);
  const [, r] = channels(decodeWav(bytes).pcm);
  assert.ok(Math.abs(toneAmplitude(r.subarray(80), 1000, 8000) - 6000) < 100);
});

Deno.test("in a pipeline: every frame passes unchanged and the call is recorded", async () => {
  const rec = new RecorderProcessor();
  const sink = new Recorder("sink");
  const task = new PipelineTask(new Pipeline([rec, sink]), {
    idleTimeoutMs: null,
    logger: silentLogger,
  });
  const sent: Frame[] = [];
  await drive(task, async () => {
    for (let i = 0; i < 50; i++) {
      const f = inputAudio({
        pcm: new Int16Array(320).fill(1000),
        sampleRate: RATE,
        numChannels: 1,
      });
      sent.push(f);
      await task.queueFrame(f);
    }
    const bot = botTone(0.1);
    sent.push(bot);
    await task.queueFrame(bot);
    await task.stopWhenDone();
  });
  const got = sink.frames.filter((s) => s.dir === "downstream").map((s) => s.frame);
  assert.deepEqual(got.map((f) => f.id).sort(), sent.map((f) => f.id).sort());
  got.forEach((f) => assert.ok(sent.includes(f), "same frame object"));
  const wav = decodeWav(rec.wav());
  assert.equal(wav.numChannels, 1);
  assert.ok(wav.pcm.length >= 50 * 320, `${wav.pcm.length} samples`);
  assert.ok(toneAmplitude(wav.pcm, 1000, RATE) > 100, "the bot reply is in the mix");
});
