import assert from "node:assert/strict";
import {
  loadSileroModel,
  type OrtLike,
  type OrtTensorLike,
  SileroVad,
} from "../core/audio/vad_silero.ts";
import { SILERO_START_GAP_SECS } from "../core/audio/vad_state.ts";
import { concatInt16, noise, sine } from "../core/audio/pcm.ts";
import { Resampler } from "../core/audio/resample.ts";
import { decodeWav } from "../core/audio/wav.ts";
import { type AudioFrame, DEFAULT_VAD_PARAMS, type VadState } from "../core/frames.ts";
import { FlowcatError } from "../core/errors.ts";

// One model load for the file (about 0.7 s); each test resets the analyzer.
const model = await loadSileroModel();
const vad = await SileroVad.create({ modelBytes: model });

async function run(
  pcm: Int16Array,
  rate: number,
): Promise<{ states: VadState[]; probs: number[] }> {
  vad.reset();
  const states: VadState[] = [];
  const probs: number[] = [];
  const step = rate / 50;
  for (let i = 0; i < pcm.length; i += step) {
    states.push(
      await vad.analyze({ pcm: pcm.subarray(i, i + step), sampleRate: rate, numChannels: 1 }),
    );
    probs.push(vad.probability);
  }
  return { states, probs };
}

/** Voiced syllables: pulse train with falling pitch through gliding formant resonators. */
function syllables(rate: number, f0: number): Int16Array {
  const targets = [[730, 1090, 2440], [270, 2290, 3010], [570, 840, 2410], [530, 1840, 2480]];
  const out: number[] = [];
  const st = [[0, 0], [0, 0], [0, 0], [0, 0]];
  let phase = 0;
  for (let s = 0; s < 8; s++) {
    const a = targets[s % 4];
    const b = targets[(s + 1) % 4];
    const n = Math.round(rate * 0.22);
    for (let i = 0; i < n; i++) {
      const t = i / n;
      phase += (f0 * (1.15 - 0.3 * t)) / rate;
      let y = phase >= 1 ? 1 : 0;
      if (phase >= 1) phase -= 1;
      const freqs = [0, ...a.map((f, k) => f + (b[k] - f) * t)];
      const bws = [100, 80, 100, 150];
      for (let k = 0; k < 4; k++) {
        const c = -Math.exp((-2 * Math.PI * bws[k]) / rate);
        const bb = 2 * Math.exp((-Math.PI * bws[k]) / rate) *
          Math.cos((2 * Math.PI * freqs[k]) / rate);
        const o = (1 - bb - c) * y + bb * st[k][0] + c * st[k][1];
        st[k][1] = st[k][0];
        st[k][0] = o;
        y = o;
      }
      out.push(y * Math.sqrt(Math.sin(Math.PI * t)));
    }
    for (let i = 0; i < rate * 0.1; i++) out.push(0);
  }
  const pk = out.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
  return Int16Array.from(out, (v) => Math.round((v / pk) * 16000));
}

async function espeak(text: string): Promise<AudioFrame | undefined> {
  try {
    const perm = await Deno.permissions.query({ name: "run", command: "espeak-ng" });
    if (perm.state !== "granted") return undefined;
    const out = await new Deno.Command("espeak-ng", {
      args: ["--stdout", text],
      stdout: "piped",
      stderr: "null",
    })
      .output();
    return out.success ? decodeWav(out.stdout) : undefined;
  } catch {
    return undefined;
  }
}

const speech = await espeak(
  "Hello, this is a test of the voice activity detector. Can you hear me?",
);

Deno.test("silero vad: silence, noise and a steady tone stay quiet", async () => {
  for (
    const [name, pcm] of [
      ["silence", new Int16Array(16000 * 2)],
      ["noise", noise(16000 * 2, 2000, 3)],
      ["tone", sine({ freq: 440, sampleRate: 16000, samples: 32000, amplitude: 10000 })],
    ] as const
  ) {
    const { states, probs } = await run(pcm, 16000);
    assert.ok(states.every((s) => s === "quiet"), name);
    assert.ok(Math.max(...probs) < 0.3, `${name}: max probability ${Math.max(...probs)}`);
  }
});

