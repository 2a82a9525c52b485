/**
 * Tests of the OpenAI-compatible speech client (providers/openai/tts.ts) against a fake.
 * What every TTS client shares (blank text, auth, retries, aborts, dropped connections) is
 * checked by tests/tts_conformance_test.ts; this file keeps what is particular to this client.
 */

import assert from "node:assert/strict";
import { createOpenAITts, OPENAI_TTS_PRESETS } from "../providers/openai/tts.ts";
import { PcmAssembler } from "../providers/tts/_shared.ts";
import { FlowcatError } from "../core/errors.ts";
import type { Frame } from "../core/frames.ts";
import { int16ToBytes, sine } from "../core/audio/pcm.ts";
import { encodeWav } from "../core/audio/wav.ts";
import { OpenAITtsFake } from "./fakes/openai_tts_fake.ts";
import { until } from "./_core_helpers.ts";

async function collect(it: AsyncIterable<Frame>, onFrame?: (f: Frame) => void): Promise<Frame[]> {
  const out: Frame[] = [];
  for await (const f of it) {
    out.push(f);
    onFrame?.(f);
  }
  return out;
}

function audioOf(frames: Frame[]): Int16Array {
  const parts = frames.flatMap((f) => (f.kind === "TtsAudio" ? [f.audio.pcm] : []));
  const out = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** `bytes` cut at the given sizes (the rest in a last chunk). */
function cut(bytes: Uint8Array, sizes: number[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  let at = 0;
  for (const n of sizes) {
    out.push(bytes.slice(at, at + n));
    at += n;
  }
  if (at < bytes.length) out.push(bytes.slice(at));
  return out;
}

async function withFake(fn: (fake: OpenAITtsFake) => Promise<void>): Promise<void> {
  const fake = new OpenAITtsFake();
  await fake.start();
  try {
    await fn(fake);
  } finally {
    await fake.close();
  }
}

const tone = sine({ freq: 300, sampleRate: 24000, samples: 1200, amplitude: 9000 });

Deno.test("openai tts: request shape and bearer auth", () =>
  withFake(async (fake) => {
    const tts = createOpenAITts({
      provider: "openai",
      apiKey: "sk-test-0123456789",
      baseUrl: fake.baseUrl,
      options: { speed: 1.25, instructions: "Speak warmly." },
    });
    assert.equal(tts.name(), "openai");
    assert.equal(tts.sampleRate(), 24000);
    await collect(tts.runTts("Hello there."));
    assert.equal(fake.requests.length, 1);
    const req = fake.requests[0];
    assert.equal(req.method, "POST");
    assert.equal(req.path, "/v1/audio/speech");
    assert.equal(req.headers.authorization, "Bearer sk-test-0123456789");
    assert.match(req.headers["content-type"], /^application\/json/);
    assert.deepEqual(req.body, {
      model: "gpt-4o-mini-tts",
      input: "Hello there.",
      voice: "alloy",
      response_format: "pcm",
      speed: 1.25,
      instructions: "Speak warmly.",
    });
  }));

Deno.test("openai tts: no key sends no authorization header (local Kokoro-style server)", () =>
  withFake(async (fake) => {
    const tts = createOpenAITts({
      provider: "kokoro",
      baseUrl: fake.baseUrl + "/",
      model: "kokoro",
      voice: "af_bella",
      options: { extra_body: { stream: true } },
    });
    await collect(tts.runTts("Hi"));
    const req = fake.requests[0];
    assert.equal(req.path, "/v1/audio/speech");
    assert.equal(req.headers.authorization, undefined);
    assert.deepEqual(req.body, {
      stream: true,
      model: "kokoro",
      input: "Hi",
      voice: "af_bella",
      response_format: "pcm",
    });
  }));

Deno.test("openai tts: streamed PCM with odd chunk boundaries arrives whole, in order", () =>
  withFake(async (fake) => {
    const bytes = int16ToBytes(tone).slice();
    fake.replies.push({ chunks: cut(bytes, [1, 333, 500, 7, 1]), delayMs: 20 });
    const tts = createOpenAITts({ provider: "openai", apiKey: "k", baseUrl: fake.baseUrl });
    const text = "Streaming works.";
    const frames = await collect(tts.runTts(text));
    const kinds = frames.map((f) => f.kind);
    assert.equal(kinds[0], "TtsStarted");
    assert.equal(kinds.at(-1), "TtsStopped");
    assert.equal(kinds.at(-2), "Metrics");
    assert.ok(kinds.slice(1, -2).every((k) => k === "TtsAudio"));
    const audio = frames.filter((f) => f.kind === "TtsAudio");
    assert.ok(audio.length >= 3, `expected several TtsAudio frames, got ${audio.length}`);
    for (const f of audio) {
      assert.equal(f.audio.sampleRate, 24000);
      assert.equal(f.audio.numChannels, 1);
      assert.ok(f.audio.pcm.length > 0);
    }
    assert.deepEqual(audioOf(frames), tone);
    const ctx = frames[0].kind === "TtsStarted" ? frames[0].contextId : undefined;
    assert.ok(ctx);
    for (const f of frames) {
      if (f.kind === "TtsAudio" || f.kind === "TtsStopped") assert.equal(f.contextId, ctx);
    }
    const metrics = frames.at(-2)!;
    assert.equal(metrics.kind, "Metrics");
    if (metrics.kind === "Metrics") {
      assert.deepEqual(metrics.data, [
        {
          type: "tts_usage",
          processor: "openai",
          model: "gpt-4o-mini-tts",
          characters: text.length,
        },
      ]);
    }
  }));

Deno.test("openai tts: PcmAssembler carries an odd byte across pushes", () => {
  const a = new PcmAssembler();
  assert.deepEqual(a.push(new Uint8Array([0x01])), new Int16Array(0));
  assert.deepEqual(a.push(new Uint8Array([0x02, 0x03])), new Int16Array([0x0201]));
  assert.deepEqual(a.push(new Uint8Array([0xff])), new Int16Array([-253]));
});

Deno.test("openai tts: 500 on every attempt ends in a protocol error after the retries", () =>
  withFake(async (fake) => {
    fake.defaultReply = { status: 500, message: "overloaded", headers: { "retry-after": "0" } };
    const tts = createOpenAITts({ provider: "groq", apiKey: "k", baseUrl: fake.baseUrl });
    const err = await collect(tts.runTts("Hello")).then(() => undefined, (e) => e);
    assert.ok(err instanceof FlowcatError);
    assert.equal(err.kind, "protocol");
    assert.match(err.message, /^groq: HTTP 500.*overloaded/);
    assert.equal(fake.requests.length, 3);
  }));

Deno.test("openai tts: abort mid-stream ends the iterator and drops the connection", () =>
  withFake(async (fake) => {
    const chunk = int16ToBytes(tone).slice();
    fake.replies.push({ chunks: [chunk, chunk, chunk, chunk], delayMs: 5000 });
    const tts = createOpenAITts({ provider: "openai", apiKey: "k", baseUrl: fake.baseUrl });
    const ac = new AbortController();
    const t0 = performance.now();
    let timer: ReturnType<typeof setTimeout> | undefined;
    // Abort while the client sits in the body read waiting for the second chunk.
    const frames = await collect(tts.runTts("A long answer", ac.signal), (f) => {
      if (f.kind === "TtsAudio") timer = setTimeout(() => ac.abort(), 100);
    });
    clearTimeout(timer);
    // The next chunk was 5 s away: ending well before it shows the read was cancelled.
    assert.ok(performance.now() - t0 < 4000, "the iterator waited for the next chunk");
    assert.deepEqual(frames.map((f) => f.kind), ["TtsStarted", "TtsAudio"]);
    await until(() => fake.clientsGone > 0, 2000, "the fake to see the client go away");
    assert.equal(fake.chunksSent, 1);
  }));

Deno.test("openai tts: abort while waiting for the answer ends the iterator", () =>
  withFake(async (fake) => {
    const ac = new AbortController();
    const tts = createOpenAITts({ provider: "openai", baseUrl: fake.baseUrl });
    const it = tts.runTts("Hello", ac.signal)[Symbol.asyncIterator]();
    assert.equal((await it.next()).value?.kind, "TtsStarted");
    const pending = it.next();
    ac.abort();
    assert.equal((await pending).done, true);
    const before = new AbortController();
    before.abort();
    assert.deepEqual(await collect(tts.runTts("Hello", before.signal)), []);
  }));

Deno.test("openai tts: a body streaming past the header deadline is not cut off", () =>
  withFake(async (fake) => {
    const bytes = int16ToBytes(tone).slice();
    fake.replies.push({ chunks: cut(bytes, [401, 600, 801]), delayMs: 250 });
    const tts = createOpenAITts({
      provider: "openai",
      baseUrl: fake.baseUrl,
      timeoutMs: 300,
    });
    const frames = await collect(tts.runTts("Slow but steady"));
    assert.deepEqual(audioOf(frames), tone);
  }));

Deno.test("openai tts: wav format is decoded while streaming and resampled to the output rate", () =>
  withFake(async (fake) => {
    // Groq-style: 48 kHz WAV; a streaming writer's placeholder size; cut inside the header.
    const pcm48 = sine({ freq: 500, sampleRate: 48000, samples: 4800, amplitude: 8000 });
    const wav = encodeWav(pcm48, 48000);
    new DataView(wav.buffer).setUint32(40, 0xffffffff, true);
    fake.replies.push({
      chunks: cut(wav, [7, 30, 1001, 2001]),
      delayMs: 5,
      contentType: "audio/wav",
    });
    const tts = createOpenAITts({
      provider: "groq",
      apiKey: "k",
      baseUrl: fake.baseUrl,
      model: "canopylabs/orpheus-v1-english",
      voice: "autumn",
      options: { sample_rate: 24000 },
    });
    const frames = await collect(tts.runTts("Wave"));
    assert.equal((fake.requests[0].body as Record<string, unknown>).response_format, "wav");
    const out = audioOf(frames);
    assert.ok(Math.abs(out.length - 2400) <= 2, `got ${out.length} samples at 24 kHz`);
    for (const f of frames) if (f.kind === "TtsAudio") assert.equal(f.audio.sampleRate, 24000);
    assert.ok(out.some((s) => Math.abs(s) > 4000), "the tone survives resampling");
  }));

Deno.test("openai tts: wav at the output rate passes through sample-exact", () =>
  withFake(async (fake) => {
    fake.replies.push({ chunks: cut(encodeWav(tone, 24000), [45, 3]) });
    const tts = createOpenAITts({
      provider: "speaches",
      baseUrl: fake.baseUrl,
      options: { response_format: "wav" },
    });
    assert.deepEqual(audioOf(await collect(tts.runTts("x"))), tone);
  }));

Deno.test("openai tts: a wav reply that is not WAV is a protocol error", () =>
  withFake(async (fake) => {
    fake.replies.push({ chunks: [new TextEncoder().encode("ID3 this is an mp3, honest")] });
    const tts = createOpenAITts({
      provider: "speaches",
      baseUrl: fake.baseUrl,
      options: { response_format: "wav" },
    });
    const err = await collect(tts.runTts("x")).then(() => undefined, (e) => e);
    assert.ok(err instanceof FlowcatError);
    assert.equal(err.kind, "protocol");
    assert.match(err.message, /^speaches: bad WAV audio/);
  }));

Deno.test("openai tts: bad options fail at construction with a config error", () => {
  const bad = [
    { response_format: "mp3" },
    { sample_rate: 0 },
    { sample_rate: 22050.5 },
    { speed: "fast" },
    { instructions: 3 },
    { extra_body: [1] },
  ];
  for (const options of bad) {
    assert.throws(
      () => createOpenAITts({ provider: "openai", options }),
      (e: unknown) => e instanceof FlowcatError && e.kind === "config",
      JSON.stringify(options),
    );
  }
  const custom = createOpenAITts({ provider: "kokoro", options: { sample_rate: 16000 } });
  assert.equal(custom.sampleRate(), 16000);
});

Deno.test("openai tts: known provider names bring their base URL, model, voice and format", async () => {
  const seen: { url: string; body: Record<string, unknown> }[] = [];
  const fakeFetch: typeof fetch = (input, init) => {
    seen.push({ url: String(input), body: JSON.parse(String(init?.body)) });
    return Promise.resolve(new Response(new Uint8Array(0)));
  };
  const expect: Record<string, [string, string, string, string, number]> = {
    openai: ["https://api.openai.com/v1/audio/speech", "gpt-4o-mini-tts", "alloy", "pcm", 24000],
    kokoro: ["http://127.0.0.1:8880/v1/audio/speech", "kokoro", "af_bella", "pcm", 24000],
    speaches: [
      "http://127.0.0.1:8000/v1/audio/speech",
      "speaches-ai/Kokoro-82M-v1.0-ONNX",
      "af_heart",
      "pcm",
      24000,
    ],
    groq: [
      "https://api.groq.com/openai/v1/audio/speech",
      "canopylabs/orpheus-v1-english",
      "autumn",
      "wav",
      48000,
    ],
    deepinfra: [
      "https://api.deepinfra.com/v1/openai/audio/speech",
      "hexgrad/Kokoro-82M",
      "af_bella",
      "wav",
      24000,
    ],
  };
  assert.deepEqual(Object.keys(OPENAI_TTS_PRESETS).sort(), Object.keys(expect).sort());
  for (const [provider, [url, model, voice, format, rate]] of Object.entries(expect)) {
    const tts = createOpenAITts({ provider, fetch: fakeFetch });
    assert.equal(tts.sampleRate(), rate, provider);
    // An empty WAV body is an error; only the request matters here.
    await collect(tts.runTts("x")).catch(() => {});
    const req = seen.at(-1)!;
    assert.equal(req.url, url);
    assert.deepEqual(req.body, { model, input: "x", voice, response_format: format });
  }
  const own = createOpenAITts({
    provider: "groq",
    baseUrl: "http://127.0.0.1:1/x",
    model: "m",
    voice: "v",
    fetch: fakeFetch,
    options: { response_format: "pcm", sample_rate: 24000 },
  });
  assert.equal(own.sampleRate(), 24000);
  await collect(own.runTts("y"));
  assert.equal(seen.at(-1)!.url, "http://127.0.0.1:1/x/audio/speech");
  assert.deepEqual(seen.at(-1)!.body, {
    model: "m",
    input: "y",
    voice: "v",
    response_format: "pcm",
  });
});
