/**
 * What is particular to Speechmatics' realtime client (the rest is in the STT conformance
 * suite): the Bearer upgrade, the StartRecognition message, ForceEndOfUtterance, EndOfStream
 * with the audio message count, Error messages, and config checks.
 */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import {
  createSpeechmaticsStt,
  parseSpeechmaticsMessage,
  speechmaticsStart,
} from "../providers/speechmatics/stt.ts";
import { toneFrames } from "./_stt_conformance.ts";
import { startParams } from "./_tts_conformance.ts";
import { SpeechmaticsSttFake } from "./fakes/speechmatics_stt_fake.ts";

const KEY = "sm-test-key";
const EMPTY = { pcm: new Int16Array(0), sampleRate: 16000, numChannels: 1 };

Deno.test("speechmatics: StartRecognition, AddAudio, ForceEndOfUtterance, EndOfStream", async () => {
  const fake = new SpeechmaticsSttFake(KEY).start();
  const stt = createSpeechmaticsStt({
    provider: "speechmatics",
    apiKey: KEY,
    baseUrl: fake.url,
    language: "de-DE",
    model: "standard",
    options: { max_delay: 1.5, end_of_utterance_silence_trigger: 0.8 },
  });
  try {
    await stt.start(startParams(16000));
    const conn = await fake.waitForSession();
    assert.equal(conn.url.pathname, "/v2");
    assert.equal(conn.headers.get("authorization"), `Bearer ${KEY}`);
    assert.deepEqual(conn.messages[0], {
      message: "StartRecognition",
      audio_format: { type: "raw", encoding: "pcm_s16le", sample_rate: 16000 },
      transcription_config: {
        language: "de",
        operating_point: "standard",
        enable_partials: true,
        max_delay: 1.5,
        conversation_config: { end_of_utterance_silence_trigger: 0.8 },
      },
    });
    const frames = toneFrames(0.2, 16000);
    for (const f of frames) await stt.runStt(f);
    await stt.speechStopped?.();
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(conn.messages.at(-1), { message: "ForceEndOfUtterance" });
    await stt.stop?.();
    assert.deepEqual(conn.messages.at(-1), { message: "EndOfStream", last_seq_no: frames.length });
  } finally {
    await stt.stop?.();
    await fake.close();
  }
});

Deno.test("speechmatics: words are held until EndOfUtterance; Error is thrown", async () => {
  const fake = new SpeechmaticsSttFake(KEY).start();
  const stt = createSpeechmaticsStt({ provider: "speechmatics", apiKey: KEY, baseUrl: fake.url });
  try {
    await stt.start(startParams(16000));
    const [partial, final, end] = fake.transcript("good morning");
    fake.send([final, partial]);
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(
      (await stt.runStt(EMPTY)).map((f) => [f.kind, "text" in f ? f.text : ""]),
      [["InterimTranscription", "good morning good"]],
    );
    fake.send([end]);
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(
      (await stt.runStt(EMPTY)).map((f) => [f.kind, "text" in f ? f.text : ""]),
      [["Transcription", "good morning"]],
    );
    fake.send([{ message: "Error", type: "quota_exceeded", reason: "too many sessions" }]);
    await new Promise((r) => setTimeout(r, 50));
    await assert.rejects(
      stt.runStt(EMPTY),
      (e: unknown) =>
        e instanceof FlowcatError && e.kind === "protocol" &&
        e.message === "speechmatics: quota_exceeded: too many sessions",
    );
  } finally {
    await stt.stop?.();
    await fake.close();
  }
});

Deno.test("speechmatics: a not_authorised Error is an auth event; config mistakes", () => {
  assert.deepEqual(
    parseSpeechmaticsMessage('{"message":"Error","type":"not_authorised","reason":"bad key"}'),
    [{ type: "error", kind: "auth", message: "not_authorised: bad key" }],
  );
  const bad = (options: Record<string, unknown>) =>
    assert.throws(() => speechmaticsStart({ provider: "speechmatics", options }), FlowcatError);
  bad({ sample_rate: 48000 });
  bad({ end_of_utterance_silence_trigger: 5 });
  bad({ domain: 3 });
  assert.throws(() => createSpeechmaticsStt({ provider: "speechmatics" }), /SPEECHMATICS_API_KEY/);
});
