/**
 * What is particular to AssemblyAI's streaming client (the rest is in the STT conformance
 * suite): the upgrade's key header and session query, 50 ms audio messages, ForceEndpoint
 * and Terminate, the formatted end of turn as the only final, and config checks.
 */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import { assemblyAiQuery, createAssemblyAiStt } from "../providers/assemblyai/stt.ts";
import { toneFrames } from "./_stt_conformance.ts";
import { startParams } from "./_tts_conformance.ts";
import { AssemblyAiSttFake } from "./fakes/assemblyai_stt_fake.ts";

const KEY = "aai-test-key";

Deno.test("assemblyai: handshake, 50 ms audio, ForceEndpoint and Terminate", async () => {
  const fake = new AssemblyAiSttFake(KEY).start();
  const stt = createAssemblyAiStt({
    provider: "assemblyai",
    apiKey: KEY,
    baseUrl: fake.url,
    model: "universal-streaming-multilingual",
    options: { max_turn_silence: 700, keyterms: ["Flowcat", "SIP"] },
  });
  try {
    await stt.start(startParams(16000));
    const conn = await fake.waitForSession();
    assert.equal(conn.headers.get("authorization"), KEY, "the key is sent without a scheme");
    const q = Object.fromEntries(conn.url.searchParams);
    assert.deepEqual(q, {
      sample_rate: "16000",
      encoding: "pcm_s16le",
      format_turns: "true",
      speech_model: "universal-streaming-multilingual",
      max_turn_silence: "700",
      keyterms_prompt: '["Flowcat","SIP"]',
    });
    const sizes: number[] = [];
    conn.socket.addEventListener("message", (ev) => {
      if (ev.data instanceof ArrayBuffer) sizes.push(ev.data.byteLength);
    });
    for (const f of toneFrames(0.3, 8000)) await stt.runStt(f);
    await stt.speechStopped?.();
    await new Promise((r) => setTimeout(r, 100));
    assert.ok(sizes.length >= 5, `only ${sizes.length} audio messages`);
    // 16 kHz s16le: 50 ms is 1600 bytes; 20 ms frames make 60 ms messages.
    assert.ok(sizes.every((n) => n >= 1600 && n <= 32000), `chunk sizes ${sizes}`);
    assert.deepEqual(conn.messages, [{ type: "ForceEndpoint" }]);
    await stt.stop?.();
    assert.deepEqual(conn.messages.at(-1), { type: "Terminate" });
  } finally {
    await stt.stop?.();
    await fake.close();
  }
});

Deno.test("assemblyai: only the formatted end of turn is final", async () => {
  const fake = new AssemblyAiSttFake(KEY).start();
  const stt = createAssemblyAiStt({ provider: "assemblyai", apiKey: KEY, baseUrl: fake.url });
  try {
    await stt.start(startParams(16000));
    fake.send(fake.transcript("Hello, world."));
    await new Promise((r) => setTimeout(r, 100));
    const frames = await stt.runStt({ pcm: new Int16Array(0), sampleRate: 16000, numChannels: 1 });
    assert.deepEqual(
      frames.map((f) => [f.kind, "text" in f ? f.text : ""]),
      [
        ["InterimTranscription", "hello"],
        ["InterimTranscription", "hello world"],
        ["Transcription", "Hello, world."],
      ],
    );
  } finally {
    await stt.stop?.();
    await fake.close();
  }
});

Deno.test("assemblyai: config mistakes are clear errors", () => {
  const bad = (options: Record<string, unknown>, apiKey: string | null = KEY) =>
    assert.throws(
      () => createAssemblyAiStt({ provider: "assemblyai", ...(apiKey ? { apiKey } : {}), options }),
      FlowcatError,
    );
  bad({ sample_rate: 44100 });
  bad({ keyterms: "Flowcat" });
  bad({ max_turn_silence: "long" });
  bad({}, null);
  assert.equal(
    assemblyAiQuery({ provider: "assemblyai", options: { sample_rate: 8000 } }).get("sample_rate"),
    "8000",
  );
});
