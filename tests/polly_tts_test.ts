/**
 * The Amazon Polly client against a local fake speaking Polly's wire (SigV4 checked by the
 * fake, raw PCM streamed back): the request body, 8 and 16 kHz, audio frames as the body
 * streams (odd byte splits included), SSML, refused signatures, throttling, Polly's 400s, a
 * body cut short, cancellation.
 * What every TTS client shares is checked by tests/tts_conformance_test.ts.
 */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import type { Frame } from "../core/frames.ts";
import { createPollyTts } from "../providers/aws/polly.ts";
import type { ServiceOptions } from "../providers/service_options.ts";
import { AwsHttpFake } from "./fakes/aws_http_fake.ts";

async function collect(it: AsyncIterable<Frame>): Promise<Frame[]> {
  const out: Frame[] = [];
  for await (const f of it) out.push(f);
  return out;
}

async function withFake(fn: (fake: AwsHttpFake, opts: ServiceOptions) => Promise<void>) {
  const fake = new AwsHttpFake().start();
  try {
    await fn(fake, { provider: "aws", baseUrl: fake.url, credentials: fake.env });
  } finally {
    await fake.close();
  }
}

/** `n` samples of a ramp as little-endian bytes. */
function ramp(n: number): Uint8Array {
  const pcm = Int16Array.from({ length: n }, (_, i) => i * 3 - 500);
  return new Uint8Array(pcm.buffer);
}

for (const rate of [8000, 16000]) {
  Deno.test(`polly: ${rate} Hz PCM streams as TtsAudio in order, odd byte splits joined`, async () => {
    await withFake(async (fake, opts) => {
      const bytes = ramp(1000);
      fake.reply({
        pieces: [bytes.subarray(0, 301), bytes.subarray(301, 1001), bytes.subarray(1001)],
        gapMs: 20,
      });
      const tts = createPollyTts({ ...opts, voice: "Matthew", options: { sample_rate: rate } });
      assert.equal(tts.sampleRate(), rate);
      const frames = await collect(tts.runTts("Hello there."));
      assert.deepEqual(
        [frames[0].kind, frames.at(-2)!.kind, frames.at(-1)!.kind],
        ["TtsStarted", "Metrics", "TtsStopped"],
      );
      const audio = frames.filter((f) => f.kind === "TtsAudio");
      // Pieces 20 ms apart arrive as separate reads: audio flows before the body ends.
      assert.ok(audio.length >= 2, `${audio.length} frames`);
      assert.ok(audio.every((f) => f.audio.sampleRate === rate));
      const joined = audio.flatMap((f) => [...f.audio.pcm]);
      assert.deepEqual(joined, [...new Int16Array(bytes.buffer)]);
      const req = fake.requests[0];
      assert.equal(req.refused, undefined);
      assert.equal(req.path, "/v1/speech");
      assert.match(req.headers.get("authorization")!, /\/us-east-1\/polly\/aws4_request/);
      assert.deepEqual(req.body, {
        Engine: "neural",
        OutputFormat: "pcm",
        SampleRate: String(rate),
        Text: "Hello there.",
        TextType: "text",
        VoiceId: "Matthew",
      });
    });
  });
}

Deno.test("polly: SSML is sent as ssml, given a <speak> root when it has none", async () => {
  await withFake(async (fake, opts) => {
    const tts = createPollyTts({ ...opts, options: { text_type: "ssml" } });
    await collect(tts.runTts('Hi <break time="300ms"/> there'));
    await collect(tts.runTts("<speak>Already whole.</speak>"));
    const withLanguage = createPollyTts({ ...opts, language: "en-IN" });
    await collect(withLanguage.runTts("Namaste"));
    assert.equal(fake.requests[2].body.LanguageCode, "en-IN");
    await collect(createPollyTts({ ...opts, language: "en" }).runTts("Hi"));
    assert.equal(fake.requests[3].body.LanguageCode, undefined, "a bare language is not sent");
    assert.equal(fake.requests[0].body.Text, '<speak>Hi <break time="300ms"/> there</speak>');
    assert.equal(fake.requests[0].body.TextType, "ssml");
    assert.equal(fake.requests[1].body.Text, "<speak>Already whole.</speak>");
    assert.ok(fake.requests.every((r) => r.refused === undefined));
  });
});

Deno.test("polly: a wrong key is an auth error; Polly's 400 carries its code's message", async () => {
  await withFake(async (fake, opts) => {
    const wrong = { ...opts, credentials: { ...fake.env, AWS_ACCESS_KEY_ID: "AKIDWRONG" } };
    const err = await collect(createPollyTts(wrong).runTts("hi")).catch((e) => e);
    assert.ok(err instanceof FlowcatError && err.kind === "auth", String(err));
    fake.reply({ status: 400, code: "TextLengthExceededException", message: "Text too long" });
    const tooLong = await collect(createPollyTts(opts).runTts("hi")).catch((e) => e);
    assert.ok(tooLong instanceof FlowcatError);
    assert.match(tooLong.message, /^aws: HTTP 400: .*Text too long/);
  });
});

Deno.test("polly: throttling is retried; a server error after retries fails the utterance", async () => {
  await withFake(async (fake, opts) => {
    fake.reply({
      status: 429,
      code: "ThrottlingException",
      message: "Rate exceeded",
      retryAfter: "0",
    });
    fake.reply({ pieces: [ramp(10)] });
    const ok = await collect(createPollyTts(opts).runTts("hi"));
    assert.equal(ok.filter((f) => f.kind === "TtsAudio").length, 1);
    for (let i = 0; i < 3; i++) {
      fake.reply({ status: 500, code: "ServiceFailureException", message: "down" });
    }
    const err = await collect(createPollyTts(opts).runTts("hi")).catch((e) => e);
    assert.ok(err instanceof FlowcatError);
    assert.match(err.message, /^aws: HTTP 500: .*down.*\(3 attempts\)/);
  });
});

Deno.test("polly: bad options are config errors", () => {
  const base = {
    provider: "aws",
    credentials: { AWS_ACCESS_KEY_ID: "a", AWS_SECRET_ACCESS_KEY: "b" },
  };
  assert.throws(
    () => createPollyTts({ ...base, options: { sample_rate: 22050 } }),
    /8000 or 16000/,
  );
  assert.throws(() => createPollyTts({ ...base, options: { engine: "turbo" } }), /options.engine/);
  assert.throws(() => createPollyTts({ ...base, options: { text_type: "html" } }), /text_type/);
});

Deno.test("polly: a connection dropped mid-body fails the utterance as closed", async () => {
  await withFake(async (fake, opts) => {
    fake.reply({ pieces: [ramp(200)], reset: true });
    const seen: string[] = [];
    const err = await (async () => {
      for await (const f of createPollyTts(opts).runTts("hello")) seen.push(f.kind);
    })().catch((e) => e);
    assert.ok(err instanceof FlowcatError, String(err));
    assert.equal(err.kind, "closed");
    assert.match(err.message, /^aws: audio stream broke/);
    assert.ok(!seen.includes("TtsStopped"));
  });
});
