import assert from "node:assert/strict";
import { EnergyVad } from "../core/audio/vad_energy.ts";
import { DEFAULT_START_GAP_SECS, VadStateMachine, volumeOf } from "../core/audio/vad_state.ts";
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

Deno.test("vad state machine: pauses up to startGapSecs are skipped while starting, not counted", () => {
  const params = { confidence: 0.5, startSecs: 0.2, stopSecs: 0.3, minVolume: 0.5 };
  assert.equal(new VadStateMachine(params).startGapSecs, DEFAULT_START_GAP_SECS);
  const feed = (sm: VadStateMachine, pattern: string) =>
    [...pattern].map((c) => sm.update(c === "x", 0.02));
  // 100 ms, a 60 ms dip, 100 ms: speaking on the 10th speech frame (200 ms of speech, not 260).
  const gap60 = feed(new VadStateMachine(params, { startGapSecs: 0.064 }), "xxxxx...xxxxx");
  assert.deepEqual(gap60.slice(0, 12), Array(12).fill("starting"));
  assert.equal(gap60.at(-1), "speaking");
  // An 80 ms pause is longer than the tolerance: back to quiet, the count starts again.
  const gap80 = feed(new VadStateMachine(params, { startGapSecs: 0.064 }), "xxxxx....xxxxx");
  assert.equal(gap80[8], "quiet");
  assert.equal(gap80.at(-1), "starting");
  // 0: any pause restarts the count (contiguous speech, as pipecat counts it).
  const strict = feed(new VadStateMachine(params, { startGapSecs: 0 }), "xxxxx.xxxxx");
  assert.equal(strict[5], "quiet");
  assert.equal(strict.at(-1), "starting");
  // The tolerance never keeps a start alive on silence alone, and reset forgets a pending gap.
  const sm = new VadStateMachine(params, { startGapSecs: 0.064 });
  assert.deepEqual(feed(sm, "x...."), ["starting", "starting", "starting", "starting", "quiet"]);
  feed(sm, "xxx..");
  sm.reset();
  assert.equal(sm.state, "quiet");
  assert.deepEqual(feed(sm, "x..."), ["starting", "starting", "starting", "starting"]);
  assert.throws(() => new VadStateMachine(params, { startGapSecs: -0.1 }), FlowcatError);
  assert.throws(() => new VadStateMachine(params, { startGapSecs: NaN }), FlowcatError);
});

Deno.test("vad state machine: windows are reached at the nearest whole frame", () => {
  const params = { confidence: 0.5, startSecs: 0.2, stopSecs: 0.2, minVolume: 0.5 };
  // Silero's 32 ms windows: 0.2 s is six windows (192 ms), not seven (224 ms).
  const sm = new VadStateMachine(params);
  const starts = Array.from({ length: 6 }, () => sm.update(true, 0.032));
  assert.deepEqual(starts.slice(4), ["starting", "speaking"]);
  const stops = Array.from({ length: 6 }, () => sm.update(false, 0.032));
  assert.deepEqual(stops.slice(4), ["stopping", "quiet"]);
  // 20 ms frames land on 200 ms exactly: ten frames, not nine.
  const frames = new VadStateMachine(params);
  const f = Array.from({ length: 10 }, () => frames.update(true, 0.02));
  assert.equal(f[8], "starting");
  assert.equal(f[9], "speaking");
  // A tie goes to the later frame: 250 ms in 20 ms frames is thirteen (260 ms), not twelve.
  const tie = new VadStateMachine({ ...params, startSecs: 0.25 });
  const t = Array.from({ length: 13 }, () => tie.update(true, 0.02));
  assert.deepEqual(t.slice(11), ["starting", "speaking"]);
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

Deno.test("energy vad: startGapSecs skips a dropped stretch inside the start window", () => {
  // 140 ms of a talker, 32 ms dropped (an echo suppressor holding two blocks down), 140 ms more.
  const chopped = concatInt16([seg(300, null), seg(140, -26), seg(32, null), seg(140, -26)]);
  const tail = seg(600, null);
  const heard = (opts: { startGapSecs?: number }) =>
    states(new EnergyVad(opts), concatInt16([chopped, tail])).includes("speaking");
  assert.equal(heard({}), false, "by default the start window counts contiguous speech");
  assert.equal(heard({ startGapSecs: 0.064 }), true);
  // Bursts with pauses longer than the tolerance never add up to a start.
  const bursts = concatInt16([seg(300, null), seg(100, -20), seg(120, null), seg(100, -20)]);
  assert.equal(states(new EnergyVad({ startGapSecs: 0.064 }), bursts).includes("speaking"), false);
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
