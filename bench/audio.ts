/**
 * Audio benchmarks: G.711 and resampler throughput as real-time factor per core,
 * VAD cost per frame (energy, Silero), RNNoise cost, and recorder cost per call-minute.
 *
 * Real-time factor (rtf) = seconds of audio processed per second of one core, so it is also
 * how many streams one core keeps up with. Cheap operations are timed in batches (per-frame
 * figures are batch means, percentiles across batches); Silero and RNNoise per call.
 *
 * Run alone: `deno run --allow-read=. bench/audio.ts` (prints JSON), or call
 * {@link runAudioBench} from bench/main.ts.
 * @module
 */

import { alawDecode, alawEncode, ulawDecode, ulawEncode } from "../core/audio/g711.ts";
import { noise, sine } from "../core/audio/pcm.ts";
import { Resampler } from "../core/audio/resample.ts";
import { EnergyVad } from "../core/audio/vad_energy.ts";
import { SileroVad } from "../core/audio/vad_silero.ts";
import { loadRnnoise, RNNOISE_FRAME, RnnoiseDenoiser } from "../core/audio/rnnoise.ts";
import { inputAudio, type StartParams, ttsAudio } from "../core/frames.ts";
import type { Link, ProcessorSetup } from "../core/processor.ts";
import { RecorderProcessor } from "../core/processors/recorder.ts";
import { percentile } from "./core.ts";

/** p50 / p99 of `xs`, rounded to 4 significant digits. */
function p(xs: readonly number[]): { p50: number; p99: number; runs: number } {
  const r = (x: number) => Number(x.toPrecision(4));
  return { p50: r(percentile(xs, 50)), p99: r(percentile(xs, 99)), runs: xs.length };
}

const round = (x: number, digits = 4) => Number(x.toPrecision(digits));

/**
 * Time `op` over `runs` batches of `perBatch` calls, after one warm-up batch.
 * Returns microseconds per call, one value per batch.
 */
function batches(op: () => void, perBatch: number, runs: number): number[] {
  for (let i = 0; i < perBatch; i++) op();
  const out: number[] = [];
  for (let r = 0; r < runs; r++) {
    const t0 = performance.now();
    for (let i = 0; i < perBatch; i++) op();
    out.push(((performance.now() - t0) * 1000) / perBatch);
  }
  return out;
}

/** Per-frame cost and real-time factor of an op on `frameMs` of audio. */
function throughput(op: () => void, frameMs: number, perBatch: number, runs: number) {
  const us = batches(op, perBatch, runs);
  const p50 = percentile(us, 50);
  return { us_per_frame: p(us), frame_ms: frameMs, rtf: round((frameMs * 1000) / p50) };
}

function benchG711(runs: number) {
  const pcm = sine({ freq: 440, sampleRate: 8000, samples: 160, amplitude: 12000 });
  const bytes = new Uint8Array(160);
  const back = new Int16Array(160);
  const ulaw = ulawEncode(pcm);
  const alaw = alawEncode(pcm);
  return {
    ulaw_encode_160: throughput(() => ulawEncode(pcm, bytes), 20, 20000, runs),
    ulaw_decode_160: throughput(() => ulawDecode(ulaw, back), 20, 20000, runs),
    alaw_encode_160: throughput(() => alawEncode(pcm, bytes), 20, 20000, runs),
    alaw_decode_160: throughput(() => alawDecode(alaw, back), 20, 20000, runs),
  };
}

function benchResampler(runs: number) {
  const cases: [number, number][] = [[8000, 16000], [24000, 8000], [16000, 8000], [8000, 48000]];
  const out: Record<string, unknown> = {};
  for (const [from, to] of cases) {
    const rs = new Resampler(from, to);
    const pcm = noise(from / 50, 8000, 7);
    const dst = new Int16Array(to / 50);
    out[`${from / 1000}k_to_${to / 1000}k`] = {
      ...throughput(() => rs.process(pcm, dst), 20, 2000, runs),
      taps_per_output: rs.tapsPerOutput,
    };
  }
  return out;
}

function benchEnergyVad(runs: number) {
  const out: Record<string, unknown> = {};
  for (const rate of [8000, 16000]) {
    const vad = new EnergyVad({ sampleRate: rate });
    const frame = { pcm: noise(rate / 50, 3000, 3), sampleRate: rate, numChannels: 1 };
    const t = throughput(() => vad.analyze(frame), 20, 20000, runs);
    out[`${rate / 1000}k_20ms`] = { ...t, ms_per_frame: round(t.us_per_frame.p50 / 1000) };
  }
  return out;
}

