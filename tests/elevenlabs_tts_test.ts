/**
 * Tests of the ElevenLabs stream-input text-to-speech client (providers/elevenlabs/tts.ts).
 * What every TTS client shares (blank text, auth, retries, aborts, dropped connections) is
 * checked by tests/tts_conformance_test.ts; this file keeps what is particular to this client.
 */

import assert from "node:assert/strict";
import {
  createElevenLabsTts,
  ELEVENLABS_DEFAULT_MODEL,
  ELEVENLABS_DEFAULT_VOICE,
  ElevenLabsTts,
} from "../providers/elevenlabs/tts.ts";
import { FlowcatError } from "../core/errors.ts";
import type { Frame, FrameOf } from "../core/frames.ts";
import { ElevenLabsFake } from "./fakes/elevenlabs_fake.ts";

const START = {
  audioInSampleRate: 16000,
  audioOutSampleRate: 24000,
  enableMetrics: true,
  enableUsageMetrics: true,
  enableTracing: false,
  reportOnlyInitialTtfb: false,
};

/** Bytes of a ramp of `n` 16-bit samples, so order and byte pairing show in the result. */
function rampBytes(n: number, from = 0): Uint8Array {
  const pcm = new Int16Array(n);
  for (let i = 0; i < n; i++) pcm[i] = (from + i * 37) % 30000 - 15000;
  return new Uint8Array(pcm.buffer);
}

/** Split `bytes` at the given offsets (odd ones included). */
function splitAt(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const out: Uint8Array[] = [];
  let at = 0;
  for (const cut of [...cuts, bytes.length]) {
    out.push(bytes.slice(at, cut));
    at = cut;
  }
  return out;
}

async function collect(it: AsyncIterable<Frame>): Promise<Frame[]> {
  const frames: Frame[] = [];
  for await (const f of it) frames.push(f);
  return frames;
}

