/** Cloud Text-to-Speech client against local fakes of text:synthesize and the token endpoint. */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import { asSsml, createGoogleTts } from "../providers/google/tts.ts";
import type { ServiceOptions } from "../providers/service_options.ts";
import { googleError } from "./fakes/gemini_generate_fake.ts";
import type { GoogleOAuthFake } from "./fakes/google_oauth_fake.ts";
import { GoogleTtsFake } from "./fakes/google_tts_fake.ts";
import { GoogleTtsStreamFake } from "./fakes/google_tts_stream_fake.ts";
import { collect, rejects, withOAuth } from "./_google_helpers.ts";
import { until } from "./_core_helpers.ts";

async function withFakes(
  fn: (api: GoogleTtsFake, oauth: GoogleOAuthFake, opts: ServiceOptions) => Promise<void>,
): Promise<void> {
  await withOAuth(async (oauth, keyJson) => {
    const api = await new GoogleTtsFake((t) => oauth.accepts(t)).start();
    try {
      await fn(api, oauth, { provider: "google", apiKey: keyJson, baseUrl: api.url });
    } finally {
      await api.close();
    }
  });
}

for (const rate of [8000, 16000, 24000]) {
  Deno.test(`google tts: LINEAR16 at ${rate} Hz, WAV header stripped, 100 ms frames`, async () => {
    await withFakes(async (api, _oauth, opts) => {
      const tts = createGoogleTts({ ...opts, options: { sample_rate: rate } });
      assert.equal(tts.sampleRate(), rate);
      const frames = await collect(tts.runTts("Hello there."));
      assert.deepEqual(
        [frames[0].kind, frames.at(-2)?.kind, frames.at(-1)?.kind],
        ["TtsStarted", "Metrics", "TtsStopped"],
      );
      const audio = frames.flatMap((f) => f.kind === "TtsAudio" ? [f.audio] : []);
      assert.equal(audio.length, 3, "250 ms in 100 ms frames");
      assert.ok(audio.every((a) => a.sampleRate === rate));
      const samples = audio.reduce((n, a) => n + a.pcm.length, 0);
      assert.equal(samples, rate / 4, "exactly the samples, no header bytes");
      // The first samples are the tone's, not a RIFF header read as audio.
      assert.equal(audio[0].pcm[0], 0);
      assert.equal(audio[0].pcm[1], Math.round(8000 * Math.sin(1 / 5)));
      assert.deepEqual(api.bodies[0], {
        input: { text: "Hello there." },
        voice: { languageCode: "en-US", name: "en-US-Chirp3-HD-Charon" },
        audioConfig: { audioEncoding: "LINEAR16", sampleRateHertz: rate },
      });
    });
  });
}

Deno.test("google tts: voice, language, SSML, speaking rate and pitch reach the request", async () => {
  await withFakes(async (api, _oauth, opts) => {
    const tts = createGoogleTts({
      ...opts,
      voice: "de-DE-Neural2-B",
      options: { ssml: true, speaking_rate: 1.2, pitch: -2 },
    });
    await collect(tts.runTts("Hallo <break time='200ms'/> Welt"));
    assert.deepEqual(api.bodies[0], {
      input: { ssml: "<speak>Hallo <break time='200ms'/> Welt</speak>" },
      voice: { languageCode: "de-DE", name: "de-DE-Neural2-B" },
      audioConfig: {
        audioEncoding: "LINEAR16",
        sampleRateHertz: 24000,
        speakingRate: 1.2,
        pitch: -2,
      },
    });
  });
  assert.equal(asSsml("<speak>x</speak>"), "<speak>x</speak>");
});

Deno.test("google tts: a revoked token is an auth error; the next line gets a new token", async () => {
  await withFakes(async (_api, oauth, opts) => {
    const tts = createGoogleTts(opts);
    await collect(tts.runTts("one"));
    oauth.revokeAll();
    const err = await rejects(collect(tts.runTts("two")));
    assert.equal(err.kind, "auth");
    assert.match(err.message, /^google: HTTP 401: .*UNAUTHENTICATED/);
    const frames = await collect(tts.runTts("three"));
    assert.ok(frames.some((f) => f.kind === "TtsAudio"));
    assert.equal(oauth.grants.length, 2);
  });
});

Deno.test("google tts: quota is retried then reported; a 503 is retried", async () => {
  await withFakes(async (api, _oauth, opts) => {
    const quota = { status: 429, body: googleError(429, "RESOURCE_EXHAUSTED", "Quota exceeded") };
    api.replies.push(quota, quota, quota);
    const err = await rejects(collect(createGoogleTts(opts).runTts("hi")));
    assert.match(err.message, /^google: HTTP 429: .*RESOURCE_EXHAUSTED.*\(3 attempts\)/);
    api.replies.push({ status: 503, body: googleError(503, "UNAVAILABLE", "try again") });
    const frames = await collect(createGoogleTts(opts).runTts("hi"));
    assert.ok(frames.some((f) => f.kind === "TtsAudio"));
  });
});

