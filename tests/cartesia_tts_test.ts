/**
 * Tests of the Cartesia WebSocket text-to-speech client (providers/cartesia/tts.ts).
 * What every TTS client shares (blank text, auth, retries, aborts, dropped connections) is
 * checked by tests/tts_conformance_test.ts; this file keeps what is particular to this client.
 */

import assert from "node:assert/strict";
import {
  CARTESIA_DEFAULT_MODEL,
  CARTESIA_DEFAULT_VERSION,
  CARTESIA_DEFAULT_VOICE,
  CartesiaTts,
  createCartesiaTts,
} from "../providers/cartesia/tts.ts";
import { FlowcatError } from "../core/errors.ts";
import type { Frame, FrameOf } from "../core/frames.ts";
import type { ServiceOptions } from "../providers/service_options.ts";
import { CartesiaFake } from "./fakes/cartesia_fake.ts";

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
  for (let i = 0; i < n; i++) pcm[i] = (from + i * 53) % 30000 - 15000;
  return new Uint8Array(pcm.buffer);
}

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

/** Run `body` with a started fake and a client on it; both are closed afterwards. */
async function withClient(
  fake: CartesiaFake,
  body: (tts: CartesiaTts, fake: CartesiaFake) => Promise<void>,
  extra: Partial<ServiceOptions> = {},
): Promise<void> {
  await fake.start();
  const tts = createCartesiaTts({
    provider: "cartesia",
    apiKey: fake.key,
    baseUrl: fake.url,
    ...extra,
  });
  try {
    await body(tts, fake);
  } finally {
    await tts.stop();
    await fake.close();
  }
}

const requests = (fake: CartesiaFake) => fake.messages.filter((m) => "transcript" in m);

Deno.test("cartesia: start() dials with cartesia_version in the query and the key in X-API-Key", async () => {
  await withClient(new CartesiaFake(), async (tts, fake) => {
    await tts.start(START);
    assert.equal(fake.connections.length, 1);
    const conn = fake.connections[0];
    assert.equal(conn.url.pathname, "/tts/websocket");
    assert.equal(conn.url.searchParams.get("cartesia_version"), CARTESIA_DEFAULT_VERSION);
    assert.equal(conn.headers.get("x-api-key"), fake.key);
    assert.equal(conn.url.searchParams.get("api_key"), null, "key never in the URL");
    assert.ok(!conn.url.search.includes(fake.key));
  });
});

Deno.test("cartesia: the generation request has the documented shape", async () => {
  await withClient(new CartesiaFake({ audio: [rampBytes(8)] }), async (tts, fake) => {
    const text = "Your table is ready.";
    const frames = await collect(tts.runTts(text));
    const started = frames[0] as FrameOf<"TtsStarted">;
    assert.deepEqual(requests(fake), [{
      context_id: started.contextId,
      model_id: CARTESIA_DEFAULT_MODEL,
      transcript: text,
      voice: { mode: "id", id: CARTESIA_DEFAULT_VOICE },
      output_format: { container: "raw", encoding: "pcm_s16le", sample_rate: 24000 },
      language: "en",
      continue: false,
    }]);
    assert.ok(!JSON.stringify(fake.messages).includes(fake.key));
  });
});

Deno.test("cartesia: model, voice, language, rate and version follow the options", async () => {
  await withClient(
    new CartesiaFake({ audio: [rampBytes(8)] }),
    async (tts, fake) => {
      assert.equal(tts.sampleRate(), 16000);
      const frames = await collect(tts.runTts("Hallo."));
      const req = requests(fake)[0];
      assert.equal(req.model_id, "sonic-2");
      assert.deepEqual(req.voice, { mode: "id", id: "voice-123" });
      assert.equal(req.language, "de");
      assert.deepEqual(req.output_format, {
        container: "raw",
        encoding: "pcm_s16le",
        sample_rate: 16000,
      });
      assert.deepEqual(req.generation_config, { speed: 1.1 });
      assert.equal(fake.connections[0].url.searchParams.get("cartesia_version"), "2025-04-16");
      const audio = frames.find((f): f is FrameOf<"TtsAudio"> => f.kind === "TtsAudio");
      assert.equal(audio?.audio.sampleRate, 16000);
    },
    {
      model: "sonic-2",
      voice: "voice-123",
      language: "de-DE",
      options: {
        sample_rate: 16000,
        cartesia_version: "2025-04-16",
        generation_config: { speed: 1.1 },
      },
    },
  );
});

