/**
 * Rime TTS: what is particular to its wire (the shared behaviour is in
 * tests/tts_conformance_test.ts): synthesis arguments in the handshake query, the Bearer
 * header, text + flush under a context id, clear on abort with the old context's events
 * dropped, config errors.
 */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import { createRimeTts } from "../providers/rime/tts.ts";
import { collectFrames } from "./_tts_conformance.ts";
import { field } from "./fakes/_ws_fake_server.ts";
import { RimeFake } from "./fakes/rime_tts_fake.ts";

const chunk = (n: number, v: number) => new Uint8Array(n).fill(v);

Deno.test("rime tts: query, Bearer header, text under a context id then flush", async () => {
  const fake = new RimeFake({ audio: [chunk(3, 1), chunk(5, 2)] });
  const tts = createRimeTts({
    provider: "rime",
    apiKey: fake.key,
    baseUrl: fake.url,
    model: "arcana",
    voice: "celeste",
    language: "es-MX",
    options: { sample_rate: 16000, speedAlpha: 0.9, ignored: "x" },
  });
  try {
    const frames = await collectFrames(tts.runTts("Hola."));
    const started = frames[0];
    assert.equal(started.kind, "TtsStarted");
    const audio = frames.flatMap((f) => f.kind === "TtsAudio" ? [f.audio.pcm.length] : []);
    assert.deepEqual(audio, [1, 3]); // 3 + 5 bytes, the odd byte carried over
    await collectFrames(tts.runTts("Otra vez."));
    assert.equal(fake.connections.length, 1);
    const q = fake.connections[0].url.searchParams;
    assert.deepEqual(Object.fromEntries(q), {
      speaker: "celeste",
      modelId: "arcana",
      audioFormat: "pcm",
      samplingRate: "16000",
      lang: "spa",
      speedAlpha: "0.9",
    });
    assert.equal(fake.connections[0].headers.get("authorization"), `Bearer ${fake.key}`);
    const [first, flush, second] = fake.messages;
    assert.deepEqual(first, {
      text: "Hola.",
      contextId: started.kind === "TtsStarted" ? started.contextId : "",
    });
    assert.deepEqual(flush, { operation: "flush" });
    assert.notEqual(field(second, "contextId"), field(first, "contextId"));
  } finally {
    await tts.stop();
    await fake.close();
  }
});

Deno.test("rime tts: an abort sends clear; the old context's audio is not heard next", async () => {
  const fake = new RimeFake({ audio: [chunk(4, 7), chunk(4, 7), chunk(4, 7)] });
  const tts = createRimeTts({ provider: "rime", apiKey: fake.key, baseUrl: fake.url });
  try {
    const ctl = new AbortController();
    await collectFrames(tts.runTts("Long answer.", ctl.signal), (f) => {
      if (f.kind === "TtsAudio") ctl.abort();
    });
    while (field(fake.messages.at(-1), "operation") !== "clear") {
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

Deno.test("rime tts: defaults and config errors", () => {
  const tts = createRimeTts({ provider: "rime", apiKey: "k" });
  assert.equal(
    tts.url(),
    "wss://users-ws.rime.ai/ws3?speaker=luna&modelId=coda&audioFormat=pcm&samplingRate=24000",
  );
  const config = (e: unknown) => e instanceof FlowcatError && e.kind === "config";
  assert.throws(() => createRimeTts({ provider: "rime" }), config);
  assert.throws(
    () => createRimeTts({ provider: "rime", apiKey: "k", options: { sample_rate: 11025 } }),
    config,
  );
  assert.throws(
    () => createRimeTts({ provider: "rime", apiKey: "k", language: "sw" }),
    (e) => config(e) && /language sw/.test((e as Error).message),
  );
});
