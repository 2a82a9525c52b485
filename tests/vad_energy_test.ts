import assert from "node:assert/strict";
import { EnergyVad } from "../core/audio/vad_energy.ts";
import { VadStateMachine, volumeOf } from "../core/audio/vad_state.ts";
import { concatInt16, noise, sine } from "../core/audio/pcm.ts";
import { DEFAULT_VAD_PARAMS, type VadParams, type VadState } from "../core/frames.ts";
import { FlowcatError } from "../core/errors.ts";

const RATE = 16000;

/** A tone at `dbfs` RMS for `ms`, or silence when dbfs is null. */
function seg(ms: number, dbfs: number | null, rate = RATE): Int16Array {
  const samples = Math.round((ms * rate) / 1000);
  if (dbfs === null) return new Int16Array(samples);
  const amp = 32768 * 10 ** (dbfs / 20) * Math.SQRT2;
  return sine({ freq: 300, sampleRate: rate, samples, amplitude: amp });
}

/** Run the VAD over `pcm` in frames; returns the state after each frame. */
function states(vad: EnergyVad, pcm: Int16Array, frameMs = 20, rate = RATE): VadState[] {
  const step = (rate * frameMs) / 1000;
  const out: VadState[] = [];
  for (let i = 0; i < pcm.length; i += step) {
    out.push(vad.analyze({ pcm: pcm.subarray(i, i + step), sampleRate: rate, numChannels: 1 }));
  }
  return out;
}

/** Time (ms) of the first frame in `state`, or -1. */
function firstAt(s: VadState[], state: VadState, frameMs = 20, from = 0): number {
  const i = s.indexOf(state, from);
  return i < 0 ? -1 : (i + 1) * frameMs;
}

Deno.test("vad state machine: start and stop hysteresis in audio time", () => {
  const sm = new VadStateMachine({
    confidence: 0.5,
    startSecs: 0.1,
    stopSecs: 0.3,
    minVolume: 0.5,
  });
  const seq: VadState[] = [];
  for (let i = 0; i < 4; i++) seq.push(sm.update(true, 0.02)); // 80 ms: not yet
  seq.push(sm.update(true, 0.02)); // 100 ms: speaking
  seq.push(sm.update(false, 0.1), sm.update(true, 0.02)); // short pause: back to speaking
  for (let i = 0; i < 15; i++) seq.push(sm.update(false, 0.02)); // 300 ms: quiet
  assert.deepEqual(seq.slice(0, 7), [
    "starting",
    "starting",
    "starting",
    "starting",
    "speaking",
    "stopping",
    "speaking",
  ]);
  assert.equal(seq.at(-2), "stopping");
  assert.equal(seq.at(-1), "quiet");
  assert.equal(sm.update(false, 1), "quiet");
  assert.equal(sm.update(true, 0.01), "starting");
  assert.equal(sm.update(false, 0.01), "quiet", "a blip while starting falls back to quiet");
  assert.throws(() => sm.setParams({ ...DEFAULT_VAD_PARAMS, minVolume: 2 }), FlowcatError);
});

Deno.test("vad state machine: zero startSecs speaks at once", () => {
  const sm = new VadStateMachine({ confidence: 0.5, startSecs: 0, stopSecs: 0, minVolume: 0 });
  assert.equal(sm.update(true, 0.02), "speaking");
  assert.equal(sm.update(false, 0.02), "quiet");
});

Deno.test("vad volume: -60 dBFS is 0, -20 dBFS is 1, linear in dB between", () => {
  assert.equal(volumeOf(new Int16Array(160)), 0);
  assert.ok(Math.abs(volumeOf(seg(100, -40)) - 0.5) < 0.01);
  assert.ok(Math.abs(volumeOf(seg(100, -36)) - 0.6) < 0.01);
  assert.equal(volumeOf(seg(100, -10)), 1);
  assert.equal(volumeOf(seg(100, -70)), 0);
});

