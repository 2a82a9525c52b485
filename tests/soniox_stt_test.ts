/**
 * What is particular to Soniox's realtime client (the rest is in the STT conformance suite):
 * the configuration message, token joining across responses, `<fin>` after finalize, the empty
 * end-of-audio message, error codes, and config checks.
 */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import { createSonioxStt, sonioxConfig, SonioxTokens } from "../providers/soniox/stt.ts";
import { toneFrames } from "./_stt_conformance.ts";
import { startParams } from "./_tts_conformance.ts";
import { SonioxSttFake } from "./fakes/soniox_stt_fake.ts";

const KEY = "sx-test-key";
const EMPTY = { pcm: new Int16Array(0), sampleRate: 16000, numChannels: 1 };

Deno.test("soniox: configuration first, finalize answered by <fin>, empty message on stop", async () => {
  const fake = new SonioxSttFake(KEY).start();
  const stt = createSonioxStt({
    provider: "soniox",
    apiKey: KEY,
    baseUrl: fake.url,
    language: "es-MX",
    options: { context: "Flowcat support line" },
  });
  try {
    await stt.start(startParams(16000));
    const conn = await fake.waitForSession();
    assert.deepEqual(conn.messages[0], {
      api_key: KEY,
      model: "stt-rt-v4",
      audio_format: "pcm_s16le",
      sample_rate: 16000,
      num_channels: 1,
      enable_endpoint_detection: true,
      language_hints: ["es"],
      context: "Flowcat support line",
    });
    for (const f of toneFrames(0.1, 16000)) await stt.runStt(f);
    fake.send([{ tokens: [{ text: "Ho", is_final: true }, { text: "la", is_final: true }] }]);
    await stt.speechStopped?.();
    await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(conn.messages.at(-1), { type: "finalize" });
    assert.deepEqual(
      (await stt.runStt(EMPTY)).map((f) => [f.kind, "text" in f ? f.text : ""]),
      [["InterimTranscription", "Hola"], ["Transcription", "Hola"]],
    );
    await stt.stop?.();
    assert.equal(conn.messages.at(-1), "", "the end of audio is an empty message");
  } finally {
    await stt.stop?.();
    await fake.close();
  }
});

Deno.test("soniox: tokens join across responses; errors by code", () => {
  const t = new SonioxTokens();
  const msg = (...tokens: [string, boolean][]) =>
    JSON.stringify({ tokens: tokens.map(([text, is_final]) => ({ text, is_final })) });
  assert.deepEqual(t.parse(msg(["Hel", true], ["lo", false])), [{
    type: "partial",
    text: "Hello",
  }]);
  assert.deepEqual(t.parse(msg(["lo", true], [" world", true], ["<end>", true], [" ne", false])), [
    { type: "final", text: "Hello world" },
    { type: "end" },
    { type: "partial", text: "ne" },
  ]);
  assert.deepEqual(t.parse('{"tokens":[],"error_code":401,"error_message":"Invalid API key."}'), [
    { type: "error", kind: "auth", message: "401 Invalid API key." },
  ]);
  assert.deepEqual(t.parse('{"tokens":[],"error_code":503,"error_message":"busy"}'), [
    { type: "error", kind: "protocol", message: "503 busy" },
  ]);
});

Deno.test("soniox: config mistakes are clear errors", () => {
  const bad = (options: Record<string, unknown>) =>
    assert.throws(() => sonioxConfig({ provider: "soniox", options }), FlowcatError);
  bad({ sample_rate: 44100 });
  bad({ language_hints: "en" });
  bad({ context: 7 });
  assert.throws(() => createSonioxStt({ provider: "soniox" }), /SONIOX_API_KEY/);
});
