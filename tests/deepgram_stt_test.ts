/**
 * Deepgram live STT client against a local fake speaking the real `/v1/listen` protocol.
 * What every STT client shares (transcripts at 8 and 16 kHz, muting, auth, recovery from a
 * server failure) is checked by tests/stt_conformance_test.ts; this file keeps the rest.
 */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import type { Frame } from "../core/frames.ts";
import { createDeepgramStt, DeepgramStt } from "../providers/deepgram/stt.ts";
import type { ServiceOptions } from "../providers/service_options.ts";
import { DeepgramFake } from "./fakes/deepgram_fake.ts";
import { sleep, until } from "./_core_helpers.ts";
import {
  firstRejection,
  ramp20ms as frame20ms,
  SERVICE_START_PARAMS as PARAMS,
  sttFrames,
} from "./_service_helpers.ts";

const KEY = "dg-secret-key-123";
/** Start a fake and a client on it; `fn` runs with both, then both are closed. */
async function withClient(
  opts: Partial<ServiceOptions>,
  fn: (stt: DeepgramStt, fake: DeepgramFake) => Promise<void>,
): Promise<void> {
  const fake = new DeepgramFake({ apiKey: KEY });
  fake.start();
  const stt = new DeepgramStt({ provider: "deepgram", apiKey: KEY, baseUrl: fake.url, ...opts });
  try {
    await stt.start(PARAMS);
    await fake.waitForConnection(1);
    await fn(stt, fake);
  } finally {
    await stt.stop();
    await fake.close();
  }
}

const collect = (stt: DeepgramStt, want: number, ms?: number) =>
  sttFrames(stt, want, undefined, ms);

function summary(frames: Frame[]): string[] {
  return frames.map((f) => {
    if (f.kind === "InterimTranscription") return `interim:${f.text}:${f.userId}`;
    if (f.kind === "Transcription") return `final:${f.text}:${f.userId}:${f.final}`;
    return f.kind;
  });
}

Deno.test("deepgram: URL query and Token auth header", async () => {
  await withClient(
    { model: "nova-2", language: "es", options: { endpointing: 500, query: { diarize: true } } },
    (stt, fake) => {
      assert.equal(stt.name(), "deepgram");
      const req = fake.requests[0];
      assert.equal(req.path, "/v1/listen");
      assert.equal(req.headers.authorization, `Token ${KEY}`);
      assert.deepEqual(req.query, {
        model: "nova-2",
        encoding: "linear16",
        sample_rate: "16000",
        channels: "1",
        interim_results: "true",
        punctuate: "true",
        smart_format: "true",
        language: "es",
        endpointing: "500",
        utterance_end_ms: "1000",
        diarize: "true",
      });
      return Promise.resolve();
    },
  );
});

Deno.test("deepgram: defaults (nova-3, no language, 300 ms endpointing) via the factory", async () => {
  const fake = new DeepgramFake({ apiKey: KEY });
  fake.start();
  const stt = createDeepgramStt({ provider: "deepgram", apiKey: KEY, baseUrl: `${fake.url}/v1` });
  try {
    await stt.start(PARAMS);
    const q = fake.requests[0].query;
    assert.equal(fake.requests[0].path, "/v1/listen");
    assert.equal(q.model, "nova-3");
    assert.equal(q.endpointing, "300");
    assert.equal(q.language, undefined);
  } finally {
    await stt.stop?.();
    await fake.close();
  }
});

Deno.test("deepgram: 8 kHz audio arrives as 16 kHz linear16 (twice the bytes)", async () => {
  await withClient({}, async (stt, fake) => {
    for (let i = 0; i < 10; i++) assert.deepEqual(await stt.runStt(frame20ms(8000)), []);
    // 10 x 160 samples at 8 kHz -> 10 x 320 samples at 16 kHz -> 6400 bytes.
    await until(() => fake.audioBytes() === 6400, 3000, "6400 audio bytes");
    assert.equal(fake.current.audio.length, 10);
    assert.ok(fake.current.audio.every((a) => a.length === 640));
  });
});

Deno.test("deepgram: 16 kHz audio passes through as little-endian samples", async () => {
  await withClient({}, async (stt, fake) => {
    const f = frame20ms(16000);
    await stt.runStt(f);
    await until(() => fake.audioBytes() === 640, 3000, "640 audio bytes");
    const got = fake.current.audio[0];
    const view = new DataView(got.buffer, got.byteOffset, got.byteLength);
    const samples = Array.from({ length: 320 }, (_, i) => view.getInt16(i * 2, true));
    assert.deepEqual(samples, Array.from(f.pcm));
  });
});

Deno.test("deepgram: interim then final results become frames in order", async () => {
  await withClient({}, async (stt, fake) => {
    fake.sendResult({ transcript: "hel", isFinal: false });
    fake.sendResult({ transcript: "hello wor", isFinal: false });
    fake.sendResult({ transcript: "Hello world.", isFinal: true, speechFinal: true });
    fake.sendResult({ transcript: "", isFinal: true, speechFinal: true }); // silence: nothing
    const frames = await collect(stt, 3);
    await sleep(30);
    frames.push(...await stt.runStt(frame20ms(16000)));
    assert.deepEqual(summary(frames), [
      "interim:hel:user",
      "interim:hello wor:user",
      "final:Hello world.:user:true",
    ]);
  });
});

