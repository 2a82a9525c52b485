/**
 * Whisper-style batch STT: segmenting, WAV upload and both wire dialects against a fake.
 * What every STT client shares (transcripts at 8 and 16 kHz, muting, auth, recovery from a
 * server failure) is checked by tests/stt_conformance_test.ts; this file keeps the rest.
 */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import type { AudioFrame, Frame } from "../core/frames.ts";
import type { ServiceOptions } from "../providers/service_options.ts";
import {
  createWhisperHttpStt,
  WhisperHttpStt,
  whisperLanguage,
} from "../providers/openai/whisper_http.ts";
import { WhisperHttpFake } from "./fakes/whisper_http_fake.ts";

const KEY = "sk-test-secret-0123456789";
const TOLERANCE = 320; // 20 ms at 16 kHz

/** `secs` of a 440 Hz tone at `rate`, cut into 20 ms frames. */
function tone(secs: number, rate = 16000): AudioFrame[] {
  const per = rate / 50;
  const frames: AudioFrame[] = [];
  let n = 0;
  for (let f = 0; f < Math.round(secs * 50); f++) {
    const pcm = new Int16Array(per);
    for (let i = 0; i < per; i++, n++) {
      pcm[i] = Math.round(8000 * Math.sin(2 * Math.PI * 440 * n / rate));
    }
    frames.push({ pcm, sampleRate: rate, numChannels: 1 });
  }
  return frames;
}

async function feed(stt: WhisperHttpStt, frames: AudioFrame[]): Promise<void> {
  for (const f of frames) assert.deepEqual(await stt.runStt(f), []);
}

/** Pre-roll audio, a segment of `speechSecs`, then stop; returns the frames. */
async function utterance(
  stt: WhisperHttpStt,
  speechSecs: number,
  { preSecs = 0.5, rate = 16000 } = {},
): Promise<Frame[]> {
  await feed(stt, tone(preSecs, rate));
  stt.speechStarted();
  await feed(stt, tone(speechSecs, rate));
  return await stt.speechStopped();
}

async function withFake(
  fn: (fake: WhisperHttpFake) => Promise<void>,
  apiKey?: string,
): Promise<void> {
  const fake = new WhisperHttpFake({ apiKey });
  await fake.start();
  try {
    await fn(fake);
  } finally {
    await fake.close();
  }
}

function client(opts: ServiceOptions): WhisperHttpStt {
  const stt = createWhisperHttpStt(opts);
  assert.ok(stt instanceof WhisperHttpStt);
  return stt;
}

function assertTranscription(frames: Frame[], text: string, language?: string): void {
  assert.equal(frames.length, 1);
  const f = frames[0];
  assert.equal(f.kind, "Transcription");
  if (f.kind !== "Transcription") return;
  assert.equal(f.text, text);
  assert.equal(f.userId, "user");
  assert.equal(f.final, true);
  assert.equal(f.language, language);
}

function assertSamples(actual: number | undefined, secs: number): void {
  assert.ok(actual !== undefined, "no decodable WAV");
  const want = Math.round(secs * 16000);
  assert.ok(Math.abs(actual - want) <= TOLERANCE, `WAV has ${actual} samples, want ${want}±320`);
}

Deno.test("openai dialect: segment with pre-roll round trip", async () => {
  await withFake(async (fake) => {
    const stt = client({ provider: "openai", apiKey: KEY, baseUrl: `${fake.url}/v1/` });
    assert.equal(stt.name(), "openai");
    assert.equal(stt.dialect(), "openai");
    const frames = await utterance(stt, 1.0);
    assertTranscription(frames, "hello world");
    assert.equal(fake.requests.length, 1);
    const r = fake.requests[0];
    assert.equal(r.path, "/v1/audio/transcriptions");
    assert.equal(r.authorization, `Bearer ${KEY}`);
    assert.deepEqual([...r.fieldNames].sort(), ["file", "model", "response_format"]);
    assert.equal(r.fields.model, "whisper-1");
    assert.equal(r.fields.response_format, "json");
    assert.equal(r.fileName, "audio.wav");
    assert.equal(r.fileType, "audio/wav");
    assert.equal(r.wav?.sampleRate, 16000);
    assert.equal(r.wav?.numChannels, 1);
    assert.equal(r.wav?.bitsPerSample, 16);
    assertSamples(r.wav?.samples, 1.3); // 0.3 s pre-roll + 1.0 s speech
  }, KEY);
});