Deno.test("google tts: aborting a slow synthesis ends at once and drops the request", async () => {
  await withFakes(async (api, _oauth, opts) => {
    api.replies.push({ delayMs: 5000 });
    const ac = new AbortController();
    const seen: string[] = [];
    const started = performance.now();
    for await (const f of createGoogleTts(opts).runTts("slow", ac.signal)) {
      seen.push(f.kind);
      setTimeout(() => ac.abort(), 100);
    }
    assert.ok(performance.now() - started < 3000);
    assert.deepEqual(seen, ["TtsStarted"]);
    await until(() => api.aborted === 1, 2000, "the fake sees the request dropped");
  });
});

Deno.test("google tts: missing key and bad options are one config line each", () => {
  const key =
    '{"type":"service_account","client_email":"a@b","private_key":"-----BEGIN PRIVATE KEY-----"}';
  const cases: [ServiceOptions, RegExp][] = [
    [
      { provider: "google" },
      /^google: no service-account key \(set GOOGLE_APPLICATION_CREDENTIALS\)$/,
    ],
    [
      { provider: "google", apiKey: key, options: { sample_rate: 44100 } },
      /sample_rate must be 8000, 16000, 24000/,
    ],
    [
      { provider: "google", apiKey: key, options: { speaking_rate: 9 } },
      /speaking_rate must be a number from 0.25 to 2/,
    ],
  ];
  for (const [opts, want] of cases) {
    assert.throws(() => createGoogleTts(opts), (e: unknown) => {
      assert.ok(e instanceof FlowcatError && e.kind === "config");
      assert.match(e.message, want);
      return true;
    });
  }
});

async function withStream(
  fn: (fake: GoogleTtsStreamFake, oauth: GoogleOAuthFake, opts: ServiceOptions) => Promise<void>,
): Promise<void> {
  await withOAuth(async (oauth, keyJson) => {
    const fake = await new GoogleTtsStreamFake((t) => oauth.accepts(t)).start();
    const opts: ServiceOptions = {
      provider: "google",
      apiKey: keyJson,
      baseUrl: fake.url,
      options: { streaming: true },
    };
    try {
      await fn(fake, oauth, opts);
    } finally {
      fake.close();
    }
  });
}

Deno.test("google tts streaming: PCM pieces across odd byte splits, config and text on the wire", async () => {
  await withStream(async (fake, _oauth, opts) => {
    const tts = createGoogleTts({
      ...opts,
      options: { ...opts.options, sample_rate: 16000, speaking_rate: 1.25 },
    });
    try {
      const frames = await collect(tts.runTts("Hello there."));
      assert.equal(frames[0].kind, "TtsStarted");
      assert.deepEqual(frames.slice(-2).map((f) => f.kind), ["Metrics", "TtsStopped"]);
      const audio = frames.flatMap((f) => f.kind === "TtsAudio" ? [f.audio] : []);
      assert.ok(audio.length > 1, "audio in several pieces, as it came");
      const pcm = audio.flatMap((a) => [...a.pcm]);
      assert.equal(pcm.length, 16000 / 4, "every sample, none split or lost");
      const expected = Int16Array.from(
        { length: pcm.length },
        (_, i) => Math.round(8000 * Math.sin(i / 5)),
      );
      assert.deepEqual(pcm, [...expected]);
      assert.ok(audio.every((a) => a.sampleRate === 16000));
      assert.deepEqual(fake.calls[0].config, {
        voice: { language_code: "en-US", name: "en-US-Chirp3-HD-Charon" },
        streaming_audio_config: {
          audio_encoding: 7,
          sample_rate_hertz: 16000,
          speaking_rate: 1.25,
        },
      });
      assert.deepEqual(fake.calls[0].texts, ["Hello there."]);
      // A second line reuses the connection and the token.
      await collect(tts.runTts("Again."));
      assert.equal(fake.calls.length, 2);
    } finally {
      await tts.stop();
    }
  });
});

Deno.test("google tts streaming: refused token, server error, and abort mid-stream", async () => {
  await withStream(async (fake, oauth, opts) => {
    const tts = createGoogleTts(opts);
    try {
      await collect(tts.runTts("one"));
      oauth.revokeAll();
      const auth = await rejects(collect(tts.runTts("two")));
      assert.equal(auth.kind, "auth");
      assert.match(auth.message, /^google: gRPC UNAUTHENTICATED/);
      await collect(tts.runTts("three")); // a new token
      fake.plans.push({ kind: "fail", code: 8, details: "Quota exceeded" });
      const quota = await rejects(collect(tts.runTts("four")));
      assert.equal(quota.message, "google: gRPC RESOURCE_EXHAUSTED: Quota exceeded");
      fake.plans.push({ kind: "hang" });
      const ac = new AbortController();
      const seen: string[] = [];
      setTimeout(() => ac.abort(), 200);
      for await (const f of tts.runTts("five", ac.signal)) seen.push(f.kind);
      assert.deepEqual(seen, ["TtsStarted"]);
      await until(() => fake.calls.at(-1)!.cancelled, 2000, "the fake sees the cancel");
    } finally {
      await tts.stop();
    }
  });
});

Deno.test("google tts streaming: SSML or pitch with streaming is a config error", () => {
  const key =
    '{"type":"service_account","client_email":"a@b","private_key":"-----BEGIN PRIVATE KEY-----"}';
  for (const extra of [{ ssml: true }, { pitch: 2 }]) {
    assert.throws(
      () =>
        createGoogleTts({
          provider: "google",
          apiKey: key,
          options: { streaming: true, ...extra },
        }),
      /streaming synthesis takes neither ssml nor pitch/,
    );
  }
});