function audioBytes(frames: Frame[]): Uint8Array {
  const parts = frames.filter((f): f is FrameOf<"TtsAudio"> => f.kind === "TtsAudio")
    .map((f) => new Uint8Array(f.audio.pcm.buffer, f.audio.pcm.byteOffset, f.audio.pcm.byteLength));
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

async function withFake(
  fake: ElevenLabsFake,
  body: (fake: ElevenLabsFake) => Promise<void>,
): Promise<void> {
  await fake.start();
  try {
    await body(fake);
  } finally {
    await fake.close();
  }
}

function client(
  fake: ElevenLabsFake,
  extra: Partial<Parameters<typeof createElevenLabsTts>[0]> = {},
) {
  return createElevenLabsTts({
    provider: "elevenlabs",
    apiKey: fake.key,
    baseUrl: fake.url,
    ...extra,
  });
}

Deno.test("elevenlabs: handshake carries voice, model, pcm format and the key in xi-api-key", async () => {
  await withFake(new ElevenLabsFake({ audio: [rampBytes(10)] }), async (fake) => {
    const tts = client(fake);
    await tts.start(START);
    assert.equal(tts.sampleRate(), 24000);
    await collect(tts.runTts("Hello world."));
    const conn = fake.connections[0];
    assert.equal(conn.url.pathname, `/v1/text-to-speech/${ELEVENLABS_DEFAULT_VOICE}/stream-input`);
    assert.equal(conn.url.searchParams.get("model_id"), ELEVENLABS_DEFAULT_MODEL);
    assert.equal(conn.url.searchParams.get("output_format"), "pcm_24000");
    assert.equal(conn.headers.get("xi-api-key"), fake.key);
    assert.ok(!conn.url.search.includes(fake.key), "key never in the URL");
    await tts.stop();
  });
});

Deno.test("elevenlabs: voice, model, language and a 16 kHz output_format follow the options", async () => {
  await withFake(new ElevenLabsFake({ audio: [rampBytes(4)] }), async (fake) => {
    const tts = client(fake, {
      voice: "voice/ü",
      model: "eleven_turbo_v2_5",
      language: "de-DE",
      options: { sample_rate: 16000 },
    });
    assert.equal(tts.sampleRate(), 16000);
    const frames = await collect(tts.runTts("Hallo."));
    const conn = fake.connections[0];
    assert.equal(
      conn.url.pathname,
      `/v1/text-to-speech/${encodeURIComponent("voice/ü")}/stream-input`,
    );
    assert.equal(conn.url.searchParams.get("model_id"), "eleven_turbo_v2_5");
    assert.equal(conn.url.searchParams.get("output_format"), "pcm_16000");
    assert.equal(conn.url.searchParams.get("language_code"), "de");
    const audio = frames.find((f): f is FrameOf<"TtsAudio"> => f.kind === "TtsAudio");
    assert.equal(audio?.audio.sampleRate, 16000);
  });
});

Deno.test("elevenlabs: the fake receives init, text with flush, then the end-of-input message", async () => {
  await withFake(new ElevenLabsFake({ audio: [rampBytes(8)] }), async (fake) => {
    const tts = client(fake, {
      options: { voice_settings: { stability: 0.4, similarity_boost: 0.8 } },
    });
    await collect(tts.runTts("  Good morning, caller.  "));
    assert.deepEqual(fake.connections[0].messages, [
      { text: " ", voice_settings: { stability: 0.4, similarity_boost: 0.8 } },
      { text: "Good morning, caller. ", flush: true },
      { text: "" },
    ]);
    // The key travels only in the header, never in a message.
    assert.ok(!JSON.stringify(fake.connections[0].messages).includes(fake.key));
  });
});

Deno.test("elevenlabs: audio split at odd byte offsets comes out whole, in order, framed right", async () => {
  const pcm = rampBytes(1001);
  await withFake(new ElevenLabsFake({ audio: splitAt(pcm, [1, 333, 334, 1201]) }), async (fake) => {
    const tts = client(fake);
    const text = "Your order ships tomorrow.";
    const frames = await collect(tts.runTts(text));
    const kinds = frames.map((f) => f.kind);
    assert.equal(kinds[0], "TtsStarted");
    assert.deepEqual(kinds.slice(-2), ["Metrics", "TtsStopped"]);
    assert.ok(kinds.slice(1, -2).every((k) => k === "TtsAudio"));
    assert.ok(kinds.length >= 5, `several audio frames, got ${kinds}`);
    assert.deepEqual(audioBytes(frames), pcm);
    for (const f of frames) {
      if (f.kind === "TtsAudio") assert.equal(f.audio.sampleRate, 24000);
    }
    const started = frames[0] as FrameOf<"TtsStarted">;
    const stopped = frames.at(-1) as FrameOf<"TtsStopped">;
    assert.ok(started.contextId);
    assert.equal(stopped.contextId, started.contextId);
    const metrics = frames.at(-2) as FrameOf<"Metrics">;
    assert.deepEqual(metrics.data, [{
      type: "tts_usage",
      processor: "elevenlabs",
      model: ELEVENLABS_DEFAULT_MODEL,
      characters: text.length,
    }]);
    // The socket is closed once the utterance is done.
    await fake.waitFor(() => fake.connections[0].closeCode !== undefined, 2000, "socket close");
  });
});

Deno.test("elevenlabs: a server error message becomes a FlowcatError naming the provider", async () => {
  await withFake(new ElevenLabsFake({ mode: "error" }), async (fake) => {
    const tts = client(fake, { provider: "my-eleven" });
    await assert.rejects(collect(tts.runTts("Hello.")), (err: unknown) => {
      assert.ok(err instanceof FlowcatError);
      assert.match(err.message, /^my-eleven: /);
      assert.match(err.message, /Voice not found for this model/);
      assert.ok(!err.message.includes(fake.key));
      return true;
    });
  });
});

Deno.test("elevenlabs: aborting mid-stream closes the socket and ends the iterator", async () => {
  await withFake(new ElevenLabsFake({ mode: "stall", audio: [rampBytes(50)] }), async (fake) => {
    const tts = client(fake);
    const ac = new AbortController();
    const kinds: string[] = [];
    for await (const f of tts.runTts("A long answer that gets interrupted.", ac.signal)) {
      kinds.push(f.kind);
      if (f.kind === "TtsAudio") ac.abort();
    }
    assert.deepEqual(kinds, ["TtsStarted", "TtsAudio"]);
    await fake.waitFor(() => fake.connections[0].closeCode !== undefined, 2000, "socket close");
    assert.equal(fake.connections[0].closeCode, 1000);
  });
});

Deno.test("elevenlabs: a handshake that never completes times out", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const c of listener) conns.push(c);
  })();
  try {
    const tts = createElevenLabsTts({
      provider: "elevenlabs",
      apiKey: "k",
      baseUrl: `ws://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
      timeoutMs: 150,
    });
    await assert.rejects(collect(tts.runTts("Hi.")), (err: unknown) => {
      assert.ok(err instanceof FlowcatError);
      assert.equal(err.kind, "timeout");
      return true;
    });
  } finally {
    for (const c of conns) c.close();
    listener.close();
    await accepting;
  }
});

Deno.test("elevenlabs: config errors are caught at construction; empty text dials nothing", async () => {
  assert.throws(
    () => new ElevenLabsTts({ provider: "elevenlabs" }),
    /elevenlabs: apiKey is required/,
  );
  assert.throws(
    () =>
      new ElevenLabsTts({ provider: "elevenlabs", apiKey: "k", options: { sample_rate: 12345 } }),
    (err: unknown) => err instanceof FlowcatError && err.kind === "config",
  );
  const tts = new ElevenLabsTts({
    provider: "elevenlabs",
    apiKey: "k",
    baseUrl: "https://eu.example",
  });
  assert.match(tts.url(), /^wss:\/\/eu\.example\/v1\/text-to-speech\//);
  const frames = await collect(tts.runTts("   "));
  assert.deepEqual(frames.map((f) => f.kind), ["TtsStarted", "TtsStopped"]);
});