Deno.test("whisper.cpp dialect: /inference round trip, no key, trimmed text", async () => {
  await withFake(async (fake) => {
    const stt = client({ provider: "whisper.cpp", baseUrl: fake.url });
    assert.equal(stt.dialect(), "whisper.cpp");
    const frames = await utterance(stt, 0.8);
    assertTranscription(frames, "hello world");
    const r = fake.requests[0];
    assert.equal(r.path, "/inference");
    assert.equal(r.authorization, undefined);
    assert.deepEqual([...r.fieldNames].sort(), ["file", "response_format", "temperature"]);
    assert.equal(r.fields.response_format, "json");
    assert.equal(r.fields.temperature, "0.0");
    assert.equal(r.fileType, "audio/wav");
    assert.equal(r.wav?.sampleRate, 16000);
    assert.equal(r.wav?.numChannels, 1);
    assertSamples(r.wav?.samples, 1.1);
  });
});

Deno.test("options.dialect overrides the provider name", async () => {
  await withFake(async (fake) => {
    const stt = client({
      provider: "my-local-whisper",
      baseUrl: fake.url,
      options: { dialect: "whisper.cpp" },
    });
    await utterance(stt, 0.5);
    assert.equal(fake.requests[0].path, "/inference");
  });
  assert.throws(
    () => createWhisperHttpStt({ provider: "x", options: { dialect: "grpc" } }),
    (e) => e instanceof FlowcatError && e.kind === "config",
  );
});

Deno.test("no key: Authorization omitted; wrapper presets pick the model", async () => {
  await withFake(async (fake) => {
    const local = client({ provider: "speaches", baseUrl: `${fake.url}/v1` });
    await utterance(local, 0.5);
    assert.equal(fake.requests[0].authorization, undefined);
    assert.equal(fake.requests[0].fields.model, "Systran/faster-whisper-small");

    const groq = client({ provider: "groq", apiKey: KEY, baseUrl: `${fake.url}/openai/v1` });
    await utterance(groq, 0.5);
    assert.equal(fake.requests[1].path, "/openai/v1/audio/transcriptions");
    assert.equal(fake.requests[1].authorization, `Bearer ${KEY}`);
    assert.equal(fake.requests[1].fields.model, "whisper-large-v3-turbo");

    const custom = client({ provider: "together", baseUrl: `${fake.url}/v1`, model: "m-1" });
    await utterance(custom, 0.5);
    assert.equal(fake.requests[2].fields.model, "m-1");
  });
});

Deno.test("language is sent as ISO 639-1 in both dialects and tagged on the frame", async () => {
  assert.equal(whisperLanguage("en-US"), "en");
  assert.equal(whisperLanguage("PT_br"), "pt");
  await withFake(async (fake) => {
    const a = client({ provider: "openai", baseUrl: `${fake.url}/v1`, language: "en-US" });
    assertTranscription(await utterance(a, 0.5), "hello world", "en-US");
    assert.equal(fake.requests[0].fields.language, "en");
    const b = client({ provider: "whisper.cpp", baseUrl: fake.url, language: "de" });
    assertTranscription(await utterance(b, 0.5), "hello world", "de");
    assert.equal(fake.requests[1].fields.language, "de");
  });
});

