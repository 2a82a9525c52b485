/**
 * What is particular to Cartesia's ink client (the rest is in the STT conformance suite): the
 * upgrade query and key header, the `finalize` and `done` commands, error messages, and config
 * checks.
 */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import {
  cartesiaSttQuery,
  createCartesiaStt,
  parseCartesiaSttMessage,
} from "../providers/cartesia/stt.ts";
import { startParams } from "./_tts_conformance.ts";
import { CartesiaSttFake } from "./fakes/cartesia_stt_fake.ts";

const KEY = "ca-test-key";

Deno.test("cartesia stt: query, key header, finalize and done", async () => {
  const fake = new CartesiaSttFake(KEY).start();
  const stt = createCartesiaStt({
    provider: "cartesia",
    apiKey: KEY,
    baseUrl: fake.url,
    language: "pt-BR",
    options: { sample_rate: 8000, min_volume: 0.1, max_silence_duration_secs: 0.6 },
  });
  try {
    await stt.start(startParams(16000));
    const conn = await fake.waitForSession();
    assert.equal(conn.headers.get("x-api-key"), KEY);
    assert.deepEqual(Object.fromEntries(conn.url.searchParams), {
      model: "ink-whisper",
      language: "pt",
      encoding: "pcm_s16le",
      sample_rate: "8000",
      cartesia_version: "2026-03-01",
      min_volume: "0.1",
      max_silence_duration_secs: "0.6",
    });
    await stt.speechStopped?.();
    await stt.stop?.();
    assert.deepEqual(conn.messages, ["finalize", "done"]);
  } finally {
    await stt.stop?.();
    await fake.close();
  }
});

Deno.test("cartesia stt: messages and config mistakes", () => {
  assert.deepEqual(
    parseCartesiaSttMessage('{"type":"transcript","text":"Olá","is_final":true,"language":"pt"}'),
    [{ type: "final", text: "Olá", language: "pt" }, { type: "end" }],
  );
  assert.deepEqual(parseCartesiaSttMessage('{"type":"flush_done","request_id":"r"}'), []);
  assert.deepEqual(
    parseCartesiaSttMessage('{"type":"error","message":"invalid key","status_code":401}'),
    [{ type: "error", kind: "auth", message: "invalid key" }],
  );
  const bad = (options: Record<string, unknown>) =>
    assert.throws(() => cartesiaSttQuery({ provider: "cartesia", options }), FlowcatError);
  bad({ sample_rate: 24000 });
  bad({ min_volume: "low" });
  bad({ cartesia_version: 2025 });
  assert.throws(() => createCartesiaStt({ provider: "cartesia" }), /CARTESIA_API_KEY/);
});
