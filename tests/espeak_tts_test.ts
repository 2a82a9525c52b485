/**
 * Tests of the local eSpeak NG text-to-speech (providers/espeak/tts.ts).
 * What every TTS client shares (blank text, auth, retries, aborts, dropped connections) is
 * checked by tests/tts_conformance_test.ts; this file keeps what is particular to this client.
 */

import assert from "node:assert/strict";
import {
  createEspeakTts,
  ESPEAK_MAX_CHARS,
  ESPEAK_SAMPLE_RATE,
  espeakSynthesize,
  splitForSpeech,
} from "../providers/espeak/tts.ts";
import { FlowcatError } from "../core/errors.ts";
import type { Frame } from "../core/frames.ts";

const START = {
  audioInSampleRate: 16000,
  audioOutSampleRate: 16000,
  enableMetrics: false,
  enableUsageMetrics: false,
  enableTracing: false,
  reportOnlyInitialTtfb: false,
};

function rms(pcm: Int16Array): number {
  let sum = 0;
  for (const s of pcm) sum += s * s;
  return Math.sqrt(sum / Math.max(1, pcm.length));
}

/** RMS of the loudest 20 ms window: speech reaches thousands, silence stays near 0. */
function peakWindowRms(pcm: Int16Array, rate: number): number {
  const win = Math.round(rate * 0.02);
  let best = 0;
  for (let at = 0; at + win <= pcm.length; at += win) {
    best = Math.max(best, rms(pcm.subarray(at, at + win)));
  }
  return best;
}

async function collect(it: AsyncIterable<Frame>, onFrame?: (f: Frame) => void): Promise<Frame[]> {
  const out: Frame[] = [];
  for await (const f of it) {
    out.push(f);
    onFrame?.(f);
  }
  return out;
}

async function rejectsConfig(p: Promise<unknown>, match: RegExp): Promise<void> {
  await assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof FlowcatError, `expected FlowcatError, got ${err}`);
    assert.equal(err.kind, "config");
    assert.match(err.message, match);
    return true;
  });
}

Deno.test("espeakSynthesize: 'hello world' is ~1 s of speech at 22050 Hz", async () => {
  const audio = await espeakSynthesize("hello world");
  assert.equal(audio.sampleRate, ESPEAK_SAMPLE_RATE);
  assert.equal(audio.numChannels, 1);
  const secs = audio.pcm.length / audio.sampleRate;
  assert.ok(secs >= 0.5 && secs <= 3, `duration ${secs} s`);
  assert.ok(peakWindowRms(audio.pcm, audio.sampleRate) > 1000, "has speech energy");
  // Not a constant or clipped signal: many distinct sample values.
  assert.ok(new Set(audio.pcm).size > 500);
});

Deno.test("espeakSynthesize: same input gives the same samples (engine state is reset)", async () => {
  const a = await espeakSynthesize("Testing one two three.");
  await espeakSynthesize("Something else in between, with another voice.", { voice: "en-gb" });
  const b = await espeakSynthesize("Testing one two three.");
  assert.deepEqual(b.pcm, a.pcm);
});

Deno.test("espeakSynthesize: rate and pitch change the output", async () => {
  const text = "The quick brown fox jumps over the lazy dog.";
  const normal = await espeakSynthesize(text, { rate: 175 });
  const fast = await espeakSynthesize(text, { rate: 350 });
  const slow = await espeakSynthesize(text, { rate: 100 });
  assert.ok(fast.pcm.length < normal.pcm.length * 0.75, "faster is shorter");
  assert.ok(slow.pcm.length > normal.pcm.length * 1.3, "slower is longer");
  const high = await espeakSynthesize(text, { rate: 175, pitch: 90 });
  assert.notDeepEqual(high.pcm, normal.pcm);
});

Deno.test("espeakSynthesize: other voices and unicode text", async () => {
  const de = await espeakSynthesize("Guten Tag, wie geht es Ihnen?", { voice: "de" });
  assert.ok(de.pcm.length / de.sampleRate > 0.5);
  const f = await espeakSynthesize("Café naïve, ünïcödé 😀 and a -leading dash.", {
    voice: "en-us+f3",
  });
  assert.ok(peakWindowRms(f.pcm, f.sampleRate) > 1000);
});

Deno.test("espeakSynthesize: empty text gives empty audio", async () => {
  const audio = await espeakSynthesize("  ");
  assert.equal(audio.pcm.length, 0);
});

Deno.test("espeakSynthesize: bad input is a config error", async () => {
  await rejectsConfig(espeakSynthesize("a".repeat(ESPEAK_MAX_CHARS + 1)), /exceeds the limit/);
  await rejectsConfig(espeakSynthesize("hi", { voice: "no such voice" }), /invalid voice/);
  await rejectsConfig(espeakSynthesize("hi", { voice: "xx-nosuch" }), /does not exist/);
  await rejectsConfig(espeakSynthesize("hi", { rate: 1000 }), /rate/);
  await rejectsConfig(espeakSynthesize("hi", { pitch: -1 }), /pitch/);
  // The engine still works after a failed run.
  const ok = await espeakSynthesize("still fine");
  assert.ok(ok.pcm.length > 0);
});

