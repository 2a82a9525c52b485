import assert from "node:assert/strict";
import {
  type Direction,
  type Frame,
  FrameProcessor,
  inputAudio,
  type Link,
  makeFrame,
  Pipeline,
  PipelineTask,
} from "../mod.ts";
import {
  loadRnnoise,
  RNNOISE_FRAME,
  RnnoiseDenoiser,
  type RnnoiseModuleLike,
} from "../core/audio/rnnoise.ts";
import { NoiseFilter } from "../core/processors/noise_filter.ts";
import { concatInt16, dbfs, noise, rms, sine } from "../core/audio/pcm.ts";
import { decodeWav } from "../core/audio/wav.ts";
import { silentLogger } from "../core/log.ts";
import { drive } from "./_core_helpers.ts";

const module = await loadRnnoise();

/** Run `pcm` through a fresh denoiser in `chunk`-sample pieces. */
function denoise(pcm: Int16Array, chunk: number): Int16Array {
  const dn = new RnnoiseDenoiser(module);
  const parts: Int16Array[] = [];
  for (let i = 0; i < pcm.length; i += chunk) parts.push(dn.process(pcm.subarray(i, i + chunk)));
  dn.destroy();
  return concatInt16(parts);
}

/** Correlation of `out` delayed by the best lag (0..maxLag) with `ref`. */
function bestCorrelation(out: Int16Array, ref: Int16Array, maxLag: number): number {
  let best = -1;
  for (let lag = 0; lag <= maxLag; lag++) {
    let num = 0;
    let a = 0;
    let b = 0;
    for (let i = 0; i + lag < out.length && i < ref.length; i++) {
      num += out[i + lag] * ref[i];
      a += out[i + lag] * out[i + lag];
      b += ref[i] * ref[i];
    }
    best = Math.max(best, num / Math.sqrt(a * b));
  }
  return best;
}

const addNoise = (pcm: Int16Array, amplitude: number) => {
  const n = noise(pcm.length, amplitude, 11);
  return pcm.map((v, i) => Math.max(-32768, Math.min(32767, v + n[i])));
};

Deno.test("rnnoise at 48 kHz: white noise loses 20 dB or more, a tone keeps its level", () => {
  const white = noise(48000 * 2, 3000, 5);
  const quiet = denoise(white, 960).subarray(24000);
  const drop = dbfs(white) - dbfs(quiet);
  assert.ok(drop >= 20, `noise down ${drop.toFixed(1)} dB`);
  const tone = sine({ freq: 440, sampleRate: 48000, samples: 48000 * 2, amplitude: 8000 });
  const kept = denoise(tone, 960).subarray(24000);
  const change = dbfs(kept) - dbfs(tone);
  assert.ok(Math.abs(change) < 1, `tone changed ${change.toFixed(2)} dB`);
});

Deno.test("rnnoise streaming: ragged chunks give the same samples as 10 ms frames", () => {
  const x = addNoise(sine({ freq: 300, sampleRate: 48000, samples: 48000, amplitude: 5000 }), 800);
  const whole = denoise(x, RNNOISE_FRAME);
  const ragged = denoise(x, 333);
  assert.equal(whole.length, 48000);
  assert.equal(ragged.length, 48000 - (48000 % RNNOISE_FRAME));
  assert.deepEqual(ragged, whole.subarray(0, ragged.length));
  const dn = new RnnoiseDenoiser(module);
  assert.equal(dn.process(new Int16Array(100)).length, 0);
  assert.equal(dn.buffered, 100);
  assert.equal(dn.process(new Int16Array(400)).length, 480);
  assert.equal(dn.buffered, 20);
  dn.destroy();
  assert.throws(() => dn.processFrame(new Float32Array(RNNOISE_FRAME)), /destroyed/);
});

/** Pipeline end that keeps what reaches it going downstream. */
class Sink extends FrameProcessor {
  readonly frames: Frame[] = [];
  override processFrame(frame: Frame, dir: Direction, link: Link) {
    if (dir === "downstream") this.frames.push(frame);
    link.push(frame, dir);
  }
}

async function filter(nf: NoiseFilter, input: Frame[]): Promise<{ out: Frame[]; up: string[] }> {
  const sink = new Sink();
  const task = new PipelineTask(new Pipeline([nf, sink]), {
    idleTimeoutMs: null,
    logger: silentLogger,
  });
  const up: string[] = [];
  task.onFrameReachedUpstream(["Error"], (f) => void up.push(f.kind));
  await drive(task, async () => {
    for (const f of input) await task.queueFrame(f);
    await task.stopWhenDone();
  });
  return { out: sink.frames, up };
}

const frames8k = (pcm: Int16Array) => {
  const out: Frame[] = [];
  for (let i = 0; i + 160 <= pcm.length; i += 160) {
    out.push(inputAudio({ pcm: pcm.subarray(i, i + 160), sampleRate: 8000, numChannels: 1 }));
  }
  return out;
};

