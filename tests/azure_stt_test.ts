/** Azure Speech STT client against a local fake speaking the Speech SDK's WebSocket protocol. */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import type { Frame } from "../core/frames.ts";
import { AzureSpeechStt, createAzureStt } from "../providers/azure/stt.ts";
import type { ServiceOptions } from "../providers/service_options.ts";
import { AzureSpeechFake } from "./fakes/azure_speech_fake.ts";
import { sleep, until } from "./_core_helpers.ts";
import {
  firstRejection,
  ramp20ms as frame20ms,
  SERVICE_START_PARAMS as PARAMS,
  sttFrames,
} from "./_service_helpers.ts";

const KEY = "azure-speech-SECRET-42";

async function withStt(
  opts: Partial<ServiceOptions>,
  fn: (stt: AzureSpeechStt, fake: AzureSpeechFake) => Promise<void>,
): Promise<void> {
  const fake = new AzureSpeechFake({ key: KEY });
  fake.start();
  const stt = new AzureSpeechStt({ provider: "azure", apiKey: KEY, baseUrl: fake.url, ...opts });
  try {
    await stt.start(PARAMS);
    await until(() => fake.sent("audio").length >= 1, 3000, "the WAV header");
    await fn(stt, fake);
  } finally {
    await stt.stop();
    await fake.close();
  }
}

const collect = (stt: AzureSpeechStt, want: number) => sttFrames(stt, want, frame20ms(8000));
const rejection = firstRejection;

Deno.test("azure stt: upgrade, speech.config, WAV header, then 16 kHz PCM audio messages", async () => {
  await withStt({}, async (stt, fake) => {
    const c = fake.current;
    assert.equal(c.headers["ocp-apim-subscription-key"], KEY);
    assert.match(c.headers["x-connectionid"], /^[0-9a-f]{32}$/);
    assert.deepEqual(c.query, { language: "en-US", format: "simple" });
    assert.ok(!stt.url().includes(KEY));
    const [config, context, header] = c.messages;
    assert.equal(context.path, "speech.context");
    assert.deepEqual(JSON.parse(context.text!), { phraseDetection: {} });
    assert.equal(context.headers["x-requestid"], config.headers["x-requestid"]);
    assert.equal(config.path, "speech.config");
    assert.equal(config.headers["content-type"], "application/json");
    assert.equal(JSON.parse(config.text!).context.system.name, "SpeechSDK");
    assert.equal(header.path, "audio");
    assert.equal(header.headers["content-type"], "audio/x-wav");
    assert.match(header.headers["x-timestamp"], /^\d{4}-\d\d-\d\dT/);
    assert.equal(header.headers["x-requestid"], config.headers["x-requestid"]);
    const wav = new DataView(header.binary!.buffer);
    assert.equal(new TextDecoder().decode(header.binary!.subarray(0, 4)), "RIFF");
    assert.equal(wav.getUint32(24, true), 16000);
    assert.equal(wav.getUint16(34, true), 16);
    for (let i = 0; i < 10; i++) await stt.runStt(frame20ms(8000));
    // 200 ms of 8 kHz audio arrives as 16 kHz 16-bit PCM (minus the resampler's delay).
    const id = header.headers["x-requestid"];
    await until(() => (c.audio.get(id) ?? 0) > 5000, 3000, "audio bytes");
    assert.ok(c.audio.get(id)! <= 6400);
  });
});

Deno.test("azure stt: hypotheses are interim, a Success phrase is one final utterance", async () => {
  await withStt({ language: "de-DE" }, async (stt, fake) => {
    assert.equal(fake.current.query.language, "de-DE");
    fake.hypothesis("guten");
    fake.hypothesis("guten Tag");
    fake.phrase("", "NoMatch");
    fake.phrase("Guten Tag.");
    const frames = await collect(stt, 3);
    assert.deepEqual(frames.map((f) => [f.kind, (f as { text: string }).text]), [
      ["InterimTranscription", "guten"],
      ["InterimTranscription", "guten Tag"],
      ["Transcription", "Guten Tag."],
    ]);
    const final = frames[2] as Frame & {
      final: boolean;
      endOfUtterance: boolean;
      language: string;
    };
    assert.equal(final.final, true);
    assert.equal(final.endOfUtterance, true);
    assert.equal(final.language, "de-DE");
  });
});