Deno.test("espeakSynthesize: text at the limit is accepted", async () => {
  const text = "This sentence is repeated to fill the limit. ".repeat(50).slice(
    0,
    ESPEAK_MAX_CHARS,
  );
  const audio = await espeakSynthesize(text);
  assert.ok(audio.pcm.length / audio.sampleRate > 60, "minutes of audio for 2000 chars");
});

Deno.test("espeakSynthesize: concurrent calls both succeed", async () => {
  const [a, b] = await Promise.all([
    espeakSynthesize("First concurrent call."),
    espeakSynthesize("Second concurrent call, a little longer than the first."),
  ]);
  const soloA = await espeakSynthesize("First concurrent call.");
  assert.deepEqual(a.pcm, soloA.pcm);
  assert.ok(b.pcm.length > a.pcm.length);
});

Deno.test("EspeakTts: frame order and chunking", async () => {
  const tts = createEspeakTts({ chunkMs: 40 });
  assert.equal(tts.name(), "espeak");
  assert.equal(tts.sampleRate(), 22050);
  await tts.start(START);
  const frames = await collect(tts.runTts("Hello there. How are you today?"));
  assert.equal(frames[0].kind, "TtsStarted");
  assert.equal(frames.at(-1)?.kind, "TtsStopped");
  assert.equal(frames.at(-2)?.kind, "Metrics");
  const audio = frames.slice(1, -2);
  assert.ok(audio.length > 10);
  const ctx = (frames[0] as { contextId?: string }).contextId;
  assert.ok(ctx);
  let total = 0;
  for (const f of audio) {
    assert.equal(f.kind, "TtsAudio");
    if (f.kind !== "TtsAudio") continue;
    assert.equal(f.contextId, ctx);
    assert.equal(f.audio.sampleRate, 22050);
    assert.ok(f.audio.pcm.length <= 882, "at most 40 ms per frame");
    total += f.audio.pcm.length;
  }
  const secs = total / 22050;
  assert.ok(secs > 1 && secs < 6, `duration ${secs}`);
});

Deno.test("EspeakTts: resamples to the configured output rate", async () => {
  const tts = createEspeakTts({ sampleRate: 16000, chunkMs: 20 });
  assert.equal(tts.sampleRate(), 16000);
  const frames = await collect(tts.runTts("hello world"));
  const pcm = frames.flatMap((f) => (f.kind === "TtsAudio" ? [...f.audio.pcm] : []));
  for (const f of frames) if (f.kind === "TtsAudio") assert.equal(f.audio.sampleRate, 16000);
  const native = await espeakSynthesize("hello world");
  const expected = (native.pcm.length * 16000) / 22050;
  assert.ok(Math.abs(pcm.length - expected) < 5, `${pcm.length} vs ${expected}`);
  assert.ok(peakWindowRms(Int16Array.from(pcm), 16000) > 1000);
});

Deno.test("EspeakTts: too long text and bad options are rejected", async () => {
  const tts = createEspeakTts();
  await rejectsConfig(collect(tts.runTts("x".repeat(ESPEAK_MAX_CHARS + 1))), /exceeds/);
  assert.throws(() => createEspeakTts({ rate: 5 }), FlowcatError);
  assert.throws(() => createEspeakTts({ voice: "../etc" }), FlowcatError);
  assert.throws(() => createEspeakTts({ sampleRate: 0 }), FlowcatError);
});

Deno.test("EspeakTts: two concurrent streams both complete", async () => {
  const tts = createEspeakTts();
  const [a, b] = await Promise.all([
    collect(tts.runTts("First stream. It has two sentences.")),
    collect(tts.runTts("Second stream, one sentence.")),
  ]);
  for (const frames of [a, b]) {
    assert.equal(frames[0].kind, "TtsStarted");
    assert.equal(frames.at(-1)?.kind, "TtsStopped");
    assert.ok(frames.length > 10);
  }
});

Deno.test("splitForSpeech: sentences, and long runs cut at spaces", () => {
  assert.deepEqual(splitForSpeech("Hi there. How are you?  Fine!"), [
    "Hi there.",
    "How are you?",
    "Fine!",
  ]);
  const long = "word ".repeat(200).trim();
  const pieces = splitForSpeech(long, 100);
  assert.ok(pieces.every((p) => p.length <= 100 && !p.startsWith(" ")));
  assert.equal(pieces.join(" "), long);
  assert.deepEqual(splitForSpeech(""), []);
});