Deno.test("energy vad: speech burst goes quiet -> starting -> speaking -> stopping -> quiet", () => {
  const vad = new EnergyVad({ params: DEFAULT_VAD_PARAMS }); // start 0.2 s, stop 0.8 s
  const pcm = concatInt16([seg(500, null), seg(1500, -24), seg(1500, null)]);
  const s = states(vad, pcm);
  assert.ok(s.slice(0, 25).every((x) => x === "quiet"));
  const starting = firstAt(s, "starting");
  const speaking = firstAt(s, "speaking");
  assert.ok(starting > 500 && starting <= 560, `starting at ${starting}`);
  assert.ok(speaking - starting >= 180 && speaking - starting <= 220, `speaking at ${speaking}`);
  const stopping = firstAt(s, "stopping");
  assert.ok(stopping > 2000 && stopping <= 2100, `stopping at ${stopping}`);
  const quiet = firstAt(s, "quiet", 20, stopping / 20);
  assert.ok(quiet - stopping >= 780 && quiet - stopping <= 820, `quiet again at ${quiet}`);
  assert.equal(s.at(-1), "quiet");
});

Deno.test("energy vad: bursts shorter than startSecs never reach speaking", () => {
  const vad = new EnergyVad();
  const pcm = concatInt16([
    seg(300, null),
    seg(100, -20),
    seg(300, null),
    seg(120, -20),
    seg(500, null),
  ]);
  const s = states(vad, pcm);
  assert.ok(s.includes("starting"));
  assert.ok(!s.includes("speaking"));
});

Deno.test("energy vad: pauses shorter than stopSecs do not end speech", () => {
  const vad = new EnergyVad();
  const pcm = concatInt16([seg(600, -24), seg(500, null), seg(600, -24)]);
  const s = states(vad, pcm);
  const firstSpeaking = s.indexOf("speaking");
  assert.ok(firstSpeaking > 0);
  assert.ok(s.slice(firstSpeaking).includes("stopping"));
  assert.ok(!s.slice(firstSpeaking).includes("quiet"));
});

Deno.test("energy vad: quiet background stays quiet; minVolume via setParams", () => {
  const vad = new EnergyVad();
  const hum = noise(RATE * 2, 200, 5); // about -50 dBFS
  assert.ok(states(vad, hum).every((x) => x === "quiet"));
  const p: VadParams = { ...DEFAULT_VAD_PARAMS, minVolume: 0.2 };
  vad.setParams(p);
  assert.equal(states(vad, hum).at(-1), "speaking");
});

Deno.test("energy vad: level hysteresis keeps a fading talker speaking", () => {
  // -36 dBFS is exactly the 0.6 gate; once speaking, -39 dBFS (0.525) still counts.
  const vad = new EnergyVad();
  const s = states(vad, concatInt16([seg(600, -30), seg(2000, -39)]));
  assert.equal(s.at(-1), "speaking");
  const fresh = new EnergyVad();
  assert.ok(states(fresh, seg(2000, -39)).every((x) => x === "quiet"));
});

Deno.test("energy vad: frame size and rate do not change the timing", () => {
  const times: number[] = [];
  for (const [frameMs, rate] of [[10, 16000], [20, 16000], [30, 8000], [20, 8000]]) {
    const vad = new EnergyVad({ sampleRate: rate });
    const pcm = concatInt16([seg(300, null, rate), seg(1200, -24, rate)]);
    times.push(firstAt(states(vad, pcm, frameMs, rate), "speaking", frameMs));
  }
  for (const t of times) assert.ok(Math.abs(t - times[0]) <= 30, `times ${times}`);
  assert.equal(new EnergyVad({ sampleRate: 8000 }).sampleRate(), 8000);
});

Deno.test("energy vad: reset and bad options", () => {
  const vad = new EnergyVad();
  states(vad, seg(600, -20));
  assert.equal(vad.state, "speaking");
  vad.reset();
  assert.equal(vad.state, "quiet");
  assert.equal(vad.volume, 0);
  assert.throws(() => new EnergyVad({ sampleRate: 0 }), FlowcatError);
  assert.throws(
    () => new EnergyVad({ params: { ...DEFAULT_VAD_PARAMS, startSecs: -1 } }),
    FlowcatError,
  );
});
