/**
 * Neuphonic TTS: what is particular to its wire (the shared behaviour is in
 * tests/tts_conformance_test.ts): the request path, header and body, an `errors` event inside a
 * 200 stream, config errors.
 */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import { createNeuphonicTts } from "../providers/neuphonic/tts.ts";
import { collectFrames } from "./_tts_conformance.ts";
import { NeuphonicFake } from "./fakes/neuphonic_tts_fake.ts";

Deno.test("neuphonic tts: path per language, X-API-KEY, body with the synthesis settings", async () => {
  const fake = new NeuphonicFake({ audio: [new Uint8Array([1, 0, 2]), new Uint8Array([0])] });
  const tts = createNeuphonicTts({
    provider: "neuphonic",
    apiKey: fake.key,
    baseUrl: `${fake.url}/`,
    voice: "8e9c4bc8-3979-48ab-8626-df53befc2090",
    language: "fr-FR",
    options: { sample_rate: 16000, speed: 1.1 },
  });
  try {
    const frames = await collectFrames(tts.runTts("Bonjour."));
    const audio = frames.flatMap((f) => f.kind === "TtsAudio" ? [...f.audio.pcm] : []);
    assert.deepEqual(audio, [1, 2]); // 3 + 1 bytes: the odd byte carried into the next event
    const [req] = fake.requests;
    assert.equal(req.path, "/sse/speak/fr");
    assert.equal(req.headers.get("x-api-key"), fake.key);
    assert.deepEqual(req.body, {
      text: "Bonjour.",
      lang_code: "fr",
      encoding: "pcm_linear",
      sampling_rate: 16000,
      speed: 1.1,
      voice_id: "8e9c4bc8-3979-48ab-8626-df53befc2090",
    });
  } finally {
    await fake.close();
  }
});

Deno.test("neuphonic tts: an errors event in the stream fails the utterance", async () => {
  const fake = new NeuphonicFake({ audio: [new Uint8Array(4)] });
  fake.streamError = "Voice not found";
  const tts = createNeuphonicTts({ provider: "neuphonic", apiKey: fake.key, baseUrl: fake.url });
  try {
    await assert.rejects(
      collectFrames(tts.runTts("Hello.")),
      (e) =>
        e instanceof FlowcatError && e.kind === "other" &&
        e.message === 'neuphonic: ["Voice not found"] (status 400)',
    );
  } finally {
    await fake.close();
  }
});

Deno.test("neuphonic tts: config errors", () => {
  const config = (e: unknown) => e instanceof FlowcatError && e.kind === "config";
  assert.throws(() => createNeuphonicTts({ provider: "neuphonic" }), config);
  assert.throws(
    () =>
      createNeuphonicTts({ provider: "neuphonic", apiKey: "k", options: { sample_rate: 24000 } }),
    config,
  );
  assert.equal(createNeuphonicTts({ provider: "neuphonic", apiKey: "k" }).sampleRate(), 22050);
});
