/**
 * Fish Audio TTS: what is particular to its wire (the shared behaviour is in
 * tests/tts_conformance_test.ts): the MessagePack codec against the format's own examples, the
 * handshake headers, a session per utterance (start, text, stop), config errors.
 */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import { createFishTts } from "../providers/fish/tts.ts";
import { packMsg, unpackMsg } from "../providers/fish/wire.ts";
import { collectFrames } from "./_tts_conformance.ts";
import { FishFake } from "./fakes/fish_tts_fake.ts";

const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
const bytes = (h: string) => Uint8Array.fromHex(h);

Deno.test("fish wire: MessagePack encodings from the specification", () => {
  // msgpack.org's front-page example.
  assert.equal(hex(packMsg({ compact: true, schema: 0 })), "82a7636f6d70616374c3a6736368656d6100");
  assert.equal(hex(packMsg(null)), "c0");
  assert.equal(hex(packMsg(-1)), "ff");
  assert.equal(hex(packMsg(200)), "ccc8");
  assert.equal(hex(packMsg(70000)), "ce00011170");
  assert.equal(hex(packMsg(1.5)), "cb3ff8000000000000");
  assert.equal(hex(packMsg(new Uint8Array([1, 2]))), "c4020102");
  assert.equal(hex(packMsg("a".repeat(32))).slice(0, 4), "d920");
  assert.equal(hex(packMsg([1, "x"])), "9201a178");
  assert.deepEqual(unpackMsg(bytes("82a7636f6d70616374c3a6736368656d6100")), {
    compact: true,
    schema: 0,
  });
  assert.equal(unpackMsg(bytes("d1ff38")), -200); // int16
  assert.equal(unpackMsg(bytes("ca3fc00000")), 1.5); // float32
  assert.deepEqual(unpackMsg(bytes("c50003010203")), new Uint8Array([1, 2, 3])); // bin16
  assert.throws(() => unpackMsg(bytes("c403ff")), RangeError); // truncated
  assert.throws(() => unpackMsg(bytes("d40100")), RangeError); // fixext: unsupported
});

Deno.test("fish tts: headers, start request, a session per utterance", async () => {
  const fake = new FishFake({ audio: [new Uint8Array([5, 0, 6, 0])] });
  const tts = createFishTts({
    provider: "fish",
    apiKey: fake.key,
    baseUrl: fake.url,
    voice: "802e3bc2b27e49c2995d23ef70e6ac89",
    options: { sample_rate: 16000, latency: "normal", speed: 1.2 },
  });
  try {
    const frames = await collectFrames(tts.runTts("Hello."));
    const audio = frames.flatMap((f) => f.kind === "TtsAudio" ? [...f.audio.pcm] : []);
    assert.deepEqual(audio, [5, 6]);
    await collectFrames(tts.runTts("Again."));
    assert.equal(fake.connections.length, 2);
    const conn = fake.connections[0];
    assert.equal(conn.headers.get("authorization"), `Bearer ${fake.key}`);
    assert.equal(conn.headers.get("model"), "s2-pro");
    assert.deepEqual(conn.messages, [
      {
        event: "start",
        request: {
          text: "",
          format: "pcm",
          sample_rate: 16000,
          latency: "normal",
          normalize: true,
          reference_id: "802e3bc2b27e49c2995d23ef70e6ac89",
          prosody: { speed: 1.2, volume: 0 },
        },
      },
      { event: "text", text: "Hello." },
      { event: "stop" },
    ]);
  } finally {
    await tts.stop();
    await fake.close();
  }
});

Deno.test("fish tts: config errors", () => {
  const config = (e: unknown) => e instanceof FlowcatError && e.kind === "config";
  assert.throws(() => createFishTts({ provider: "fish" }), config);
  assert.throws(
    () => createFishTts({ provider: "fish", apiKey: "k", options: { sample_rate: 22050 } }),
    config,
  );
  assert.equal(createFishTts({ provider: "fish", apiKey: "k" }).sampleRate(), 24000);
});
