import assert from "node:assert/strict";
import { EchoCanceller } from "../core/audio/aec.ts";

/** Deterministic noise in [-0.5, 0.5). */
function noise(seed: number): () => number {
  let s = seed;
  return () => ((s = (s * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff) - 0.5;
}

const RATE = 8000, N = 160, DELAY = 960; // 120 ms of bulk delay

/**
 * Frames of a call: the agent talks (noise) where `agentTalks(f)`, its echo comes back 10 dB down
 * after DELAY samples, and the caller adds `caller(f, i)`.
 */
function call(frames: number, agentTalks: (f: number) => boolean, caller: (t: number) => number) {
  const rnd = noise(11);
  const far = new Float32Array(frames * N + DELAY);
  for (let t = DELAY; t < far.length; t++) {
    far[t] = agentTalks(Math.floor((t - DELAY) / N)) ? rnd() * 12000 : 0;
  }
  const refs: Int16Array[] = [], mics: Int16Array[] = [];
  for (let f = 0; f < frames; f++) {
    const ref = new Int16Array(N), mic = new Int16Array(N);
    for (let i = 0; i < N; i++) {
      const t = f * N + i;
      ref[i] = far[t + DELAY];
      mic[i] = Math.round(0.3 * far[t] + caller(t));
    }
    refs.push(ref);
    mics.push(mic);
  }
  return { refs, mics };
}

Deno.test("aec idle: with the agent silent the caller passes unchanged, only delayed", () => {
  const tone = (t: number) => 3000 * Math.sin((2 * Math.PI * 440 * t) / RATE);
  // The agent talks for 3 s (the filter converges), then only the caller talks.
  const { refs, mics } = call(400, (f) => f < 150, (t) => (t >= 200 * N ? tone(t) : 0));
  const aec = new EchoCanceller({ sampleRate: RATE });
  const out: Int16Array[] = refs.map((r, f) => aec.process(mics[f], r));
  assert.ok(aec.converged);
  // Well past the echo's span (120 ms + 160 ms tail): the output is the microphone, `latency` late.
  const flat = (frames: Int16Array[]) => Int16Array.from(frames.flatMap((x) => [...x]));
  const o = flat(out), m = flat(mics);
  let worst = 0;
  for (let t = 260 * N; t < o.length; t++) {
    worst = Math.max(worst, Math.abs(o[t] - m[t - aec.latency]));
  }
  assert.equal(worst, 0, "caller altered while the agent was silent");
});

Deno.test("aec idle: the path learnt before a silence still cancels when the agent speaks again", () => {
  // Agent 3 s, silent 3 s (the canceller idles), agent again 2 s: no re-learning needed.
  const talks = (f: number) => f < 150 || f >= 300;
  const { refs, mics } = call(400, talks, () => 0);
  const aec = new EchoCanceller({ sampleRate: RATE });
  let micE = 0, outE = 0;
  for (let f = 0; f < refs.length; f++) {
    const o = aec.process(mics[f], refs[f]);
    // The first 200 ms after the agent resumes: the echo of its new words.
    if (f >= 310 && f < 320) {
      for (let i = 0; i < N; i++) {
        micE += mics[f][i] ** 2;
        outE += o[i] ** 2;
      }
    }
  }
  const erle = 10 * Math.log10(micE / (outE + 1));
  assert.ok(erle > 25, `echo after the silence down only ${erle.toFixed(1)} dB`);
});
