/**
 * Hume Octave TTS: what is particular to its wire (the shared behaviour is in
 * tests/tts_conformance_test.ts): the request header and body (voice by name or id, options),
 * JSON lines split across reads, config errors.
 */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import { createHumeTts } from "../providers/hume/tts.ts";
import { readJsonLines } from "../providers/tts/_http_stream.ts";
import { collectFrames } from "./_tts_conformance.ts";
import { HumeFake } from "./fakes/hume_tts_fake.ts";

Deno.test("hume tts: header and body, a voice name or a voice id", async () => {
  const fake = new HumeFake({ audio: [new Uint8Array([3, 0])] });
  try {
    const named = createHumeTts({
      provider: "hume",
      apiKey: fake.key,
      baseUrl: fake.url,
      model: "2",
      options: { description: "calm, warm", speed: 1.1, trailing_silence: 0.2 },
    });
    const frames = await collectFrames(named.runTts("Hello."));
    assert.deepEqual(frames.flatMap((f) => f.kind === "TtsAudio" ? [...f.audio.pcm] : []), [3]);
    const byId = createHumeTts({
      provider: "hume",
      apiKey: fake.key,
      baseUrl: fake.url,
      voice: "9e068547-5ba4-4c8e-8e03-69282a008f04",
      options: { voice_provider: "CUSTOM_VOICE", instant_mode: false },
    });
    await collectFrames(byId.runTts("Hi."));
    assert.equal(fake.requests[0].headers.get("x-hume-api-key"), fake.key);
    assert.deepEqual(fake.requests[0].body, {
      utterances: [{
        text: "Hello.",
        voice: { name: "Ava Song", provider: "HUME_AI" },
        description: "calm, warm",
        speed: 1.1,
        trailing_silence: 0.2,
      }],
      format: { type: "pcm" },
      instant_mode: true,
      strip_headers: true,
      version: "2",
    });
    assert.deepEqual(fake.requests[1].body, {
      utterances: [{
        text: "Hi.",
        voice: { id: "9e068547-5ba4-4c8e-8e03-69282a008f04", provider: "CUSTOM_VOICE" },
      }],
      format: { type: "pcm" },
      instant_mode: false,
      strip_headers: true,
    });
  } finally {
    await fake.close();
  }
});

Deno.test("hume tts: JSON lines split anywhere across reads", async () => {
  const text = '{"type":"audio","audio":"AQA="}\n\n{"type":"timestamp"}\nnot json\n{"a":1}';
  const pieces = [text.slice(0, 7), text.slice(7, 31), text.slice(31, 40), text.slice(40)];
  const body = ReadableStream.from(pieces.map((p) => new TextEncoder().encode(p)));
  const records = await Array.fromAsync(readJsonLines(body));
  assert.deepEqual(records, [{ type: "audio", audio: "AQA=" }, { type: "timestamp" }, { a: 1 }]);
});

Deno.test("hume tts: config errors", () => {
  const config = (e: unknown) => e instanceof FlowcatError && e.kind === "config";
  assert.throws(() => createHumeTts({ provider: "hume" }), config);
  assert.throws(
    () => createHumeTts({ provider: "hume", apiKey: "k", options: { sample_rate: 24000 } }),
    (e) => config(e) && /48000/.test((e as Error).message),
  );
});