Deno.test("azure stt: 8 kHz is sent as is; muted audio goes out as silence", async () => {
  await withStt(
    { options: { sample_rate: 8000, segmentation_silence_ms: 300 } },
    async (stt, fake) => {
      const c = fake.current;
      assert.equal(c.query.segmentationSilenceTimeoutMs, "300");
      assert.equal(new DataView(c.messages[2].binary!.buffer).getUint32(24, true), 8000);
      const context = JSON.parse(c.messages[1].text!);
      assert.deepEqual(context.phraseDetection.conversation.segmentation, {
        mode: "Custom",
        segmentationSilenceTimeoutMs: 300,
      });
      await stt.runStt(frame20ms(8000));
      stt.setMuted(true);
      await stt.runStt(frame20ms(8000));
      await until(() => fake.sent("audio").length >= 3, 3000, "two audio messages");
      const [loud, quiet] = fake.sent("audio").slice(1).map((m) => m.binary!);
      assert.equal(loud.length, 320);
      assert.equal(quiet.length, 320);
      assert.ok(loud.some((b) => b !== 0));
      assert.ok(quiet.every((b) => b === 0));
    },
  );
});

Deno.test("azure stt: a turn the service ends is followed by a new turn on the same socket", async () => {
  await withStt({}, async (stt, fake) => {
    const first = fake.current.turn;
    fake.turnEnd();
    await until(() => fake.current.turn !== first, 3000, "a new WAV header");
    assert.equal(fake.connections.length, 1);
    const contexts = fake.sent("speech.context").map((m) => m.headers["x-requestid"]);
    assert.deepEqual(contexts, [first, fake.current.turn], "each turn opens with speech.context");
    fake.phrase("still here");
    const [f] = await collect(stt, 1);
    assert.equal((f as { text: string }).text, "still here");
  });
});

Deno.test("azure stt: stop sends the empty end-of-audio message", async () => {
  const fake = new AzureSpeechFake({ key: KEY });
  fake.start();
  const stt = createAzureStt({ provider: "azure", apiKey: KEY, baseUrl: fake.url });
  try {
    await stt.start(PARAMS);
    await stt.stop!();
    await stt.stop!();
    const audio = fake.sent("audio");
    assert.equal(audio.at(-1)!.binary, undefined, "no payload: end of stream");
  } finally {
    await fake.close();
  }
});

Deno.test("azure stt: a refused key is an auth error, 429 a closed one, neither leaks the key", async () => {
  const fake = new AzureSpeechFake({ key: "the-right-key" });
  fake.start();
  try {
    const wrong = new AzureSpeechStt({ provider: "azure", apiKey: KEY, baseUrl: fake.url });
    await assert.rejects(
      wrong.start(PARAMS),
      (e: unknown) =>
        e instanceof FlowcatError && e.kind === "auth" && /HTTP 401/.test(e.message) &&
        !e.message.includes(KEY),
    );
    fake.refuseWith = 429;
    const busy = new AzureSpeechStt({
      provider: "azure",
      apiKey: "the-right-key",
      baseUrl: fake.url,
    });
    await assert.rejects(
      busy.start(PARAMS),
      (e: unknown) =>
        e instanceof FlowcatError && e.kind === "closed" && /HTTP 429/.test(e.message),
    );
  } finally {
    await fake.close();
  }
});

Deno.test("azure stt: a failure status in a phrase surfaces on the next runStt", async () => {
  await withStt({}, async (stt, fake) => {
    fake.phrase("", "TooManyRequests");
    const err = await rejection(() => stt.runStt(frame20ms(8000)));
    assert.ok(err instanceof FlowcatError);
    assert.match(err.message, /recognition failed \(TooManyRequests\)/);
  });
});

Deno.test("azure stt: a dropped socket is reopened with a new config and turn", async () => {
  await withStt({}, async (stt, fake) => {
    await fake.drop(1011, "Internal service error");
    await until(() => fake.connections.length === 2, 3000, "a second connection");
    await until(() => fake.current.turn !== undefined, 3000, "a turn on the new socket");
    assert.deepEqual(fake.current.messages.map((m) => m.path).slice(0, 3), [
      "speech.config",
      "speech.context",
      "audio",
    ]);
    fake.phrase("after the drop");
    const [f] = await collect(stt, 1);
    assert.equal((f as { text: string }).text, "after the drop");
  });
});

