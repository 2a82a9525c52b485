import assert from "node:assert/strict";
import { DtmfDetector } from "../core/audio/dtmf_detect.ts";
import { DTMF_KEYS } from "../core/audio/dtmf_keys.ts";
import { dtmfTones } from "../core/audio/dtmf_tone.ts";
import { concatInt16, noise } from "../core/audio/pcm.ts";
import { Resampler } from "../core/audio/resample.ts";
import { decodeWav } from "../core/audio/wav.ts";
import type { AudioFrame, KeypadEntry } from "../core/frames.ts";
import { FlowcatError } from "../core/errors.ts";

function detectAll(pcm: Int16Array, rate: number, chunk = rate / 50): KeypadEntry[] {
  const det = new DtmfDetector({ sampleRate: rate });
  const keys: KeypadEntry[] = [];
  for (let i = 0; i < pcm.length; i += chunk) keys.push(...det.process(pcm.subarray(i, i + chunk)));
  return keys;
}

function silence(ms: number, rate: number): Int16Array {
  return new Int16Array(Math.round((ms * rate) / 1000));
}

function addInto(a: Int16Array, b: Int16Array): Int16Array {
  const out = new Int16Array(a.length);
  for (let i = 0; i < a.length; i++) out[i] = Math.max(-32768, Math.min(32767, a[i] + (b[i] ?? 0)));
  return out;
}

/** Vowel-like signal: a glottal pulse train with gliding pitch through formant resonators. */
function vowel(rate: number, seconds: number, f0: [number, number], formants: number[][]) {
  const n = Math.round(rate * seconds);
  const out = new Float64Array(n);
  let phase = 1;
  for (let i = 0; i < n; i++) {
    const t = i / n;
    const pitch = f0[0] + (f0[1] - f0[0]) * t + 3 * Math.sin(2 * Math.PI * 5 * (i / rate));
    phase += pitch / rate;
    if (phase >= 1) {
      phase -= 1;
      out[i] = 1; // glottal closure instant
    }
  }
  // Klatt resonators: glottal low-pass (F=0), then the formants in cascade.
  for (const [f, bw] of [[0, 100], ...formants]) {
    const c = -Math.exp((-2 * Math.PI * bw) / rate);
    const b = 2 * Math.exp((-Math.PI * bw) / rate) * Math.cos((2 * Math.PI * f) / rate);
    const a = 1 - b - c;
    let y1 = 0;
    let y2 = 0;
    for (let i = 0; i < n; i++) {
      const y = a * out[i] + b * y1 + c * y2;
      y2 = y1;
      y1 = y;
      out[i] = y;
    }
  }
  let pk = 0;
  for (const v of out) pk = Math.max(pk, Math.abs(v));
  // Syllable-like loudness envelope at 4 Hz.
  return Int16Array.from(out, (v, i) => {
    const env = 0.55 - 0.45 * Math.cos((2 * Math.PI * 4 * i) / rate);
    return Math.round((v / pk) * 20000 * env);
  });
}

const VOWELS: Record<string, number[][]> = {
  a: [[700, 130], [1220, 70], [2600, 160]],
  i: [[300, 60], [2300, 100], [3000, 200]],
  u: [[300, 60], [870, 80], [2240, 150]],
  e: [[530, 60], [1840, 90], [2480, 150]],
  o: [[570, 70], [840, 80], [2410, 150]],
  // Formants sitting on DTMF row/column frequencies: the hardest case for talk-off.
  dtmfLike: [[697, 60], [1209, 60], [2600, 160]],
  dtmfLike2: [[852, 60], [1477, 60], [3000, 200]],
};

async function espeak(text: string): Promise<AudioFrame | undefined> {
  try {
    const perm = await Deno.permissions.query({ name: "run", command: "espeak-ng" });
    if (perm.state !== "granted") return undefined;
    const out = await new Deno.Command("espeak-ng", {
      args: ["--stdout", "-s", "160", text],
      stdout: "piped",
      stderr: "null",
    }).output();
    return out.success ? decodeWav(out.stdout) : undefined;
  } catch {
    return undefined;
  }
}

const speech = await espeak(
  "One, two, three. Please hold while I transfer your call to the billing department. " +
    "Press nine for more options. Hello? Is anybody there? Seven eight star pound.",
);

for (const rate of [8000, 16000]) {
  Deno.test(`dtmf detect: all 16 keys at ${rate} Hz, in order, once each`, () => {
    const pcm = dtmfTones(DTMF_KEYS, { sampleRate: rate, toneMs: 70, gapMs: 60 });
    assert.deepEqual(detectAll(pcm, rate), DTMF_KEYS);
  });

  Deno.test(`dtmf detect: result does not depend on frame size (${rate} Hz)`, () => {
    const pcm = dtmfTones("159D*#0", { sampleRate: rate, toneMs: 60, gapMs: 50, leadMs: 7 });
    for (const chunk of [1, 37, rate / 100, rate / 50, 999, pcm.length]) {
      assert.deepEqual(detectAll(pcm, rate, chunk), [..."159D*#0"], `chunk ${chunk}`);
    }
  });

  Deno.test(`dtmf detect: 40 ms tones are detected at every alignment (${rate} Hz)`, () => {
    const block = Math.round(rate * 0.01275);
    for (let off = 0; off < block; off += 3) {
      for (const ms of [32, 40, 45]) {
        const pcm = dtmfTones("8", { sampleRate: rate, toneMs: ms, gapMs: 60, leadMs: 0 });
        const padded = concatInt16([new Int16Array(off), pcm]);
        assert.deepEqual(detectAll(padded, rate), ["8"], `${ms} ms at offset ${off}`);
      }
    }
  });

  Deno.test(`dtmf detect: tones of 24 ms or less are rejected at every alignment (${rate} Hz)`, () => {
    const block = Math.round(rate * 0.01275);
    for (let off = 0; off < block; off += 2) {
      for (const [key, ms] of [["1", 24], ["0", 22.9], ["D", 15], ["#", 8]] as const) {
        const pcm = dtmfTones(key, { sampleRate: rate, toneMs: ms, gapMs: 60 });
        const padded = concatInt16([new Int16Array(off), pcm]);
        assert.deepEqual(detectAll(padded, rate), [], `key ${key} offset ${off}`);
      }
    }
  });
}