async function benchSilero(windows: number) {
  let vad: SileroVad;
  const t0 = performance.now();
  try {
    vad = await SileroVad.create({ sampleRate: 16000 });
  } catch (err) {
    return { skipped: String(err) };
  }
  const loadMs = performance.now() - t0;
  // Speech-like input keeps the recurrent state busy; 512 samples = one 32 ms window per call.
  const pcm = noise(512 * 64, 6000, 5);
  const frame = (i: number) => ({
    pcm: pcm.subarray((i % 64) * 512, (i % 64 + 1) * 512),
    sampleRate: 16000,
    numChannels: 1,
  });
  for (let i = 0; i < 50; i++) await vad.analyze(frame(i));
  const ms: number[] = [];
  for (let i = 0; i < windows; i++) {
    const s = performance.now();
    await vad.analyze(frame(i));
    ms.push(performance.now() - s);
  }
  await vad.close();
  // 8 kHz input costs a resample to 16 kHz on top (see the resampler figures).
  return {
    load_ms: round(loadMs),
    ms_per_32ms_window: p(ms),
    ms_per_20ms_frame: round((percentile(ms, 50) * 20) / 32),
    rtf: round(32 / percentile(ms, 50)),
  };
}

async function benchRnnoise(frames: number) {
  let dn: RnnoiseDenoiser;
  const t0 = performance.now();
  try {
    dn = new RnnoiseDenoiser(await loadRnnoise());
  } catch (err) {
    return { skipped: String(err) };
  }
  const loadMs = performance.now() - t0;
  const src = noise(RNNOISE_FRAME * 100, 3000, 9);
  const buf = new Float32Array(RNNOISE_FRAME);
  const one = (i: number) => {
    const k = (i % 100) * RNNOISE_FRAME;
    for (let j = 0; j < RNNOISE_FRAME; j++) buf[j] = src[k + j];
    dn.processFrame(buf);
  };
  for (let i = 0; i < 100; i++) one(i);
  const ms: number[] = [];
  for (let i = 0; i < frames; i++) {
    const s = performance.now();
    one(i);
    ms.push(performance.now() - s);
  }
  // The filter's whole path for one 20 ms telephone frame: 8k -> 48k, denoise, 48k -> 8k.
  const up = new Resampler(8000, 48000);
  const down = new Resampler(48000, 8000);
  const tel = noise(160 * 50, 3000, 4);
  const path: number[] = [];
  for (let i = 0; i < frames / 2 + 50; i++) {
    const s = performance.now();
    down.process(dn.process(up.process(tel.subarray((i % 50) * 160, (i % 50 + 1) * 160))));
    if (i >= 50) path.push(performance.now() - s);
  }
  dn.destroy();
  return {
    load_ms: round(loadMs),
    ms_per_10ms_frame_48k: p(ms),
    rtf: round(10 / percentile(ms, 50)),
    filter_8k_ms_per_20ms_frame: p(path),
  };
}

function benchRecorder(runs: number) {
  // One call-minute: 3,000 caller frames (8 kHz, 20 ms) and 3,000 bot frames (24 kHz, 20 ms),
  // recorded at 16 kHz by the processor, then the WAV.
  const link = { push() {}, pushDown() {} } as unknown as Link;
  const caller = inputAudio({ pcm: noise(160, 3000, 1), sampleRate: 8000, numChannels: 1 });
  const bot = ttsAudio({ pcm: noise(480, 3000, 2), sampleRate: 24000, numChannels: 1 });
  const perFrame: number[] = [];
  const minute: number[] = [];
  const wavMs: number[] = [];
  for (let r = 0; r < runs + 1; r++) {
    let now = 0;
    const rec = new RecorderProcessor({ clock: () => now });
    rec.start({} as ProcessorSetup, {} as StartParams, link);
    const t0 = performance.now();
    for (let i = 0; i < 3000; i++) {
      now = i * 20e6;
      rec.processFrame(caller, "downstream", link);
      rec.processFrame(bot, "downstream", link);
    }
    rec.stop({ kind: "end" });
    const t1 = performance.now();
    rec.wav(2);
    const t2 = performance.now();
    if (r === 0) continue; // warm-up
    perFrame.push(((t1 - t0) * 1000) / 6000);
    minute.push(t1 - t0);
    wavMs.push(t2 - t1);
  }
  return {
    us_per_frame: p(perFrame),
    ms_per_call_minute: p(minute),
    wav_ms_per_call_minute: p(wavMs),
    cpu_share_of_one_core: round(percentile(minute, 50) / 60000),
    memory_bytes_per_call_minute: 2 * 16000 * 2 * 60,
  };
}

/** Run every audio benchmark once; `quick` uses fewer repetitions. */
export async function runAudioBench(quick = false): Promise<Record<string, unknown>> {
  const runs = quick ? 5 : 15;
  return {
    g711: benchG711(runs),
    resampler: benchResampler(runs),
    energy_vad: benchEnergyVad(runs),
    silero_vad: await benchSilero(quick ? 200 : 1000),
    rnnoise: await benchRnnoise(quick ? 500 : 2000),
    recorder: benchRecorder(quick ? 3 : 8),
  };
}

if (import.meta.main) {
  console.log(JSON.stringify(await runAudioBench(Deno.args.includes("--quick")), null, 2));
}
