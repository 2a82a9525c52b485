/**
 * Azure Speech TTS client against a local fake of the synthesis WebSocket, and the SSML and
 * message framing it is built on.
 */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import type { Frame } from "../core/frames.ts";
import { AzureSpeechTts, createAzureTts } from "../providers/azure/tts.ts";
import { buildSsml, ssmlRate, voiceLanguage, xmlEscape } from "../providers/azure/ssml.ts";
import {
  decodeSpeechMessage,
  encodeBinaryMessage,
  encodeTextMessage,
} from "../providers/azure/speech_wire.ts";
import type { ServiceOptions } from "../providers/service_options.ts";
import { AzureSpeechFake } from "./fakes/azure_speech_fake.ts";
import { until } from "./_core_helpers.ts";
import { drainFrames as collect, SERVICE_START_PARAMS as PARAMS } from "./_service_helpers.ts";

const KEY = "azure-tts-SECRET-7";
async function withTts(
  opts: Partial<ServiceOptions>,
  fn: (tts: AzureSpeechTts, fake: AzureSpeechFake) => Promise<void>,
  fakeOpts: { ttsSamples?: number } = {},
): Promise<void> {
  const fake = new AzureSpeechFake({ key: KEY, ...fakeOpts });
  fake.start();
  const tts = new AzureSpeechTts({ provider: "azure", apiKey: KEY, baseUrl: fake.url, ...opts });
  try {
    await tts.start(PARAMS);
    await fn(tts, fake);
  } finally {
    await tts.stop();
    await fake.close();
  }
}

const samplesOf = (frames: Frame[]) =>
  frames.filter((f) => f.kind === "TtsAudio")
    .reduce((n, f) => n + (f as unknown as { audio: { pcm: Int16Array } }).audio.pcm.length, 0);

Deno.test("azure tts: speech.config, synthesis.context, escaped SSML, then raw PCM frames", async () => {
  await withTts({ voice: "en-GB-SoniaNeural", options: { rate: "+10%" } }, async (tts, fake) => {
    assert.equal(tts.sampleRate(), 24000);
    const frames = await collect(tts.runTts(`Tom & "Jerry" <b>don't</b>`));
    const c = fake.current;
    assert.equal(c.headers["ocp-apim-subscription-key"], KEY);
    assert.deepEqual(c.messages.map((m) => m.path), ["speech.config", "synthesis.context", "ssml"]);
    const [, context, ssml] = c.messages;
    assert.equal(context.headers["x-requestid"], ssml.headers["x-requestid"]);
    assert.equal(
      JSON.parse(context.text!).synthesis.audio.outputFormat,
      "raw-24khz-16bit-mono-pcm",
    );
    assert.equal(ssml.headers["content-type"], "application/ssml+xml");
    assert.equal(
      ssml.text,
      "<speak version='1.0' xmlns='http://www.w3.org/2001/10/synthesis' " +
        "xmlns:mstts='http://www.w3.org/2001/mstts' xml:lang='en-GB'>" +
        "<voice name='en-GB-SoniaNeural'><prosody rate='+10%'>" +
        "Tom &amp; &quot;Jerry&quot; &lt;b&gt;don&apos;t&lt;/b&gt;</prosody></voice></speak>",
    );
    assert.equal(frames[0].kind, "TtsStarted");
    assert.equal(frames.at(-1)!.kind, "TtsStopped");
    assert.equal(samplesOf(frames), 4800);
    const audio = frames.find((f) => f.kind === "TtsAudio") as unknown as {
      audio: { sampleRate: number };
    };
    assert.equal(audio.audio.sampleRate, 24000);
    const usage = frames.find((f) => f.kind === "Metrics") as unknown as {
      data: { type: string; characters: number }[];
    };
    assert.deepEqual([usage.data[0].type, usage.data[0].characters], ["tts_usage", 26]);
  });
});

Deno.test("azure tts: 8 and 16 kHz formats; utterances share one socket", async () => {
  for (const rate of [8000, 16000]) {
    await withTts({ options: { sample_rate: rate } }, async (tts, fake) => {
      assert.equal(tts.sampleRate(), rate);
      await collect(tts.runTts("one"));
      await collect(tts.runTts("two"));
      assert.equal(fake.connections.length, 1);
      const formats = fake.sent("synthesis.context").map((m) =>
        JSON.parse(m.text!).synthesis.audio.outputFormat
      );
      assert.deepEqual(formats, [
        `raw-${rate / 1000}khz-16bit-mono-pcm`,
        `raw-${rate / 1000}khz-16bit-mono-pcm`,
      ]);
      assert.equal(fake.sent("speech.config").length, 1);
    });
  }
});

Deno.test("azure tts: barge-in stops the audio at once; the next utterance redials", async () => {
  await withTts({}, async (tts, fake) => {
    fake.holdAudio = true;
    const ctl = new AbortController();
    const frames: Frame[] = [];
    for await (const f of tts.runTts("a long answer", ctl.signal)) {
      frames.push(f);
      if (f.kind === "TtsAudio") ctl.abort();
    }
    assert.deepEqual(frames.map((f) => f.kind), ["TtsStarted", "TtsAudio"]);
    await until(() => fake.connections[0].socket.readyState === WebSocket.CLOSED, 3000, "close");
    // The next socket is dialled at once, before the next utterance asks for it.
    await until(() => fake.connections.length === 2, 3000, "a redial");
    fake.holdAudio = false;
    fake.release(); // the held rest goes nowhere: that socket is closed
    const next = await collect(tts.runTts("next"));
    assert.equal(fake.connections.length, 2);
    assert.equal(samplesOf(next), 4800);
  });
});

