import assert from "node:assert/strict";
import * as audio from "../core/audio/mod.ts";
import {
  alawDecode,
  alawEncode,
  AudioRecorder,
  decodeWav,
  DtmfDetector,
  dtmfTones,
  EnergyVad,
  Resampler,
  rms,
  sine,
  ulawDecode,
  ulawEncode,
} from "../core/audio/mod.ts";
import type { KeypadEntry, VadState } from "../core/frames.ts";

Deno.test("audio mod: re-exports the toolkit", () => {
  for (
    const name of [
      "ulawEncode",
      "alawDecode",
      "Resampler",
      "resample",
      "encodeWav",
      "decodeWav",
      "AudioRecorder",
      "encodeTelephoneEvent",
      "dtmfEventPackets",
      "Rfc4733Receiver",
      "DtmfDetector",
      "dtmfTones",
      "EnergyVad",
      "VadStateMachine",
      "int16ToBytes",
      "mixSaturate",
    ]
  ) {
    assert.equal(typeof (audio as Record<string, unknown>)[name], "function", name);
  }
});

Deno.test("audio pipeline: carrier mu-law in -> DTMF detection and 16 kHz VAD, no per-frame allocation", () => {
  // The caller presses 4, 2 then talks (a 300 Hz tone stands in for a voice).
  const caller = new Int16Array(8000 * 3);
  caller.set(dtmfTones("42", { toneMs: 80, gapMs: 80, amplitude: 7000 }), 800);
  caller.set(sine({ freq: 300, sampleRate: 8000, samples: 8000, amplitude: 6000 }), 12000);
  const wire = ulawEncode(caller);
  const pcm8 = new Int16Array(160);
  const pcm16 = new Int16Array(320);
  const up = new Resampler(8000, 16000);
  const det = new DtmfDetector({ sampleRate: 8000 });
  const vad = new EnergyVad({ sampleRate: 16000 });
  const keys: KeypadEntry[] = [];
  const states: VadState[] = [];
  for (let i = 0; i < wire.length; i += 160) {
    const a = ulawDecode(wire.subarray(i, i + 160), pcm8);
    const b = up.process(a, pcm16);
    assert.equal(a, pcm8);
    assert.equal(b, pcm16);
    keys.push(...det.process(a));
    states.push(vad.analyze({ pcm: b, sampleRate: 16000, numChannels: 1 }));
  }
  assert.deepEqual(keys, ["4", "2"]);
  assert.ok(
    !states.slice(0, 75).includes("speaking"),
    "80 ms key presses are too short for speech",
  );
  assert.equal(states[110], "speaking");
  assert.equal(states.at(-1), "stopping");
});

Deno.test("audio pipeline: A-law keeps DTMF detectable", () => {
  const pcm = alawDecode(alawEncode(dtmfTones("*0#D", { toneMs: 60, gapMs: 60 })));
  const det = new DtmfDetector();
  assert.deepEqual([...det.process(pcm)], ["*", "0", "#", "D"]);
});

Deno.test("audio pipeline: 24 kHz TTS out -> 8 kHz mu-law keeps the voice band", () => {
  const tts = sine({ freq: 1000, sampleRate: 24000, samples: 24000, amplitude: 10000 });
  const down = new Resampler(24000, 8000);
  const scratch = new Int16Array(160);
  const bytes = new Uint8Array(160);
  const decoded: number[] = [];
  for (let i = 0; i < tts.length; i += 480) {
    const payload = ulawEncode(down.process(tts.subarray(i, i + 480), scratch), bytes);
    assert.equal(payload.length, 160);
    decoded.push(...ulawDecode(payload));
  }
  const steady = Int16Array.from(decoded.slice(400));
  const gainDb = 20 * Math.log10(rms(steady) / (10000 / Math.SQRT2));
  assert.ok(Math.abs(gainDb) < 0.5, `gain ${gainDb}`);
});

Deno.test("audio pipeline: recorder mixes carrier and bot legs into a WAV", () => {
  const rec = new AudioRecorder({ sampleRate: 16000 });
  const caller = sine({ freq: 500, sampleRate: 8000, samples: 8000, amplitude: 5000 });
  const bot = sine({ freq: 2000, sampleRate: 24000, samples: 24000, amplitude: 5000 });
  for (let f = 0; f < 50; f++) {
    const ns = f * 20_000_000;
    rec.addInput(
      { pcm: caller.subarray(f * 160, f * 160 + 160), sampleRate: 8000, numChannels: 1 },
      ns,
    );
    rec.addOutput(
      { pcm: bot.subarray(f * 480, f * 480 + 480), sampleRate: 24000, numChannels: 1 },
      ns,
    );
  }
  const wav = decodeWav(rec.toWav());
  assert.equal(wav.pcm.length, 16000);
  // Two equal uncorrelated tones: RMS is sqrt(2) times one of them.
  const expected = Math.SQRT2 * (5000 / Math.SQRT2);
  assert.ok(Math.abs(rms(wav.pcm.subarray(200)) / expected - 1) < 0.02);
});