Deno.test("silero vad: windows, context and state match a hand-rolled model loop", async () => {
  // Reference: feed the model directly, [64 context | 512 new] samples, state carried.
  const ort = await import("onnxruntime-web");
  const session = await ort.InferenceSession.create(model, { executionProviders: ["wasm"] });
  const signal = concatInt16([syllables(16000, 200), noise(8000, 3000, 4)]);
  const usable = signal.length - (signal.length % 512);
  let state = new ort.Tensor("float32", new Float32Array(256), [2, 1, 128]);
  const sr = new ort.Tensor("int64", BigInt64Array.from([16000n]), []);
  const ctx = new Float32Array(64);
  const expected: number[] = [];
  for (let w = 0; w < usable; w += 512) {
    const input = new Float32Array(576);
    input.set(ctx);
    for (let i = 0; i < 512; i++) input[64 + i] = signal[w + i] / 32768;
    ctx.set(input.subarray(512));
    const out = await session.run({ input: new ort.Tensor("float32", input, [1, 576]), state, sr });
    expected.push((out.output.data as Float32Array)[0]);
    state = out.stateN as typeof state;
  }
  await session.release();
  vad.reset();
  const got: number[] = [];
  for (let w = 0; w < usable; w += 512) {
    await vad.analyze({ pcm: signal.subarray(w, w + 512), sampleRate: 16000, numChannels: 1 });
    got.push(vad.probability);
  }
  assert.deepEqual(got, expected);
  assert.ok(new Set(expected.map((p) => p.toFixed(3))).size > 5, "probabilities vary");
});

Deno.test("silero vad: 8 kHz input is resampled to 16 kHz with the project resampler", async () => {
  const at8k = concatInt16([syllables(8000, 150), noise(4000, 2000, 6)]);
  const at16k = new Resampler(8000, 16000).process(at8k);
  const direct = (await run(at16k, 16000)).probs;
  const via8k = (await run(at8k, 8000)).probs;
  // Both runs see the same 16 kHz samples; frames of 20 ms end on the same windows.
  assert.deepEqual(via8k, direct);
});

Deno.test("silero vad: state and context are carried per 512-sample window", async () => {
  // 320-sample frames: the first window completes in the second frame.
  vad.reset();
  const frame = { pcm: noise(320, 4000, 2), sampleRate: 16000, numChannels: 1 };
  await vad.analyze(frame);
  assert.equal(vad.probability, 0, "no window yet");
  await vad.analyze(frame);
  const p1 = vad.probability;
  assert.ok(p1 > 0 && p1 < 1);
  // Same input after a reset gives the same probability: the state was reset too.
  vad.reset();
  await vad.analyze(frame);
  await vad.analyze(frame);
  assert.equal(vad.probability, p1);
});

Deno.test("silero vad: calls without awaiting are serialised", async () => {
  vad.reset();
  const pcm = syllables(16000, 180);
  const pending: Promise<VadState>[] = [];
  for (let i = 0; i < pcm.length; i += 320) {
    pending.push(vad.analyze({ pcm: pcm.subarray(i, i + 320), sampleRate: 16000, numChannels: 1 }));
  }
  await Promise.all(pending);
  const concurrent = vad.probability;
  const sequential = (await run(pcm, 16000)).probs.at(-1);
  assert.equal(concurrent, sequential);
});