Deno.test("cartesia: chunks split at odd byte offsets come out whole, in order, framed right", async () => {
  const pcm = rampBytes(777);
  await withClient(new CartesiaFake({ audio: splitAt(pcm, [3, 4, 501, 1100]) }), async (tts) => {
    const text = "Thanks for calling.";
    const frames = await collect(tts.runTts(text));
    const kinds = frames.map((f) => f.kind);
    assert.equal(kinds[0], "TtsStarted");
    assert.deepEqual(kinds.slice(-2), ["Metrics", "TtsStopped"]);
    assert.ok(kinds.slice(1, -2).every((k) => k === "TtsAudio"));
    assert.ok(kinds.length >= 5, `several audio frames, got ${kinds}`);
    assert.deepEqual(audioBytes(frames), pcm);
    const started = frames[0] as FrameOf<"TtsStarted">;
    assert.equal((frames.at(-1) as FrameOf<"TtsStopped">).contextId, started.contextId);
    for (const f of frames) {
      if (f.kind === "TtsAudio") {
        assert.equal(f.audio.sampleRate, 24000);
        assert.equal(f.contextId, started.contextId);
      }
    }
    assert.deepEqual((frames.at(-2) as FrameOf<"Metrics">).data, [{
      type: "tts_usage",
      processor: "cartesia",
      model: CARTESIA_DEFAULT_MODEL,
      characters: text.length,
    }]);
  });
});

Deno.test("cartesia: two sequential utterances share one socket with distinct context ids", async () => {
  await withClient(new CartesiaFake({ audio: [rampBytes(20)] }), async (tts, fake) => {
    await tts.start(START);
    const a = await collect(tts.runTts("First sentence."));
    const b = await collect(tts.runTts("Second sentence."));
    assert.equal(fake.connections.length, 1);
    const ids = requests(fake).map((r) => r.context_id);
    assert.equal(ids.length, 2);
    assert.notEqual(ids[0], ids[1]);
    assert.equal((a[0] as FrameOf<"TtsStarted">).contextId, ids[0]);
    assert.equal((b[0] as FrameOf<"TtsStarted">).contextId, ids[1]);
    assert.deepEqual(audioBytes(a), rampBytes(20));
    assert.deepEqual(audioBytes(b), rampBytes(20));
    assert.equal(fake.connections[0].closeCode, undefined, "socket stays open between calls");
  });
});

Deno.test("cartesia: a server error names the provider and leaves the socket usable", async () => {
  await withClient(
    new CartesiaFake({ mode: "error", audio: [rampBytes(4)] }),
    async (tts, fake) => {
      await assert.rejects(collect(tts.runTts("Hello.")), (err: unknown) => {
        assert.ok(err instanceof FlowcatError);
        assert.match(err.message, /^my-cartesia: Invalid model: .*\(status 400\)$/);
        assert.ok(!err.message.includes(fake.key));
        return true;
      });
      // The failed context was ended by the server: no cancel is owed for it.
      assert.ok(!fake.messages.some((m) => m.cancel === true));
      fake.mode = "normal";
      const frames = await collect(tts.runTts("Hello again."));
      assert.deepEqual(audioBytes(frames), rampBytes(4));
      assert.equal(fake.connections.length, 1);
    },
    { provider: "my-cartesia" },
  );
});

Deno.test("cartesia: aborting mid-stream sends cancel for the context and ends the iterator", async () => {
  await withClient(
    new CartesiaFake({ mode: "stall", audio: [rampBytes(50)] }),
    async (tts, fake) => {
      const ac = new AbortController();
      const kinds: string[] = [];
      let contextId: string | undefined;
      for await (const f of tts.runTts("A long answer that gets interrupted.", ac.signal)) {
        kinds.push(f.kind);
        if (f.kind === "TtsStarted") contextId = f.contextId;
        if (f.kind === "TtsAudio") ac.abort();
      }
      assert.deepEqual(kinds, ["TtsStarted", "TtsAudio"]);
      await fake.waitFor(() => fake.messages.some((m) => m.cancel === true), 2000, "cancel");
      assert.deepEqual(fake.messages.at(-1), { context_id: contextId, cancel: true });
      // The socket survives a cancelled context.
      fake.mode = "normal";
      fake.audio = [rampBytes(6)];
      assert.deepEqual(audioBytes(await collect(tts.runTts("Next."))), rampBytes(6));
      assert.equal(fake.connections.length, 1);
    },
  );
});

Deno.test("cartesia: stop() closes the socket", async () => {
  await withClient(new CartesiaFake(), async (tts, fake) => {
    await tts.start(START);
    await tts.stop();
    await fake.waitFor(() => fake.connections[0].closeCode !== undefined, 2000, "socket close");
    assert.equal(fake.connections[0].closeCode, 1000);
    await tts.stop(); // idempotent
  });
});

Deno.test("cartesia: config errors are caught at construction; empty text dials nothing", async () => {
  assert.throws(() => new CartesiaTts({ provider: "cartesia" }), /cartesia: apiKey is required/);
  assert.throws(
    () => new CartesiaTts({ provider: "cartesia", apiKey: "k", options: { sample_rate: 11025 } }),
    (err: unknown) => err instanceof FlowcatError && err.kind === "config",
  );
  const tts = new CartesiaTts({
    provider: "cartesia",
    apiKey: "k",
    baseUrl: "https://api.example/",
  });
  assert.equal(
    tts.url(),
    `wss://api.example/tts/websocket?cartesia_version=${CARTESIA_DEFAULT_VERSION}`,
  );
  const frames = await collect(tts.runTts(""));
  assert.deepEqual(frames.map((f) => f.kind), ["TtsStarted", "TtsStopped"]);
  await tts.stop();
});