Deno.test("8 kHz input is resampled: the WAV is 16 kHz with the right duration", async () => {
  await withFake(async (fake) => {
    const stt = client({ provider: "whisper.cpp", baseUrl: fake.url });
    // The fake, like whisper.cpp, only reads 16 kHz WAV: a wrong rate would fail here.
    assertTranscription(await utterance(stt, 0.8, { rate: 8000 }), "hello world");
    assert.equal(fake.requests[0].wav?.sampleRate, 16000);
    assertSamples(fake.requests[0].wav?.samples, 1.1);
  });
});

Deno.test("stereo input is downmixed to one channel", async () => {
  await withFake(async (fake) => {
    const stt = client({ provider: "openai", baseUrl: `${fake.url}/v1` });
    stt.speechStarted();
    for (const f of tone(0.5)) {
      const st = new Int16Array(f.pcm.length * 2);
      f.pcm.forEach((s, i) => (st[2 * i] = st[2 * i + 1] = s));
      await stt.runStt({ pcm: st, sampleRate: 16000, numChannels: 2 });
    }
    await stt.speechStopped();
    assert.equal(fake.requests[0].wav?.numChannels, 1);
    assertSamples(fake.requests[0].wav?.samples, 0.5);
  });
});

Deno.test("a segment shorter than 0.1 s is not sent; stop without start is a no-op", async () => {
  await withFake(async (fake) => {
    const stt = client({ provider: "openai", baseUrl: `${fake.url}/v1` });
    assert.deepEqual(await stt.speechStopped(), []);
    stt.speechStarted();
    await feed(stt, tone(0.06));
    assert.deepEqual(await stt.speechStopped(), []);
    assert.equal(fake.requests.length, 0);
    // The next segment starts clean (the short one is not carried over).
    stt.speechStarted();
    await feed(stt, tone(0.2));
    assertTranscription(await stt.speechStopped(), "hello world");
    assertSamples(fake.requests[0].wav?.samples, 0.2);
  });
});

Deno.test("empty or non-speech text gives no frame", async () => {
  await withFake(async (fake) => {
    fake.reply({ body: { text: "   " } }, { body: { text: " [BLANK_AUDIO]\n" } });
    const a = client({ provider: "openai", baseUrl: `${fake.url}/v1` });
    assert.deepEqual(await utterance(a, 0.5), []);
    const b = client({ provider: "whisper.cpp", baseUrl: fake.url });
    assert.deepEqual(await utterance(b, 0.5), []);
    assert.equal(fake.requests.length, 2);
  });
});

Deno.test("whisper.cpp's HTTP 200 error body becomes a protocol error", async () => {
  await withFake(async (fake) => {
    fake.reply({ body: { error: "failed to read WAV file" } });
    const stt = client({ provider: "whisper.cpp", baseUrl: fake.url });
    await assert.rejects(
      utterance(stt, 0.5),
      (e) =>
        e instanceof FlowcatError && e.kind === "protocol" &&
        e.message.includes("whisper.cpp") && e.message.includes("failed to read WAV file"),
    );
  });
});

Deno.test("the segment is capped at options.max_segment_secs", async () => {
  await withFake(async (fake) => {
    const stt = client({
      provider: "openai",
      baseUrl: `${fake.url}/v1`,
      options: { max_segment_secs: 0.5 },
    });
    assertTranscription(await utterance(stt, 2.0), "hello world");
    assert.equal(fake.requests[0].wav?.samples, 8000);
  });
});

Deno.test("stop() aborts an upload in flight", async () => {
  let started = false;
  const hanging: typeof fetch = (_url, init) =>
    new Promise((_resolve, reject) => {
      started = true;
      init?.signal?.addEventListener("abort", () => reject(init.signal!.reason), { once: true });
    });
  const stt = client({ provider: "openai", fetch: hanging });
  stt.speechStarted();
  await feed(stt, tone(0.5));
  const pending = stt.speechStopped();
  assert.ok(started);
  await stt.stop();
  await assert.rejects(pending, (e) => e instanceof DOMException && e.name === "AbortError");
});
