/**
 * What is particular to ElevenLabs' Scribe realtime client (the rest is in the STT conformance
 * suite): the upgrade query and key header, base64 audio chunks, commits in manual mode,
 * error messages, and config checks.
 */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import {
  createElevenLabsStt,
  elevenLabsSttQuery,
  parseElevenLabsSttMessage,
} from "../providers/elevenlabs/stt.ts";
import { toneFrames } from "./_stt_conformance.ts";
import { startParams } from "./_tts_conformance.ts";
import { ElevenLabsSttFake } from "./fakes/elevenlabs_stt_fake.ts";

const KEY = "el-test-key";

Deno.test("elevenlabs stt: query, key header, base64 chunks, manual commit", async () => {
  const fake = new ElevenLabsSttFake(KEY).start();
  const stt = createElevenLabsStt({
    provider: "elevenlabs",
    apiKey: KEY,
    baseUrl: fake.url,
    language: "en-GB",
    options: { sample_rate: 8000, commit_strategy: "manual", vad_silence_threshold_secs: 0.8 },
  });
  try {
    await stt.start(startParams(16000));
    const conn = await fake.waitForSession();
    assert.equal(conn.headers.get("xi-api-key"), KEY);
    assert.deepEqual(Object.fromEntries(conn.url.searchParams), {
      model_id: "scribe_v2_realtime",
      audio_format: "pcm_8000",
      commit_strategy: "manual",
      language_code: "en",
      vad_silence_threshold_secs: "0.8",
    });
    for (const f of toneFrames(0.1, 16000)) await stt.runStt(f);
    await stt.speechStopped?.();
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(conn.audioBytes, 1600, "0.1 s at 8 kHz, 16-bit");
    const first = conn.messages[0] as Record<string, unknown>;
    assert.equal(first.message_type, "input_audio_chunk");
    assert.equal(first.commit, false);
    assert.equal(first.sample_rate, 8000);
    assert.deepEqual(conn.messages.at(-1), {
      message_type: "input_audio_chunk",
      audio_base_64: "",
      commit: true,
      sample_rate: 8000,
    });
  } finally {
    await stt.stop?.();
    await fake.close();
  }
});

Deno.test("elevenlabs stt: no commit is sent with the server's VAD", async () => {
  const fake = new ElevenLabsSttFake(KEY).start();
  const stt = createElevenLabsStt({ provider: "elevenlabs", apiKey: KEY, baseUrl: fake.url });
  try {
    await stt.start(startParams(16000));
    const conn = await fake.waitForSession();
    assert.equal(conn.url.searchParams.get("commit_strategy"), "vad");
    await stt.speechStopped?.();
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(conn.messages, []);
  } finally {
    await stt.stop?.();
    await fake.close();
  }
});

Deno.test("elevenlabs stt: messages and config mistakes", () => {
  assert.deepEqual(
    parseElevenLabsSttMessage('{"message_type":"auth_error","error":"invalid key"}'),
    [{ type: "error", kind: "auth", message: "auth_error: invalid key" }],
  );
  assert.deepEqual(
    parseElevenLabsSttMessage('{"message_type":"quota_exceeded","error":"no credits"}'),
    [{ type: "error", kind: "protocol", message: "quota_exceeded: no credits" }],
  );
  assert.deepEqual(
    parseElevenLabsSttMessage('{"message_type":"committed_transcript_with_timestamps","text":"x"}'),
    [],
  );
  const bad = (options: Record<string, unknown>) =>
    assert.throws(() => elevenLabsSttQuery({ provider: "elevenlabs", options }), FlowcatError);
  bad({ sample_rate: 44100 });
  bad({ commit_strategy: "sometimes" });
  bad({ vad_threshold: "high" });
  assert.throws(() => createElevenLabsStt({ provider: "elevenlabs" }), /ELEVENLABS_API_KEY/);
});