const pcmOf = (fs: Frame[]) =>
  concatInt16(fs.flatMap((f) => f.kind === "InputAudio" ? [f.audio.pcm] : []));

const fixture = decodeWav(
  await Deno.readFile(new URL("./fixtures/speech_hello_8k.wav", import.meta.url)),
);

Deno.test("noise filter at 8 kHz: noisy speech keeps the speech, pauses lose the noise", async () => {
  const speech = concatInt16([new Int16Array(8000), fixture.pcm, new Int16Array(8000)]);
  const noisy = addNoise(speech, 1500);
  const input = frames8k(noisy);
  const { out } = await filter(new NoiseFilter(), input);
  // One 20 ms frame out per frame in, same rate and length, new frames.
  assert.equal(out.length, input.length);
  out.forEach((f, i) => {
    assert.equal(f.kind, "InputAudio");
    assert.notEqual(f.id, input[i].id);
    if (f.kind === "InputAudio") {
      assert.equal(f.audio.sampleRate, 8000);
      assert.equal(f.audio.pcm.length, 160);
    }
  });
  const clean = pcmOf(out);
  // The leading second is noise only: from 0.3 s (the model settles) it drops by >= 15 dB.
  const before = dbfs(noisy.subarray(2400, 8000));
  const after = dbfs(clean.subarray(2400 + 130, 8000));
  assert.ok(before - after >= 15, `noise ${before.toFixed(1)} -> ${after.toFixed(1)} dBFS`);
  // Speech survives: level within 3 dB, and the shape still follows the clean speech
  // (26 ms later: RNNoise's 20 ms plus the two resamplers).
  const level = dbfs(clean) - dbfs(speech);
  assert.ok(Math.abs(level) < 3, `speech level changed ${level.toFixed(1)} dB`);
  const corr = bestCorrelation(clean, speech, 400);
  assert.ok(corr > 0.9, `correlation with the clean speech ${corr.toFixed(3)}`);
});

Deno.test("noise filter at 8 kHz: in loud noise the speech comes out closer to the clean one", async () => {
  const speech = concatInt16([new Int16Array(8000), fixture.pcm, new Int16Array(8000)]);
  const noisy = addNoise(speech, 4000);
  const { out } = await filter(new NoiseFilter(), frames8k(noisy));
  const before = bestCorrelation(noisy, speech, 0);
  const after = bestCorrelation(pcmOf(out), speech, 400);
  assert.ok(after > before + 0.1, `correlation ${before.toFixed(3)} -> ${after.toFixed(3)}`);
});

Deno.test("noise filter: UpdateSettings turns it off (frames pass as they are) and on", async () => {
  const nf = new NoiseFilter();
  const white = frames8k(noise(8000, 3000, 3));
  const off = makeFrame("UpdateSettings", { target: "filter", settings: { enabled: false } });
  const on = makeFrame("UpdateSettings", { target: "filter", settings: { enabled: true } });
  const input = [...white.slice(0, 20), off, ...white.slice(20, 30), on, ...white.slice(30)];
  const { out } = await filter(nf, input);
  const audio = out.filter((f) => f.kind === "InputAudio");
  assert.equal(audio.length, 50);
  for (let i = 20; i < 30; i++) assert.equal(audio[i], white[i], `frame ${i} untouched`);
  for (const i of [10, 45]) assert.notEqual(audio[i], white[i], `frame ${i} filtered`);
  assert.ok(out.some((f) => f.kind === "UpdateSettings"), "settings forwarded");
  assert.ok(rms(pcmOf(audio.slice(40))) < rms(pcmOf(white.slice(40))) / 5, "filtering again");
});

Deno.test("noise filter: starts disabled when asked; stereo and 48 kHz frames", async () => {
  const white = frames8k(noise(1600, 3000, 3));
  const r = await filter(new NoiseFilter({ enabled: false }), white);
  assert.deepEqual(r.out, white);
  const stereo = inputAudio({ pcm: new Int16Array(640), sampleRate: 16000, numChannels: 2 });
  const hi = inputAudio({ pcm: noise(960, 3000, 1), sampleRate: 48000, numChannels: 1 });
  const s = await filter(new NoiseFilter(), [stereo, hi]);
  assert.equal(s.out[0], stereo, "stereo passes through");
  assert.equal(s.out[1].kind === "InputAudio" && s.out[1].audio.pcm.length, 960);
  assert.notEqual(s.out[1], hi);
});

Deno.test("noise filter: a module that cannot start reports one Error and passes audio", async () => {
  const broken = { ...module, _rnnoise_create: () => 0 } as RnnoiseModuleLike;
  const white = frames8k(noise(1600, 3000, 3));
  const nf = new NoiseFilter({ module: broken });
  const r = await filter(nf, white);
  assert.deepEqual(r.up, ["Error"]);
  assert.deepEqual(r.out, white);
  assert.equal(nf.enabled, false);
});