Deno.test("azure tts: a socket dropped mid-utterance is a closed error", async () => {
  await withTts({}, async (tts, fake) => {
    fake.dropMidAudio = true;
    await assert.rejects(
      collect(tts.runTts("hello")),
      (e: unknown) =>
        e instanceof FlowcatError && e.kind === "closed" && /code 1011/.test(e.message),
    );
    fake.dropMidAudio = false;
    assert.equal(samplesOf(await collect(tts.runTts("again"))), 4800);
  });
});

Deno.test("azure tts: 401 is an auth error, 500 a closed one, without the key", async () => {
  const fake = new AzureSpeechFake({ key: "other" });
  fake.start();
  try {
    const tts = createAzureTts({ provider: "azure", apiKey: KEY, baseUrl: fake.url });
    await assert.rejects(
      tts.start(PARAMS),
      (e: unknown) => e instanceof FlowcatError && e.kind === "auth" && !e.message.includes(KEY),
    );
    fake.refuseWith = 500;
    const other = createAzureTts({ provider: "azure", apiKey: "other", baseUrl: fake.url });
    await assert.rejects(
      collect(other.runTts("hi")),
      (e: unknown) =>
        e instanceof FlowcatError && e.kind === "closed" && /HTTP 500/.test(e.message),
    );
  } finally {
    await fake.close();
  }
});

Deno.test("azure tts: bad rates and a missing region are config errors; the URL by region", () => {
  const make = (options: Record<string, unknown>) => () =>
    createAzureTts({ provider: "azure", apiKey: "k", options: { region: "eastus", ...options } });
  const isConfig = (re: RegExp) => (e: unknown) =>
    e instanceof FlowcatError && e.kind === "config" && re.test(e.message);
  assert.throws(make({ sample_rate: 22050 }), isConfig(/sample_rate/));
  assert.throws(make({ rate: "fast'/><evil/>" }), isConfig(/options\.rate/));
  assert.throws(make({ rate: 5 }), isConfig(/options\.rate/));
  assert.throws(make({ region: "east us" }), isConfig(/options\.region/));
  const tts = new AzureSpeechTts({
    provider: "azure",
    apiKey: "k",
    options: { region: "chinaeast2" },
  });
  assert.equal(
    tts.url(),
    "wss://chinaeast2.tts.speech.azure.cn/tts/cognitiveservices/websocket/v1",
  );
});

Deno.test("ssml: text, voice and language are escaped; control characters dropped", () => {
  assert.equal(xmlEscape(`a<b>&"c'\u0001d\te`), "a&lt;b&gt;&amp;&quot;c&apos;d\te");
  const doc = buildSsml({ text: "hi", voice: "x' onload='y", language: "en-US" });
  assert.ok(doc.includes("<voice name='x&apos; onload=&apos;y'>"));
  assert.equal(ssmlRate("azure", 1.25), "1.25");
  assert.equal(ssmlRate("azure", "-20%"), "-20%");
  assert.equal(ssmlRate("azure", "x-slow"), "x-slow");
  assert.equal(ssmlRate("azure", undefined), undefined);
  assert.equal(voiceLanguage("de-DE-KatjaNeural"), "de-DE");
  assert.equal(voiceLanguage("custom"), "en-US");
});

Deno.test("speech wire: text and binary messages round-trip; long headers keep both length bytes", () => {
  const text = encodeTextMessage("speech.config", "abc", "application/json", '{"a":1}');
  assert.match(
    text,
    /^Path: speech\.config\r\nX-RequestId: abc\r\nX-Timestamp: .+\r\nContent-Type: application\/json\r\n\r\n\{"a":1\}$/,
  );
  const t = decodeSpeechMessage(text);
  assert.deepEqual([t.path, t.requestId, t.text], ["speech.config", "abc", '{"a":1}']);
  const long = "x".repeat(300);
  const bin = encodeBinaryMessage("audio", "r1", undefined, new Uint8Array([1, 2, 3]), {
    "X-Pad": long,
  });
  const headLength = (bin[0] << 8) | bin[1];
  assert.ok(headLength > 300);
  assert.deepEqual([...bin.subarray(bin.length - 3)], [1, 2, 3]);
  const b = decodeSpeechMessage(bin.buffer);
  assert.deepEqual([b.path, b.requestId, b.headers["x-pad"], [...b.binary!]], [
    "audio",
    "r1",
    long,
    [1, 2, 3],
  ]);
  assert.equal(
    decodeSpeechMessage(encodeBinaryMessage("audio", "r2", undefined, undefined)).binary,
    undefined,
  );
  assert.throws(() => decodeSpeechMessage(new Uint8Array([0, 50, 1])), /shorter than its header/);
});
