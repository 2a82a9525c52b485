/**
 * LMNT TTS: what is particular to its wire (the shared behaviour is in
 * tests/tts_conformance_test.ts): the key in the init message, text + flush with a nonce, reset
 * on abort with the stale audio dropped, config errors.
 */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import { createLmntTts } from "../providers/lmnt/tts.ts";
import { collectFrames } from "./_tts_conformance.ts";
import { field } from "./fakes/_ws_fake_server.ts";
import { LmntFake } from "./fakes/lmnt_tts_fake.ts";

const chunk = (n: number, v: number) => new Uint8Array(n).fill(v);

Deno.test("lmnt tts: init message holds the key and format; text then flush with a nonce", async () => {
  const fake = new LmntFake({ audio: [chunk(4, 1)] });
  const tts = createLmntTts({
    provider: "lmnt",
    apiKey: fake.key,
    baseUrl: fake.url,
    voice: "morgan",
    language: "de-DE",
    options: { sample_rate: 16000, speed: 1.2 },
  });
  try {
    await collectFrames(tts.runTts("Hallo."));
    await collectFrames(tts.runTts("Noch einmal."));
    assert.equal(fake.connections.length, 1);
    const conn = fake.connections[0];
    assert.equal(conn.url.pathname + conn.url.search, "/v1/ai/speech/stream");
    const [init, text, flush, text2, flush2] = conn.messages;
    assert.deepEqual(init, {
      "X-API-Key": fake.key,
      voice: "morgan",
      model: "blizzard",
      protocol_version: 2,
      format: "pcm_s16le",
      sample_rate: "16000",
      language: "de",
      speed: 1.2,
    });
    assert.deepEqual(text, { text: "Hallo." });
    assert.equal(field(flush, "command"), "flush");
    assert.deepEqual(text2, { text: "Noch einmal." });
    assert.equal(field(flush2, "command"), "flush");
    assert.notEqual(field(flush2, "nonce"), field(flush, "nonce"));
    await tts.stop();
    assert.deepEqual(conn.messages.at(-1), { command: "eof" });
  } finally {
    await tts.stop();
    await fake.close();
  }
});

Deno.test("lmnt tts: an abort sends reset; audio before its completion is dropped", async () => {
  const fake = new LmntFake({ audio: [chunk(4, 7), chunk(4, 7)] });
  const tts = createLmntTts({ provider: "lmnt", apiKey: fake.key, baseUrl: fake.url });
  try {
    const ctl = new AbortController();
    await collectFrames(tts.runTts("Long answer.", ctl.signal), (f) => {
      if (f.kind === "TtsAudio") ctl.abort();
    });
    while (field(fake.messages.at(-1), "command") !== "reset") {
      await new Promise((r) => setTimeout(r, 5));
    }
    fake.audio = [chunk(2, 9)];
    const next = await collectFrames(tts.runTts("Short."));
    const audio = next.flatMap((f) => f.kind === "TtsAudio" ? [...f.audio.pcm] : []);
    assert.deepEqual(audio, [0x0909]);
  } finally {
    await tts.stop();
    await fake.close();
  }
});

Deno.test("lmnt tts: config errors", () => {
  const config = (e: unknown) => e instanceof FlowcatError && e.kind === "config";
  assert.throws(() => createLmntTts({ provider: "lmnt" }), config);
  assert.throws(
    () => createLmntTts({ provider: "lmnt", apiKey: "k", options: { sample_rate: 44100 } }),
    config,
  );
  assert.equal(createLmntTts({ provider: "lmnt", apiKey: "k" }).sampleRate(), 24000);
});