Deno.test({
  name:
    "silero vad: speech at 16 kHz and 8 kHz goes speaking then quiet (espeak-ng; skipped if absent)",
  ignore: speech === undefined,
  fn: async () => {
    const s = speech!;
    const s16 = new Resampler(s.sampleRate, 16000).process(s.pcm);
    const pcm16 = concatInt16([new Int16Array(8000), s16, new Int16Array(16000 * 1.2)]);
    for (
      const [pcm, rate] of [[pcm16, 16000], [
        new Resampler(16000, 8000).process(pcm16),
        8000,
      ]] as const
    ) {
      const { states, probs } = await run(pcm, rate);
      assert.ok(Math.max(...probs) > 0.9, `${rate}: max ${Math.max(...probs)}`);
      const speaking = states.indexOf("speaking");
      assert.ok(speaking > 25 && speaking < 60, `${rate}: speaking at frame ${speaking}`);
      assert.equal(states.at(-1), "quiet", `${rate}: quiet after the speech`);
      assert.ok(states.includes("stopping"));
    }
  },
});

/** An onnxruntime stand-in whose model answers the scripted probabilities, one per window. */
function scriptedOrt(probs: number[]): OrtLike {
  class Tensor implements OrtTensorLike {
    constructor(readonly type: string, readonly data: unknown, readonly dims?: readonly number[]) {}
  }
  let i = 0;
  return {
    env: {},
    InferenceSession: {
      create: () =>
        Promise.resolve({
          run: () =>
            Promise.resolve({
              output: new Tensor("float32", Float32Array.of(probs[i++] ?? 0)),
              stateN: new Tensor("float32", new Float32Array(256)),
            }),
          release: () => Promise.resolve(),
        }),
    },
    Tensor,
  };
}

Deno.test("silero vad: a dip of up to two windows inside the start window is skipped", async () => {
  assert.equal(SILERO_START_GAP_SECS, 0.064);
  const loud = noise(512 * 12, 8000, 7); // every window passes the volume gate
  const statesFor = async (probs: number[], startGapSecs?: number) => {
    const v = await SileroVad.create({
      modelBytes: new Uint8Array(1),
      ort: scriptedOrt(probs),
      ...(startGapSecs !== undefined ? { startGapSecs } : {}),
    });
    const out: VadState[] = [];
    for (let w = 0; w < loud.length; w += 512) {
      out.push(
        await v.analyze({ pcm: loud.subarray(w, w + 512), sampleRate: 16000, numChannels: 1 }),
      );
    }
    await v.close();
    return out;
  };
  // Six speech windows (0.2 s to the nearest window) around a two-window dip: speaking.
  const dip2 = [0.9, 0.9, 0.4, 0.5, 0.9, 0.9, 0.9, 0.9];
  assert.equal((await statesFor(dip2))[7], "speaking");
  assert.equal((await statesFor(dip2))[6], "starting");
  // The same with contiguous counting, or a three-window dip: back to quiet, counted afresh.
  assert.equal((await statesFor(dip2, 0))[2], "quiet");
  assert.equal((await statesFor(dip2, 0))[7], "starting");
  const dip3 = [0.9, 0.9, 0.4, 0.5, 0.3, 0.9, 0.9, 0.9, 0.9];
  const s3 = await statesFor(dip3);
  assert.equal(s3[4], "quiet");
  assert.equal(s3[8], "starting");
});

Deno.test("silero vad: params, model lookup errors and close", async () => {
  assert.equal(vad.sampleRate(), 16000);
  vad.setParams({ ...DEFAULT_VAD_PARAMS, confidence: 0.5 });
  await assert.rejects(
    () => vad.analyze({ pcm: new Int16Array(4), sampleRate: 16000, numChannels: 2 }),
    FlowcatError,
  );
  await assert.rejects(() => loadSileroModel("./.tmp/does-not-exist.onnx"), FlowcatError);
  await assert.rejects(
    () => SileroVad.create({ modelBytes: new Uint8Array([1, 2, 3]) }),
    FlowcatError,
  );
  const other = await SileroVad.create({ modelBytes: model, sampleRate: 8000 });
  assert.equal(other.sampleRate(), 8000);
  await other.close();
  await assert.rejects(
    () => other.analyze({ pcm: new Int16Array(512), sampleRate: 16000, numChannels: 1 }),
    FlowcatError,
  );
});

Deno.test({
  name: "silero vad: release the shared session",
  sanitizeResources: false,
  fn: async () => {
    await vad.close();
  },
});
