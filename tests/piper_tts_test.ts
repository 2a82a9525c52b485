/**
 * Tests of the Piper HTTP text-to-speech client (providers/piper/tts.ts) against a fake.
 * What every TTS client shares (blank text, auth, retries, aborts, dropped connections) is
 * checked by tests/tts_conformance_test.ts; this file keeps what is particular to this client.
 */

import assert from "node:assert/strict";
import { createPiperTts } from "../providers/piper/tts.ts";
import { FlowcatError } from "../core/errors.ts";
import type { Frame } from "../core/frames.ts";
import { PiperFake, type PiperFakeApi } from "./fakes/piper_fake.ts";
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

async function withFake(
  opts: { api?: PiperFakeApi; sampleRate?: number },
  fn: (fake: PiperFake) => Promise<void>,
): Promise<void> {
  const fake = new PiperFake(opts);
  await fake.start();
  try {
    await fn(fake);
  } finally {
    await fake.close();
  }
}

Deno.test("piper: default API posts JSON to /synthesize with voice settings, no auth", () =>
  withFake({}, async (fake) => {
    const tts = createPiperTts({
      provider: "piper",
      baseUrl: fake.baseUrl + "/",
      voice: "en_US-lessac-medium",
      options: { speaker_id: 2, length_scale: 1.2, noise_scale: 0.5, noise_w_scale: 0.7 },
    });
    assert.equal(tts.name(), "piper");
    assert.equal(tts.sampleRate(), 22050);
    await collect(tts.runTts("Hello from Piper."));
    assert.equal(fake.requests.length, 1);
    const req = fake.requests[0];
    assert.equal(req.method, "POST");
    assert.equal(req.path, "/synthesize");
    assert.match(req.headers["content-type"], /^application\/json/);
    assert.equal(req.headers.authorization, undefined);
    assert.deepEqual(req.body, {
      text: "Hello from Piper.",
      voice: "en_US-lessac-medium",
      speaker_id: 2,
      length_scale: 1.2,
      noise_scale: 0.5,
      noise_w_scale: 0.7,
    });
  }));

Deno.test("piper: api root posts the JSON to / (piper-tts 1.3 - 1.4)", () =>
  withFake({ api: "root" }, async (fake) => {
    const tts = createPiperTts({
      provider: "piper",
      baseUrl: fake.baseUrl,
      options: { api: "root" },
    });
    const frames = await collect(tts.runTts("Root"));
    assert.equal(fake.requests[0].path, "/");
    assert.deepEqual(fake.requests[0].body, { text: "Root" });
    assert.equal(frames.at(-1)!.kind, "TtsStopped");
  }));

Deno.test("piper: api legacy posts the raw text to / (rhasspy/piper)", () =>
  withFake({ api: "legacy" }, async (fake) => {
    const tts = createPiperTts({
      provider: "piper",
      baseUrl: fake.baseUrl,
      options: { api: "legacy" },
    });
    const frames = await collect(tts.runTts("Plain {not json}"));
    assert.equal(fake.requests[0].path, "/");
    assert.equal(fake.requests[0].body, "Plain {not json}");
    assert.match(fake.requests[0].headers["content-type"], /^text\/plain/);
    assert.ok(audioOf(frames).length > 0);
  }));

Deno.test("piper: the WAV is decoded into ~100 ms frames, in order, with usage metrics", () =>
  withFake({}, async (fake) => {
    const tts = createPiperTts({
      provider: "piper",
      baseUrl: fake.baseUrl,
      voice: "en_US-amy-medium",
    });
    const text = "Decode me.";
    const frames = await collect(tts.runTts(text));
    const kinds = frames.map((f) => f.kind);
    assert.equal(kinds[0], "TtsStarted");
    assert.deepEqual(kinds.slice(-2), ["Metrics", "TtsStopped"]);
    const audio = frames.filter((f) => f.kind === "TtsAudio");
    assert.equal(audio.length, kinds.length - 3);
    assert.equal(audio.length, Math.ceil(fake.lastPcm.length / 2205));
    for (const f of audio) {
      assert.equal(f.audio.sampleRate, 22050);
      assert.equal(f.audio.numChannels, 1);
      assert.ok(f.audio.pcm.length <= 2205);
    }
    assert.deepEqual(audioOf(frames), fake.lastPcm);
    const metrics = frames.at(-2)!;
    if (metrics.kind !== "Metrics") throw new Error("no metrics");
    assert.deepEqual(metrics.data, [
      { type: "tts_usage", processor: "piper", model: "en_US-amy-medium", characters: text.length },
    ]);
  }));