Deno.test("dtmf detect: twist limits (normal 8 dB, reverse 4 dB)", () => {
  const cases: [number, boolean][] = [[0, true], [-7, true], [-10, false], [3, true], [6, false]];
  for (const [twistDb, ok] of cases) {
    const pcm = dtmfTones("5", { toneMs: 100, gapMs: 50, amplitude: 8000, twistDb });
    assert.deepEqual(detectAll(pcm, 8000), ok ? ["5"] : [], `twist ${twistDb} dB`);
  }
});

Deno.test("dtmf detect: a long press reports once; a 10 ms dropout does not split it", () => {
  assert.deepEqual(detectAll(dtmfTones("7", { toneMs: 1500, gapMs: 100 }), 8000), ["7"]);
  const tone = dtmfTones("7", { toneMs: 150, gapMs: 0 });
  for (const off of [0, 30, 61, 97]) {
    const pcm = concatInt16([
      new Int16Array(off),
      tone,
      silence(10, 8000),
      tone,
      silence(100, 8000),
    ]);
    assert.deepEqual(detectAll(pcm, 8000), ["7"], `offset ${off}`);
  }
});

Deno.test("dtmf detect: the same key twice with a 40 ms pause is two presses", () => {
  for (const off of [0, 25, 50, 77, 101]) {
    const pcm = concatInt16([new Int16Array(off), dtmfTones("33", { toneMs: 60, gapMs: 40 })]);
    assert.deepEqual(detectAll(pcm, 8000), ["3", "3"], `offset ${off}`);
  }
});

Deno.test("dtmf detect: a different key straight after another is reported", () => {
  const pcm = concatInt16([
    dtmfTones("1", { toneMs: 80, gapMs: 0 }),
    dtmfTones("9", { toneMs: 80, gapMs: 50 }),
  ]);
  assert.deepEqual(detectAll(pcm, 8000), ["1", "9"]);
});

Deno.test("dtmf detect: keys survive moderate noise; quiet tones are ignored", () => {
  const pcm = dtmfTones("2468", { toneMs: 80, gapMs: 80, amplitude: 6000 });
  const noisy = addInto(pcm, noise(pcm.length, 1500, 99)); // about 17 dB SNR
  assert.deepEqual(detectAll(noisy, 8000), [..."2468"]);
  const quiet = dtmfTones("2468", { toneMs: 80, gapMs: 80, amplitude: 300 }); // ~-41 dBFS
  assert.deepEqual(detectAll(quiet, 8000), []);
});

Deno.test("dtmf detect: no false hits on noise", () => {
  for (const [amp, seed] of [[300, 1], [3000, 2], [12000, 3], [30000, 4]]) {
    assert.deepEqual(detectAll(noise(8000 * 3, amp, seed), 8000), [], `noise ${amp}`);
  }
});

Deno.test("dtmf detect: no false hits on vowel-like harmonic signals", () => {
  for (const rate of [8000, 16000]) {
    for (const [name, formants] of Object.entries(VOWELS)) {
      for (const f0 of [[85, 140], [140, 85], [170, 260], [230, 180]] as [number, number][]) {
        const pcm = vowel(rate, 2, f0, formants);
        assert.deepEqual(detectAll(pcm, rate), [], `/${name}/ f0 ${f0} at ${rate}`);
      }
    }
  }
});

Deno.test({
  name: "dtmf detect: no false hits on synthesised speech (espeak-ng; skipped if absent)",
  ignore: speech === undefined,
  fn: () => {
    const s = speech!;
    for (const rate of [8000, 16000]) {
      const pcm = new Resampler(s.sampleRate, rate).process(s.pcm);
      assert.deepEqual(detectAll(pcm, rate), [], `speech at ${rate}`);
      // A key pressed right after the speech still comes through, once.
      const keyed = concatInt16([pcm, dtmfTones("6", { sampleRate: rate, toneMs: 60 })]);
      assert.deepEqual(detectAll(keyed, rate), ["6"]);
    }
  },
});

Deno.test("dtmf detect: reset drops a half-seen press; bad rate throws", () => {
  const det = new DtmfDetector();
  const pcm = dtmfTones("4", { toneMs: 200, gapMs: 0 });
  assert.deepEqual(det.process(pcm.subarray(0, 800)), ["4"]);
  det.reset();
  assert.deepEqual(det.process(pcm.subarray(800, 1600)), ["4"]);
  assert.throws(() => new DtmfDetector({ sampleRate: 4000 }), FlowcatError);
});