Deno.test("azure stt: audio said while the socket is reopened is sent on the new one", async () => {
  await withStt({}, async (stt, fake) => {
    fake.upgradeDelayMs = 500;
    await fake.drop();
    // The client is redialling (its upgrade waits at the fake): what it is fed now is held.
    await until(() => fake.requestsSeen === 2, 3000, "the redial");
    for (let i = 0; i < 5; i++) await stt.runStt(frame20ms(8000));
    await until(() => fake.connections.length === 2, 3000, "a second connection");
    const c = fake.current;
    await until(
      () => c.turn !== undefined && (c.audio.get(c.turn) ?? 0) >= 3000,
      3000,
      "held audio",
    );
    // Five 20 ms frames at 16 kHz: 3200 bytes, less what the resampler still holds.
    assert.ok(c.audio.get(c.turn!)! <= 3200);
  });
});

Deno.test("azure stt: a session the service refuses is reported, not redialled in a loop", async () => {
  const fake = new AzureSpeechFake({ key: KEY });
  fake.start();
  fake.refuseSession = true;
  const stt = new AzureSpeechStt({ provider: "azure", apiKey: KEY, baseUrl: fake.url });
  try {
    await stt.start(PARAMS);
    const err = await rejection(() => stt.runStt(frame20ms(8000)));
    assert.ok(err instanceof FlowcatError && err.kind === "closed");
    // 1007 when the close frame is read; an abnormal close (code 0) when audio the client sent
    // meanwhile made the server drop the connection: then one immediate redial is allowed.
    assert.match(err.message, /closed the socket \(code (1007: Unsupported audio format|0)\)/);
    const dialled = fake.connections.length;
    assert.ok(dialled <= 2, `${dialled} connections`);
    for (let i = 0; i < 10; i++) {
      await stt.runStt(frame20ms(8000));
      await sleep(30);
    }
    assert.equal(fake.connections.length, dialled, "no redial within the retry interval");
  } finally {
    await stt.stop();
    await fake.close();
  }
});

Deno.test("azure stt: sockets that keep dropping at once are redialled once, then reported", async () => {
  await withStt({}, async (stt, fake) => {
    await fake.drop(1011, "Internal service error");
    await until(() => fake.connections.length === 2, 3000, "one immediate redial");
    await until(() => fake.current.turn !== undefined, 3000, "a turn on the new socket");
    await fake.drop(1011, "Internal service error");
    const err = await rejection(() => stt.runStt(frame20ms(8000)));
    assert.match(String(err), /closed the socket \(code 1011: Internal service error\)/);
    assert.equal(fake.connections.length, 2);
  });
});

Deno.test("azure stt: a reconnect that fails is reported once, and retried later", async () => {
  await withStt({ options: { retry_interval_ms: 50 } }, async (stt, fake) => {
    fake.refuseWith = 503;
    await fake.drop();
    const err = await rejection(() => stt.runStt(frame20ms(8000)));
    assert.ok(err instanceof FlowcatError);
    assert.match(err.message, /connection lost \(.*HTTP 503/);
    fake.refuseWith = undefined;
    // Retries ride on runStt calls, at most one per retry interval.
    const end = Date.now() + 3000;
    while (fake.connections.length < 2 && Date.now() < end) {
      await stt.runStt(frame20ms(8000));
      await sleep(20);
    }
    assert.equal(fake.connections.length, 2, "a later retry");
    await until(() => fake.current.turn !== undefined, 3000, "a turn on the new socket");
    fake.phrase("back");
    const [f] = await collect(stt, 1);
    assert.equal((f as { text: string }).text, "back");
  });
});

Deno.test("azure stt: a missing region, a bad rate and a missing key are config errors", () => {
  const config = (o: ServiceOptions) => () => createAzureStt(o);
  const isConfig = (re: RegExp) => (e: unknown) =>
    e instanceof FlowcatError && e.kind === "config" && re.test(e.message);
  assert.throws(config({ provider: "azure", apiKey: "k" }), isConfig(/options\.region/));
  assert.throws(
    config({ provider: "azure", apiKey: "k", options: { region: "eastus", sample_rate: 44100 } }),
    isConfig(/sample_rate must be 8000 or 16000/),
  );
  assert.throws(config({ provider: "azure", options: { region: "eastus" } }), isConfig(/key/));
  const stt = new AzureSpeechStt({
    provider: "azure",
    apiKey: "k",
    options: { region: "westeurope" },
  });
  assert.match(
    stt.url(),
    /^wss:\/\/westeurope\.stt\.speech\.microsoft\.com\/speech\/recognition\/conversation\/cognitiveservices\/v1\?language=en-US&format=simple$/,
  );
  const gov = new AzureSpeechStt({
    provider: "azure",
    apiKey: "k",
    options: { region: "usgovvirginia" },
  });
  assert.match(gov.url(), /^wss:\/\/usgovvirginia\.stt\.speech\.azure\.us\//);
});