Deno.test("piper: a voice at another rate is resampled to sampleRate()", () =>
  withFake({ sampleRate: 16000 }, async (fake) => {
    const tts = createPiperTts({ provider: "piper", baseUrl: fake.baseUrl });
    const frames = await collect(tts.runTts("Low quality voice"));
    const out = audioOf(frames);
    assert.equal(fake.lastPcm.length, 8000);
    assert.ok(Math.abs(out.length - 11025) <= 2, `got ${out.length} samples at 22050 Hz`);
    for (const f of frames) if (f.kind === "TtsAudio") assert.equal(f.audio.sampleRate, 22050);
    assert.ok(out.some((s) => Math.abs(s) > 6000), "the tone survives resampling");
  }));

Deno.test("piper: options.sample_rate picks the output rate (downsampled from 22050)", () =>
  withFake({}, async (fake) => {
    const tts = createPiperTts({
      provider: "piper",
      baseUrl: fake.baseUrl,
      options: { sample_rate: 16000 },
    });
    assert.equal(tts.sampleRate(), 16000);
    const frames = await collect(tts.runTts("Sixteen k"));
    const out = audioOf(frames);
    assert.ok(Math.abs(out.length - 8000) <= 2, `got ${out.length}`);
    for (const f of frames) {
      if (f.kind === "TtsAudio") {
        assert.equal(f.audio.sampleRate, 16000);
        assert.ok(f.audio.pcm.length <= 1600);
      }
    }
  }));

Deno.test("piper: 401 from a proxy is an auth error naming the provider, not the key", () =>
  withFake({}, async (fake) => {
    fake.failures.push(401);
    const key = "proxy-secret-token-42";
    const tts = createPiperTts({ provider: "piper", baseUrl: fake.baseUrl, apiKey: key });
    const err = await collect(tts.runTts("Hello")).then(() => undefined, (e) => e);
    assert.ok(err instanceof FlowcatError);
    assert.equal(err.kind, "auth");
    assert.match(err.message, /^piper: HTTP 401/);
    assert.ok(!err.message.includes(key));
    assert.equal(fake.requests[0].headers.authorization, `Bearer ${key}`);
  }));

Deno.test("piper: a reply that is not WAV is a protocol error naming the provider", () =>
  withFake({}, async (fake) => {
    fake.rawAnswer = new TextEncoder().encode("<html>proxy login</html>");
    const tts = createPiperTts({ provider: "piper", baseUrl: fake.baseUrl });
    const err = await collect(tts.runTts("Hello")).then(() => undefined, (e) => e);
    assert.ok(err instanceof FlowcatError);
    assert.equal(err.kind, "protocol");
    assert.match(err.message, /^piper: reply is not usable WAV audio/);
  }));

Deno.test("piper: abort while the WAV is awaited ends the iterator and drops the connection", () =>
  withFake({}, async (fake) => {
    fake.delayMs = 5000;
    const tts = createPiperTts({ provider: "piper", baseUrl: fake.baseUrl });
    const ac = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const t0 = performance.now();
    const frames = await collect(tts.runTts("Never mind", ac.signal), (f) => {
      if (f.kind === "TtsStarted") timer = setTimeout(() => ac.abort(), 100);
    });
    clearTimeout(timer);
    assert.ok(performance.now() - t0 < 4000, "the iterator waited for the server");
    assert.deepEqual(frames.map((f) => f.kind), ["TtsStarted"]);
    await until(() => fake.clientsGone > 0, 2000, "the fake to see the client go away");
  }));

Deno.test("piper: bad options fail at construction with a config error", () => {
  const bad = [
    { api: "v2" },
    { speaker_id: -1 },
    { speaker_id: 1.5 },
    { speaker: 3 },
    { length_scale: 0 },
    { sample_rate: "22050" },
  ];
  for (const options of bad) {
    assert.throws(
      () => createPiperTts({ provider: "piper", options }),
      (e: unknown) => e instanceof FlowcatError && e.kind === "config",
      JSON.stringify(options),
    );
  }
});
