/**
 * What is particular to Gladia's live client (the rest is in the STT conformance suite): the
 * HTTP session setup before each connection, base64 audio messages, stop_recording, and
 * config checks.
 */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import { createGladiaStt, gladiaSession, parseGladiaMessage } from "../providers/gladia/stt.ts";
import { toneFrames } from "./_stt_conformance.ts";
import { startParams } from "./_tts_conformance.ts";
import { GladiaSttFake } from "./fakes/gladia_stt_fake.ts";

const KEY = "gl-test-key";

Deno.test("gladia: session setup, base64 audio, a new session per connection, stop", async () => {
  const fake = new GladiaSttFake(KEY).start();
  const stt = createGladiaStt({
    provider: "gladia",
    apiKey: KEY,
    baseUrl: fake.httpUrl,
    language: "fr-FR",
    options: { sample_rate: 8000, endpointing: 0.3, reconnect_delay_ms: 10 },
  });
  try {
    await stt.start(startParams(16000));
    assert.deepEqual(fake.setups, [{
      encoding: "wav/pcm",
      bit_depth: 16,
      sample_rate: 8000,
      channels: 1,
      model: "solaria-1",
      endpointing: 0.3,
      language_config: { languages: ["fr"], code_switching: false },
      messages_config: { receive_partial_transcripts: true, receive_final_transcripts: true },
    }]);
    const conn = await fake.waitForSession();
    for (const f of toneFrames(0.1, 16000)) await stt.runStt(f);
    await fake.waitForAudio(conn);
    await new Promise((r) => setTimeout(r, 50));
    // 0.1 s at 8 kHz, 16-bit: 1600 bytes, as base64 JSON chunks.
    assert.equal(conn.audioBytes, 1600);
    const chunk = conn.messages[0] as { type: string; data: { chunk: string } };
    assert.equal(chunk.type, "audio_chunk");
    assert.equal(Uint8Array.fromBase64(chunk.data.chunk).length, 320);
    await fake.drop();
    const second = await fake.waitForSession(2);
    assert.equal(fake.setups.length, 2, "a reconnect sets a new session up");
    // Audio on the new session: the client has taken it up (a stop while the redial is still in
    // flight closes that socket without a farewell).
    for (const f of toneFrames(0.02, 16000)) await stt.runStt(f);
    await fake.waitForAudio(second);
    await stt.stop?.();
    assert.deepEqual(fake.sessions[1].messages.at(-1), { type: "stop_recording" });
  } finally {
    await stt.stop?.();
    await fake.close();
  }
});

Deno.test("gladia: messages and config mistakes", () => {
  assert.deepEqual(
    parseGladiaMessage(JSON.stringify({
      type: "transcript",
      data: { is_final: true, utterance: { text: "Bonjour.", language: "fr" } },
    })),
    [{ type: "final", text: "Bonjour.", language: "fr" }, { type: "end" }],
  );
  assert.deepEqual(
    parseGladiaMessage('{"type":"audio_chunk","acknowledged":true,"data":{"byte_range":[0,2]}}'),
    [],
  );
  const bad = (options: Record<string, unknown>) =>
    assert.throws(() => gladiaSession({ provider: "gladia", options }), FlowcatError);
  bad({ sample_rate: 22050 });
  bad({ endpointing: 30 });
  assert.throws(
    () => createGladiaStt({ provider: "gladia", apiKey: KEY, options: { region: 1 } }),
    /options.region/,
  );
  assert.throws(() => createGladiaStt({ provider: "gladia" }), /GLADIA_API_KEY/);
});