Deno.test("deepgram: is_final pieces are joined until speech_final; UtteranceEnd flushes", async () => {
  await withClient({ language: "en" }, async (stt, fake) => {
    fake.sendResult({ transcript: "I would like", isFinal: true });
    fake.sendResult({ transcript: "to book", isFinal: false });
    fake.sendResult({ transcript: "to book a table.", isFinal: true, speechFinal: true });
    fake.sendResult({ transcript: "For two.", isFinal: true });
    fake.sendUtteranceEnd();
    const frames = await collect(stt, 5);
    assert.deepEqual(summary(frames), [
      "interim:I would like:user",
      "interim:I would like to book:user",
      "final:I would like to book a table.:user:true",
      "interim:For two.:user",
      "final:For two.:user:true",
    ]);
    const last = frames[4];
    assert.ok(last.kind === "Transcription" && last.language === "en");
  });
});

Deno.test("deepgram: detected language from the result wins over the configured one", async () => {
  await withClient({ language: "multi" }, async (stt, fake) => {
    fake.sendResult({ transcript: "Hola.", isFinal: true, speechFinal: true, language: "es" });
    const [f] = await collect(stt, 1);
    assert.ok(f.kind === "Transcription" && f.language === "es" && f.text === "Hola.");
  });
});

Deno.test("deepgram: muted sends no audio and KeepAlive holds the socket", async () => {
  await withClient({ options: { keepalive_ms: 40 } }, async (stt, fake) => {
    stt.setMuted(true);
    for (let i = 0; i < 5; i++) await stt.runStt(frame20ms(8000));
    await until(() => fake.controls("KeepAlive").length >= 2, 3000, "two KeepAlives");
    assert.equal(fake.audioBytes(), 0);
    stt.setMuted(false);
    await stt.runStt(frame20ms(8000));
    await until(() => fake.audioBytes() === 640, 3000, "audio after unmute");
  });
});

Deno.test("deepgram: speechStopped sends Finalize; the from_finalize answer flushes", async () => {
  await withClient({}, async (stt, fake) => {
    fake.sendResult({ transcript: "cancel my", isFinal: true });
    await collect(stt, 1); // the held piece as an interim
    assert.deepEqual(await stt.speechStopped(), []);
    await until(() => fake.controls("Finalize").length === 1, 3000, "Finalize");
    const frames = await collect(stt, 1);
    assert.deepEqual(summary(frames), ["final:cancel my finalized:user:true"]);
  });
});

Deno.test("deepgram: a failed reconnect makes the next runStt throw, naming the provider", async () => {
  await withClient(
    { options: { reconnect_delay_ms: 10, retry_interval_ms: 60_000 } },
    async (stt, fake) => {
      fake.refuseWith = 503;
      await fake.dropConnection();
      await until(() => fake.requests.length === 2, 3000, "reconnect attempt");
      await sleep(50);
      const err = await stt.runStt(frame20ms(16000)).then(() => undefined, (e) => e);
      assert.ok(err instanceof FlowcatError, `expected FlowcatError, got ${err}`);
      assert.match(err.message, /deepgram/);
      assert.match(err.message, /503/);
      assert.ok(!err.message.includes(KEY));
      // Reported once; later calls (inside the retry interval) just return nothing.
      assert.deepEqual(await stt.runStt(frame20ms(16000)), []);
    },
  );
});

Deno.test("deepgram: no key for the Deepgram cloud is a config error", async () => {
  const stt = createDeepgramStt({ provider: "deepgram" });
  const err = await stt.start(PARAMS).then(() => undefined, (e) => e);
  assert.ok(err instanceof FlowcatError && err.kind === "config");
  assert.match(err.message, /DEEPGRAM_API_KEY/);
});

Deno.test("deepgram: a server that never answers the upgrade times out", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const c of listener) held.push(c); // accept, never answer
  })();
  const port = (listener.addr as Deno.NetAddr).port;
  const stt = createDeepgramStt({
    provider: "deepgram",
    apiKey: KEY,
    baseUrl: `ws://127.0.0.1:${port}`,
    timeoutMs: 150,
  });
  try {
    const err = await stt.start(PARAMS).then(() => undefined, (e) => e);
    assert.ok(err instanceof FlowcatError && err.kind === "timeout", String(err));
    assert.match(err.message, /deepgram/);
  } finally {
    await stt.stop?.();
    for (const c of held) c.close();
    listener.close();
    await accepting.catch(() => {});
  }
});

Deno.test("deepgram: a stream Error message becomes a thrown FlowcatError", async () => {
  await withClient({}, async (stt, fake) => {
    fake.send({ type: "Error", description: "Bad audio", message: "DATA-0000", variant: "x" });
    const err = await firstRejection(() => stt.runStt(frame20ms(16000)));
    assert.ok(err instanceof FlowcatError && err.kind === "protocol");
    assert.match(err.message, /deepgram: Bad audio/);
  });
});

Deno.test("deepgram: stop sends CloseStream and closes the socket", async () => {
  const fake = new DeepgramFake({ apiKey: KEY });
  fake.start();
  const stt = createDeepgramStt({ provider: "deepgram", apiKey: KEY, baseUrl: fake.url });
  try {
    await stt.start(PARAMS);
    const conn = await fake.waitForConnection(1);
    await stt.stop?.();
    await until(() => conn.socket.readyState === WebSocket.CLOSED, 3000, "socket closed");
    assert.deepEqual(conn.controls.map((m) => m.type), ["CloseStream"]);
    assert.equal(fake.requests.length, 1); // no reconnect after a deliberate stop
  } finally {
    await fake.close();
  }
});
