/**
 * The committed speech fixture (tests/fixtures/speech_hello_8k.wav): espeak-ng saying "hello,
 * I would like to book a table", resampled with sox to 8 kHz mono 16-bit. Made with:
 *   espeak-ng -w hello.wav "hello, I would like to book a table"
 *   sox hello.wav -r 8000 -c 1 -b 16 -e signed-integer tests/fixtures/speech_hello_8k.wav
 * These tests need neither espeak-ng nor sox.
 */
import assert from "node:assert/strict";
import { decodeWav } from "../core/audio/wav.ts";
import { concatInt16, dbfs } from "../core/audio/pcm.ts";
import { EnergyVad } from "../core/audio/vad_energy.ts";
import { SileroVad } from "../core/audio/vad_silero.ts";
import { DtmfDetector } from "../core/audio/dtmf_detect.ts";
import type { VadAnalyzer, VadState } from "../mod.ts";

const PATH = new URL("./fixtures/speech_hello_8k.wav", import.meta.url);
const RATE = 8000;
const FRAME = RATE / 50;

const bytes = await Deno.readFile(PATH);
const wav = decodeWav(bytes);

/** The fixture with 0.5 s of silence before and 1.5 s after. */
const padded = concatInt16([new Int16Array(RATE / 2), wav.pcm, new Int16Array(RATE * 1.5)]);

/** First and last 20 ms frame above -40 dBFS. */
function loudFrames(pcm: Int16Array): [number, number] {
  const loud: number[] = [];
  for (let i = 0; i * FRAME < pcm.length; i++) {
    if (dbfs(pcm.subarray(i * FRAME, (i + 1) * FRAME)) > -40) loud.push(i);
  }
  return [loud[0], loud[loud.length - 1]];
}

async function states(vad: VadAnalyzer, pcm: Int16Array): Promise<VadState[]> {
  const out: VadState[] = [];
  for (let i = 0; i < pcm.length; i += FRAME) {
    out.push(
      await vad.analyze({ pcm: pcm.subarray(i, i + FRAME), sampleRate: RATE, numChannels: 1 }),
    );
  }
  return out;
}

/** Indexes where the state enters `speaking` from a non-speaking run, and where it returns to `quiet`. */
function edges(s: VadState[]): { starts: number[]; stops: number[] } {
  const starts: number[] = [];
  const stops: number[] = [];
  let speaking = false;
  s.forEach((st, i) => {
    if (st === "speaking" && !speaking) {
      speaking = true;
      starts.push(i);
    } else if (st === "quiet" && speaking) {
      speaking = false;
      stops.push(i);
    }
  });
  return { starts, stops };
}

Deno.test("fixture: small 8 kHz mono 16-bit speech", () => {
  assert.ok(bytes.length < 60 * 1024, `${bytes.length} bytes`);
  assert.equal(wav.sampleRate, 8000);
  assert.equal(wav.numChannels, 1);
  const secs = wav.pcm.length / RATE;
  assert.ok(secs > 1.8 && secs < 3, `${secs} s`);
  const level = dbfs(wav.pcm);
  assert.ok(level > -30 && level < -12, `${level} dBFS`);
});

Deno.test("fixture: Silero finds one stretch of speech at the right place", async () => {
  const vad = await SileroVad.create({ sampleRate: RATE });
  try {
    const { starts, stops } = edges(await states(vad, padded));
    const [first, last] = loudFrames(padded);
    assert.equal(starts.length, 1, `starts ${starts}`);
    assert.equal(stops.length, 1, `stops ${stops}`);
    assert.ok(starts[0] >= first + 10 && starts[0] <= first + 25, `start ${starts[0]} vs ${first}`);
    assert.ok(stops[0] >= last + 38 && stops[0] <= last + 50, `stop ${stops[0]} vs ${last}`);
  } finally {
    await vad.close();
  }
});

Deno.test("fixture: energy VAD finds one stretch of speech", async () => {
  const { starts, stops } = edges(await states(new EnergyVad({ sampleRate: RATE }), padded));
  const [first, last] = loudFrames(padded);
  assert.equal(starts.length, 1);
  assert.equal(stops.length, 1);
  assert.ok(starts[0] >= first + 10 && starts[0] <= first + 25, `start ${starts[0]} vs ${first}`);
  assert.ok(stops[0] >= last + 38 && stops[0] <= last + 55, `stop ${stops[0]} vs ${last}`);
});

Deno.test("fixture: the DTMF detector hears no key in speech", () => {
  const det = new DtmfDetector({ sampleRate: RATE });
  const keys: string[] = [];
  for (let i = 0; i < padded.length; i += FRAME) {
    keys.push(...det.process(padded.subarray(i, i + FRAME)));
  }
  assert.deepEqual(keys, []);
});
