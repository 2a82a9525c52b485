/**
 * Deepgram Aura TTS: what is particular to its wire (the shared behaviour is in
 * tests/tts_conformance_test.ts): the handshake, Speak + Flush per utterance on one kept
 * socket, Clear on abort with the stale audio dropped, the voice/model choice, config errors.
 */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import { createDeepgramTts } from "../providers/deepgram/tts.ts";
import { collectFrames, startParams } from "./_tts_conformance.ts";
import { DeepgramTtsFake } from "./fakes/deepgram_tts_fake.ts";
import { field } from "./fakes/_ws_fake_server.ts";

const chunk = (n: number, v: number) => new Uint8Array(n).fill(v);

Deno.test("deepgram tts: handshake query and Token header, Speak then Flush, one socket", async () => {
  const fake = new DeepgramTtsFake({ audio: [chunk(5, 1), chunk(3, 2)] });
  const tts = createDeepgramTts({
    provider: "deepgram",
    apiKey: fake.key,
    baseUrl: fake.url.replace("ws://", "http://"),
    voice: "aura-2-thalia-en",
    options: { sample_rate: 16000 },
  });
  try {
    await tts.start(startParams(16000));
    const frames = await collectFrames(tts.runTts("Hello there."));
    const audio = frames.flatMap((f) => f.kind === "TtsAudio" ? [f.audio.pcm] : []);
    // 5 + 3 bytes: the odd byte is carried into the second chunk, 4 whole samples in all.
    assert.deepEqual(audio.map((a) => a.length), [2, 2]);
    await collectFrames(tts.runTts("Again."));
    assert.equal(fake.connections.length, 1);
    const conn = fake.connections[0];
    assert.equal(conn.url.searchParams.get("model"), "aura-2-thalia-en");
    assert.equal(conn.url.searchParams.get("encoding"), "linear16");
    assert.equal(conn.url.searchParams.get("sample_rate"), "16000");
    assert.equal(conn.headers.get("authorization"), `Token ${fake.key}`);
    assert.equal(conn.url.search.includes(fake.key), false);
    assert.deepEqual(conn.messages, [
      { type: "Speak", text: "Hello there." },
      { type: "Flush" },
      { type: "Speak", text: "Again." },
      { type: "Flush" },
    ]);
    await tts.stop();
    assert.deepEqual(conn.messages.at(-1), { type: "Close" });
  } finally {
    await tts.stop();
    await fake.close();
  }
});

Deno.test("deepgram tts: an abort sends Clear; the next utterance gets only its own audio", async () => {
  const fake = new DeepgramTtsFake({ audio: [chunk(4, 7), chunk(4, 7)] });
  const tts = createDeepgramTts({ provider: "deepgram", apiKey: fake.key, baseUrl: fake.url });
  try {
    const ctl = new AbortController();
    const cut = await collectFrames(tts.runTts("Long answer.", ctl.signal), (f) => {
      if (f.kind === "TtsAudio") ctl.abort();
    });
    assert.equal(cut.at(-1)?.kind, "TtsAudio");
    while (field(fake.messages.at(-1), "type") !== "Clear") {
      await new Promise((r) => setTimeout(r, 5));
    }
    fake.audio = [chunk(2, 9)];
    const next = await collectFrames(tts.runTts("Short."));
    const audio = next.flatMap((f) => f.kind === "TtsAudio" ? [...f.audio.pcm] : []);
    assert.deepEqual(audio, [0x0909]);
    assert.equal(next.at(-1)?.kind, "TtsStopped");
  } finally {
    await tts.stop();
    await fake.close();
  }
});

Deno.test("deepgram tts: the model is the default voice; config errors are clear", () => {
  const tts = createDeepgramTts({ provider: "deepgram", apiKey: "k" });
  assert.match(tts.url(), /^wss:\/\/api\.deepgram\.com\/v1\/speak\?model=aura-2-helena-en&/);
  assert.equal(tts.sampleRate(), 24000);
  assert.throws(
    () => createDeepgramTts({ provider: "deepgram" }),
    (e) => e instanceof FlowcatError && e.kind === "config" && /apiKey/.test(e.message),
  );
  assert.throws(
    () => createDeepgramTts({ provider: "deepgram", apiKey: "k", options: { sample_rate: 22050 } }),
    (e) => e instanceof FlowcatError && e.kind === "config" && /24000/.test(e.message),
  );
});

Deno.test("deepgram tts: an utterance waiting its turn ends at once when aborted", async () => {
  const fake = new DeepgramTtsFake({ audio: [chunk(4, 1)] });
  fake.mode = "stall";
  const tts = createDeepgramTts({ provider: "deepgram", apiKey: fake.key, baseUrl: fake.url });
  try {
    const first = tts.runTts("Stalls.");
    assert.equal((await first.next()).value?.kind, "TtsStarted");
    const ctl = new AbortController();
    const waiting = collectFrames(tts.runTts("Waits.", ctl.signal));
    await new Promise((r) => setTimeout(r, 20));
    ctl.abort();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<"late">((r) => (timer = setTimeout(() => r("late"), 2000)));
    const ended = await Promise.race([waiting, late]);
    clearTimeout(timer);
    assert.deepEqual(ended, [], "the waiting utterance outlived its abort"); // never took the socket
    await first.return(undefined);
    assert.equal(fake.messages.filter((m) => field(m, "type") === "Speak").length, 1);
  } finally {
    await tts.stop();
    await fake.close();
  }
});
