/** Gemini Live client against the local wire-protocol fake (tests/fakes/gemini_live_fake.ts). */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import { memoryLogger } from "../core/log.ts";
import type { RealtimeEvent, RealtimeSetup } from "../core/seams.ts";
import type { RealtimeProviderOptions } from "../providers/registry.ts";
import { createGeminiLive } from "../providers/google/gemini_live.ts";
import {
  clientAudioPcm,
  GeminiLiveFake,
  type GeminiLiveFakeOptions,
  type ReceivedMessage,
  serverAudio,
} from "./fakes/gemini_live_fake.ts";

const KEY = "AIza-test-SECRET-key-42";
const TOOLS = [
  {
    name: "get_weather",
    description: "Weather for a city",
    params: {
      $schema: "http://json-schema.org/draft-07/schema#",
      type: "object",
      additionalProperties: false,
      properties: { city: { type: "string" }, days: { type: ["integer", "null"] } },
      required: ["city"],
    },
  },
  { name: "end_call", description: "Hang up", params: { type: "object", properties: {} } },
  { name: "ping", description: "No arguments", params: {} },
];
const SETUP: RealtimeSetup = {
  systemPrompt: "You are a test agent.",
  tools: TOOLS,
  vad: {
    startSensitivity: "START_SENSITIVITY_LOW",
    endSensitivity: "END_SENSITIVITY_HIGH",
    prefixPaddingMs: 500,
    silenceDurationMs: 350,
  },
};

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

async function until(cond: () => boolean, what: string, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(2);
  }
}

/** A started fake, a client pointed at it, and every event the client emits. */
async function harness(
  o: { fake?: GeminiLiveFakeOptions; client?: Partial<RealtimeProviderOptions> } = {},
) {
  const fake = await new GeminiLiveFake(o.fake).start();
  const log = memoryLogger();
  const client = createGeminiLive({
    apiKey: KEY,
    url: fake.url,
    logger: log,
    ...o.client,
    options: { reconnectBackoffMs: 5, setupTimeoutMs: 2000, ...o.client?.options },
  });
  const events: RealtimeEvent[] = [];
  const pump = (async () => {
    for (let ev = await client.nextEvent(); ev; ev = await client.nextEvent()) events.push(ev);
  })();
  const waitEvent = async (pred: (e: RealtimeEvent) => boolean, what: string) => {
    await until(() => events.some(pred), what);
    return events.find(pred)!;
  };
  const dispose = async () => {
    await client.close();
    await pump;
    await fake.close();
    assert.ok(!JSON.stringify(log.records).includes(KEY), "the API key reached a log line");
  };
  return { fake, client, log, events, waitEvent, dispose };
}

const pcm16k = (n: number, value: number) => new Int16Array(n).fill(value);
const audio = (pcm: Int16Array, sampleRate = 16000) => ({ pcm, sampleRate, numChannels: 1 });
const setupOf = (m: ReceivedMessage) => m.message.setup as Record<string, unknown>;
const types = (evs: RealtimeEvent[]) => evs.map((e) => e.type);

/** Make the client process everything sent so far: a marker transcript comes back as an event. */
async function sync(h: Awaited<ReturnType<typeof harness>>, marker: string): Promise<void> {
  h.fake.send({ serverContent: { inputTranscription: { text: marker } } });
  await h.waitEvent((e) => e.type === "user_text" && e.text === marker, marker);
}

Deno.test("setup: model prefix, default voice, VAD, tool declarations, transcription, key", async () => {
  const h = await harness();
  try {
    await h.client.connect(SETUP);
    const setup = setupOf(h.fake.messages("setup")[0]);
    assert.deepEqual(setup, {
      model: "models/gemini-3.8-live",
      generationConfig: {
        responseModalities: ["AUDIO"],
        speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: "Fenrir" } } },
      },
      systemInstruction: { parts: [{ text: "You are a test agent." }] },
      tools: [{
        functionDeclarations: [
          {
            name: "get_weather",
            description: "Weather for a city",
            behavior: "BLOCKING",
            parameters: {
              type: "object",
              properties: { city: { type: "string" }, days: { type: "integer", nullable: true } },
              required: ["city"],
            },
          },
          { name: "end_call", description: "Hang up", behavior: "BLOCKING" },
          { name: "ping", description: "No arguments", behavior: "BLOCKING" },
        ],
      }],
      realtimeInputConfig: {
        automaticActivityDetection: {
          startOfSpeechSensitivity: "START_SENSITIVITY_LOW",
          endOfSpeechSensitivity: "END_SENSITIVITY_HIGH",
          prefixPaddingMs: 500,
          silenceDurationMs: 350,
        },
      },
      inputAudioTranscription: {},
      outputAudioTranscription: {},
      sessionResumption: {},
    });
    assert.equal(h.fake.requestUrls[0].searchParams.get("key"), KEY);
    assert.match(h.fake.requestUrls[0].pathname, /BidiGenerateContent$/);
  } finally {
    await h.dispose();
  }
});

Deno.test("setup: voice from options beats setup.voice; setup.voice beats the default; model prefix kept", async () => {
  for (
    const [client, voice, model] of [
      [{ voice: "Puck", model: "models/gemini-live-x" }, "Puck", "models/gemini-live-x"],
      [{ model: "gemini-live-y" }, "Kore", "models/gemini-live-y"],
    ] as const
  ) {
    const h = await harness({ client });
    try {
      await h.client.connect({ ...SETUP, voice: "Kore", tools: [], vad: undefined });
      const setup = setupOf(h.fake.messages("setup")[0]);
      const speech = (setup.generationConfig as { speechConfig: unknown }).speechConfig;
      assert.deepEqual(speech, { voiceConfig: { prebuiltVoiceConfig: { voiceName: voice } } });
      assert.equal(setup.model, model);
      assert.equal(setup.tools, undefined);
      assert.equal(setup.realtimeInputConfig, undefined);
    } finally {
      await h.dispose();
    }
  }
});

Deno.test("no audio before setupComplete: kickoff first, then the buffered audio in order", async () => {
  const h = await harness({ fake: { setupCompleteDelayMs: 150 } });
  try {
    const connecting = h.client.connect({ ...SETUP, kickoff: "Greet the caller." });
    for (let i = 1; i <= 3; i++) h.client.sendAudio(audio(pcm16k(320, i)));
    await connecting;
    await h.fake.waitUntil(() => h.fake.messages("realtimeInput").length === 3, 3000, "audio");
    const t = h.fake.timeline;
    const ready = t.indexOf("c1 >setupComplete");
    assert.ok(ready > t.indexOf("c1 <setup"));
    assert.ok(ready < t.indexOf("c1 <clientContent"), t.join(", "));
    assert.ok(t.indexOf("c1 <clientContent") < t.indexOf("c1 <realtimeInput"), t.join(", "));
    assert.deepEqual(h.fake.messages("clientContent")[0].message, {
      clientContent: {
        turns: [{ role: "user", parts: [{ text: "Greet the caller." }] }],
        turnComplete: true,
      },
    });
    assert.deepEqual(h.fake.messages("realtimeInput").map((m) => clientAudioPcm(m)[0]), [1, 2, 3]);
  } finally {
    await h.dispose();
  }
});

Deno.test("a keypad press reaches the model as a user turn it answers now", async () => {
  const h = await harness();
  try {
    await h.client.connect(SETUP);
    h.client.sendDtmf!("5");
    await h.fake.waitUntil(() => h.fake.messages("clientContent").length === 1, 3000, "dtmf turn");
    assert.deepEqual(h.fake.messages("clientContent")[0].message, {
      clientContent: {
        turns: [{ role: "user", parts: [{ text: 'The caller pressed "5" on the phone keypad.' }] }],
        turnComplete: true,
      },
    });
  } finally {
    await h.dispose();
  }
});

Deno.test("audio chunk: realtimeInput.audio, mimeType with the rate, base64 PCM16LE round-trip", async () => {
  const h = await harness();
  try {
    await h.client.connect(SETUP);
    const samples = Int16Array.from([-32768, -1, 0, 1, 255, 256, 12345, 32767]);
    h.client.sendAudio(audio(samples));
    h.client.sendAudio(audio(Int16Array.from([7, 8]), 8000));
    await h.fake.waitUntil(() => h.fake.messages("realtimeInput").length === 2);
    const [a, b] = h.fake.messages("realtimeInput");
    assert.deepEqual(Object.keys(a.message), ["realtimeInput"]);
    assert.deepEqual(Object.keys(a.message.realtimeInput as object), ["audio"]);
    const blob = (a.message.realtimeInput as { audio: { mimeType: string } }).audio;
    assert.equal(blob.mimeType, "audio/pcm;rate=16000");
    assert.deepEqual(clientAudioPcm(a), samples);
    const blobB = (b.message.realtimeInput as { audio: { mimeType: string } }).audio;
    assert.equal(blobB.mimeType, "audio/pcm;rate=8000");
    assert.deepEqual(clientAudioPcm(b), Int16Array.from([7, 8]));
  } finally {
    await h.dispose();
  }
});

Deno.test("audio waiting for setup is bounded by audioBufferMs: oldest dropped, one warning", async () => {
  const h = await harness({
    fake: { autoSetupComplete: false },
    client: { options: { audioBufferMs: 2000 } },
  });
  try {
    const connecting = h.client.connect(SETUP);
    for (let i = 0; i < 30; i++) h.client.sendAudio(audio(pcm16k(1600, i))); // 100 ms each
    await h.fake.waitFor((m) => m.kind === "setup");
    h.fake.sendSetupComplete();
    await connecting;
    await h.fake.waitUntil(() => h.fake.messages("realtimeInput").length >= 20);
    await sleep(30);
    const firsts = h.fake.messages("realtimeInput").map((m) => clientAudioPcm(m)[0]);
    assert.deepEqual(firsts, Array.from({ length: 20 }, (_, i) => i + 10));
    const drops = h.log.records.filter((r) => r.level === "warn" && /dropping/.test(r.message));
    assert.equal(drops.length, 1);
  } finally {
    await h.dispose();
  }
});

Deno.test("server audio, transcripts, usage and turnComplete map to events", async () => {
  const h = await harness();
  try {
    await h.client.connect(SETUP);
    const out = Int16Array.from([100, -100, 3000, -3000]);
    h.fake.send(serverAudio(out));
    h.fake.send(serverAudio(Int16Array.from([5]), 16000));
    h.fake.send({ serverContent: { inputTranscription: { text: "Hel" } } });
    h.fake.send({ serverContent: { inputTranscription: { text: "lo" } } });
    h.fake.send({ serverContent: { outputTranscription: { text: "Hi " } } });
    h.fake.send({ serverContent: { outputTranscription: { text: "there" } } });
    h.fake.send({
      usageMetadata: {
        promptTokenCount: 100,
        responseTokenCount: 40,
        totalTokenCount: 150,
        cachedContentTokenCount: 20,
        thoughtsTokenCount: 10,
      },
    });
    h.fake.send({ serverContent: { turnComplete: true } });
    await h.waitEvent((e) => e.type === "turn_complete", "turn_complete");
    assert.deepEqual(h.events.slice(2), [
      { type: "user_text", text: "Hel", final: false },
      { type: "user_text", text: "lo", final: false },
      { type: "bot_text", text: "Hi ", final: false },
      { type: "bot_text", text: "there", final: false },
      {
        type: "usage",
        usage: {
          promptTokens: 100,
          completionTokens: 40,
          totalTokens: 150,
          cacheReadInputTokens: 20,
          reasoningTokens: 10,
        },
      },
      { type: "user_text", text: "Hello", final: true },
      { type: "bot_text", text: "Hi there", final: true },
      { type: "turn_complete" },
    ]);
    const [a, b] = h.events;
    assert.ok(a.type === "audio_out" && b.type === "audio_out");
    assert.deepEqual([a.audio.sampleRate, a.audio.numChannels], [24000, 1]);
    assert.deepEqual(a.audio.pcm, out);
    assert.equal(b.audio.sampleRate, 16000);
  } finally {
    await h.dispose();
  }
});

Deno.test("content bundled with turnComplete is emitted before the turn ends; interrupted maps", async () => {
  const h = await harness();
  try {
    await h.client.connect(SETUP);
    const bundled = serverAudio(Int16Array.from([1, 2]));
    Object.assign(bundled.serverContent as object, {
      outputTranscription: { text: "Bye" },
      turnComplete: true,
    });
    h.fake.send({ ...bundled, usageMetadata: { promptTokenCount: 3, responseTokenCount: 4 } });
    h.fake.send({ serverContent: { interrupted: true } });
    h.fake.send({ serverContent: { turnComplete: true } });
    await until(() => h.events.filter((e) => e.type === "turn_complete").length === 2, "turns");
    assert.deepEqual(types(h.events), [
      "audio_out",
      "bot_text",
      "usage",
      "bot_text",
      "turn_complete",
      "interrupted",
      "turn_complete",
    ]);
    assert.deepEqual(h.events[3], { type: "bot_text", text: "Bye", final: true });
    assert.deepEqual(h.events[2], {
      type: "usage",
      usage: { promptTokens: 3, completionTokens: 4, totalTokens: 7 },
    });
  } finally {
    await h.dispose();
  }
});

Deno.test("JSON in binary frames is read; malformed and unknown messages are skipped, not fatal", async () => {
  const h = await harness();
  try {
    await h.client.connect(SETUP);
    h.fake.sendRaw("{not json");
    h.fake.sendRaw("[1, 2]");
    h.fake.send({ someFutureMessage: { x: 1 } });
    h.fake.send({ serverContent: "weird" });
    h.fake.send({ serverContent: { modelTurn: { parts: [{ inlineData: { data: "!!" } }] } } });
    h.fake.send({ toolCall: { functionCalls: [{ name: "no_id" }] } });
    h.fake.sendBinaryJson({ serverContent: { outputTranscription: { text: "from binary" } } });
    await h.waitEvent((e) => e.type === "bot_text", "binary-frame transcript");
    await sync(h, "still alive");
    assert.deepEqual(types(h.events), ["bot_text", "user_text"]);
    assert.equal(h.fake.connections, 1);
    const warns = h.log.records.filter((r) =>
      r.level === "warn" && /not a JSON object/.test(r.message)
    );
    assert.equal(warns.length, 2);
  } finally {
    await h.dispose();
  }
});

Deno.test("tool calls: event per call; toolResponse echoes id and name; non-objects wrapped", async () => {
  const h = await harness();
  try {
    await h.client.connect(SETUP);
    h.fake.send({
      toolCall: {
        functionCalls: [
          { id: "fc-1", name: "get_weather", args: { city: "Oslo" } },
          { id: "fc-2", name: "end_call" },
        ],
      },
    });
    await until(() => h.events.length === 2, "tool calls");
    assert.deepEqual(h.events, [
      { type: "tool_call", id: "fc-1", name: "get_weather", args: { city: "Oslo" } },
      { type: "tool_call", id: "fc-2", name: "end_call", args: {} },
    ]);
    await h.client.sendToolResult("fc-1", { tempC: 21 });
    await h.client.sendToolResult("fc-2", "done");
    await h.fake.waitUntil(() => h.fake.messages("toolResponse").length === 2);
    assert.deepEqual(h.fake.messages("toolResponse").map((m) => m.message), [
      {
        toolResponse: {
          functionResponses: [{ id: "fc-1", name: "get_weather", response: { tempC: 21 } }],
        },
      },
      {
        toolResponse: {
          functionResponses: [{ id: "fc-2", name: "end_call", response: { result: "done" } }],
        },
      },
    ]);
  } finally {
    await h.dispose();
  }
});

Deno.test("a cancelled tool call is not answered; unknown ids are dropped", async () => {
  const h = await harness();
  try {
    await h.client.connect(SETUP);
    h.fake.send({ toolCall: { functionCalls: [{ id: "fc-1", name: "get_weather", args: {} }] } });
    h.fake.send({ toolCallCancellation: { ids: ["fc-1"] } });
    h.fake.send({ toolCall: { functionCalls: [{ id: "fc-2", name: "end_call", args: {} }] } });
    await until(() => h.events.length === 2, "tool calls");
    await h.client.sendToolResult("fc-1", { late: true });
    await h.client.sendToolResult("nope", {});
    await h.client.sendToolResult("fc-2", {});
    await h.fake.waitFor((m) => m.kind === "toolResponse");
    await sleep(30);
    const ids = h.fake.messages("toolResponse").map((m) =>
      (m.message.toolResponse as { functionResponses: { id: string }[] }).functionResponses[0].id
    );
    assert.deepEqual(ids, ["fc-2"]);
  } finally {
    await h.dispose();
  }
});

Deno.test("updateSystem resumes with a new setup and the latest handle; audio waits for setupComplete", async () => {
  const h = await harness();
  try {
    await h.client.connect({ ...SETUP, kickoff: "Hello" });
    h.fake.send({ sessionResumptionUpdate: { newHandle: "h-1", resumable: true } });
    h.fake.send({ sessionResumptionUpdate: { newHandle: "", resumable: false } });
    h.fake.send({ toolCall: { functionCalls: [{ id: "t-1", name: "get_weather", args: {} }] } });
    await sync(h, "synced");
    h.fake.setupCompleteDelayMs = 150;
    const newTools = [{ name: "book", description: "Book it", params: {} }];
    const updating = h.client.updateSystem("You are now booking.", newTools);
    await h.fake.waitUntil(() => h.fake.connections === 2, 3000, "second connection");
    for (let i = 1; i <= 3; i++) h.client.sendAudio(audio(pcm16k(160, i)));
    await updating;
    await h.client.sendToolResult("t-1", { ok: true });
    await h.fake.waitUntil(() => h.fake.messages("realtimeInput", 2).length === 3);
    await h.fake.waitFor((m) => m.kind === "toolResponse");
    const setup = setupOf(h.fake.messages("setup", 2)[0]);
    assert.deepEqual(setup.systemInstruction, { parts: [{ text: "You are now booking." }] });
    assert.deepEqual(setup.tools, [{
      functionDeclarations: [{ name: "book", description: "Book it", behavior: "BLOCKING" }],
    }]);
    assert.deepEqual(setup.sessionResumption, { handle: "h-1" });
    const t = h.fake.timeline;
    assert.ok(t.indexOf("c2 >setupComplete") < t.indexOf("c2 <realtimeInput"), t.join(", "));
    assert.equal(h.fake.messages("realtimeInput", 1).length, 0);
    assert.equal(h.fake.messages("clientContent", 2).length, 0, "kickoff is not repeated");
    assert.equal(h.fake.messages("toolResponse", 2).length, 1, "the resumed session gets it");
  } finally {
    await h.dispose();
  }
});

Deno.test("updateSystem before any handle starts a fresh session and drops the old calls", async () => {
  const h = await harness();
  try {
    await h.client.connect(SETUP);
    h.fake.send({ toolCall: { functionCalls: [{ id: "t-1", name: "get_weather", args: {} }] } });
    await h.waitEvent((e) => e.type === "tool_call", "tool call");
    await h.client.updateSystem("New prompt", []);
    await h.client.sendToolResult("t-1", {});
    h.client.sendAudio(audio(pcm16k(160, 1)));
    await h.fake.waitFor((m) => m.kind === "realtimeInput");
    assert.deepEqual(setupOf(h.fake.messages("setup", 2)[0]).sessionResumption, {});
    assert.equal(h.fake.messages("toolResponse").length, 0);
    assert.ok(h.log.records.some((r) => /without history/.test(r.message)));
  } finally {
    await h.dispose();
  }
});

Deno.test("goAway with no answer in progress switches once the next session is ready", async () => {
  const h = await harness();
  try {
    await h.client.connect(SETUP);
    h.fake.send({ sessionResumptionUpdate: { newHandle: "h-7", resumable: true } });
    h.fake.send({ goAway: { timeLeft: "10s" } });
    await h.fake.waitFor((m) => m.kind === "setup" && m.connection === 2);
    assert.deepEqual(setupOf(h.fake.messages("setup", 2)[0]).sessionResumption, { handle: "h-7" });
    await until(() => h.log.records.some((r) => /handed over/.test(r.message)), "handover");
    h.client.sendAudio(audio(pcm16k(160, 9)));
    await h.fake.waitFor((m) => m.kind === "realtimeInput");
    assert.equal(h.fake.messages("realtimeInput", 2).length, 1);
    assert.equal(h.fake.messages("realtimeInput", 1).length, 0);
    assert.ok(!h.events.some((e) => e.type === "closed"));
  } finally {
    await h.dispose();
  }
});

Deno.test("goAway during an answer: the answer finishes, the fresh handle after it is used", async () => {
  const h = await harness();
  try {
    await h.client.connect(SETUP);
    h.fake.send({ sessionResumptionUpdate: { newHandle: "h-8", resumable: true } });
    h.fake.send({ sessionResumptionUpdate: { newHandle: "", resumable: false } });
    h.fake.send(serverAudio(Int16Array.from([1])));
    h.fake.send({ goAway: { timeLeft: "30s" } });
    h.fake.send(serverAudio(Int16Array.from([2])));
    await until(() => h.events.filter((e) => e.type === "audio_out").length === 2, "audio");
    // The next connection is readied at once, but the live one keeps the answer going.
    await h.fake.waitFor((m) => m.kind === "setup" && m.connection === 2);
    assert.deepEqual(setupOf(h.fake.messages("setup", 2)[0]).sessionResumption, { handle: "h-8" });
    await sleep(50);
    assert.ok(!h.log.records.some((r) => /handed over/.test(r.message)));
    h.fake.send({ serverContent: { turnComplete: true } }, 1);
    await sleep(30);
    assert.ok(!h.log.records.some((r) => /handed over/.test(r.message)), "waits for the handle");
    h.fake.send({ sessionResumptionUpdate: { newHandle: "h-9", resumable: true } }, 1);
    await h.fake.waitFor((m) => m.kind === "setup" && m.connection === 3);
    assert.deepEqual(setupOf(h.fake.messages("setup", 3)[0]).sessionResumption, { handle: "h-9" });
    await until(() => h.log.records.some((r) => /handed over/.test(r.message)), "handover");
    h.client.sendAudio(audio(pcm16k(160, 9)));
    await h.fake.waitFor((m) => m.kind === "realtimeInput");
    assert.equal(h.fake.messages("realtimeInput", 3).length, 1);
    assert.equal(h.fake.messages("clientContent").length, 0, "a finished answer is not resumed");
  } finally {
    await h.dispose();
  }
});

Deno.test("goAway whose deadline nears moves mid-answer and closes the cut turn", async () => {
  const h = await harness();
  try {
    await h.client.connect(SETUP);
    h.fake.send({ sessionResumptionUpdate: { newHandle: "h-5", resumable: true } });
    h.fake.send(serverAudio(Int16Array.from([1])));
    h.fake.send({ goAway: { timeLeft: "1.1s" } }); // moves 1 s before the deadline
    await h.fake.waitFor((m) => m.kind === "setup" && m.connection === 2);
    assert.deepEqual(setupOf(h.fake.messages("setup", 2)[0]).sessionResumption, { handle: "h-5" });
    await h.waitEvent((e) => e.type === "turn_complete", "cut turn closed");
    assert.deepEqual(types(h.events), ["audio_out", "turn_complete"]);
  } finally {
    await h.dispose();
  }
});

Deno.test("a dropped socket is resumed; the cut turn is closed; audio sent meanwhile follows setupComplete", async () => {
  const h = await harness();
  try {
    await h.client.connect(SETUP);
    h.fake.send({ sessionResumptionUpdate: { newHandle: "h-9", resumable: true } });
    h.fake.send({ serverContent: { outputTranscription: { text: "Half a sen" } } });
    await h.waitEvent((e) => e.type === "bot_text", "partial");
    h.fake.setupCompleteDelayMs = 100;
    h.fake.dropConnection();
    await h.fake.waitUntil(() => h.fake.connections === 2, 3000, "reconnect");
    h.client.sendAudio(audio(pcm16k(160, 4)));
    await h.fake.waitFor((m) => m.kind === "realtimeInput");
    assert.deepEqual(setupOf(h.fake.messages("setup", 2)[0]).sessionResumption, { handle: "h-9" });
    const t = h.fake.timeline;
    assert.ok(t.indexOf("c2 >setupComplete") < t.indexOf("c2 <realtimeInput"), t.join(", "));
    assert.deepEqual(h.events.slice(1), [
      { type: "bot_text", text: "Half a sen", final: true },
      { type: "turn_complete" },
    ]);
  } finally {
    await h.dispose();
  }
});

Deno.test("a refused resumption: the last attempt starts a fresh session instead of hanging up", async () => {
  const h = await harness();
  try {
    await h.client.connect(SETUP);
    h.fake.send({ sessionResumptionUpdate: { newHandle: "h-old", resumable: true } });
    await sync(h, "synced");
    h.fake.rejectResumption = true;
    h.fake.dropConnection();
    await h.fake.waitFor((m) => m.kind === "setup" && m.connection === 4);
    h.client.sendAudio(audio(pcm16k(160, 1)));
    await h.fake.waitFor((m) => m.kind === "realtimeInput");
    const handles = h.fake.messages("setup").map((m) => setupOf(m).sessionResumption);
    assert.deepEqual(handles, [{}, { handle: "h-old" }, { handle: "h-old" }, {}]);
    assert.equal(h.fake.messages("realtimeInput", 4).length, 1);
    assert.ok(!h.events.some((e) => e.type === "closed"));
  } finally {
    await h.dispose();
  }
});

Deno.test("reconnect failure ends with a closed event carrying the reason, then undefined", async () => {
  const h = await harness();
  try {
    await h.client.connect(SETUP);
    h.fake.refuseConnections = true;
    h.fake.dropConnection();
    const closed = await h.waitEvent((e) => e.type === "closed", "closed");
    assert.ok(closed.type === "closed");
    assert.match(closed.reason ?? "", /reconnect failed after 3 attempts/);
    assert.ok(!closed.reason?.includes(KEY));
    assert.equal(await h.client.nextEvent(), undefined);
    h.client.sendAudio(audio(pcm16k(160, 1)));
    await assert.rejects(
      h.client.updateSystem("x", []),
      (e) => e instanceof FlowcatError && e.kind === "closed",
    );
  } finally {
    await h.dispose();
  }
});

Deno.test("close is idempotent: one closed event, then nextEvent gives undefined", async () => {
  const h = await harness();
  try {
    await h.client.connect(SETUP);
    await Promise.all([h.client.close(), h.client.close()]);
    await h.client.close();
    await until(() => h.events.length === 1, "closed event");
    assert.deepEqual(h.events, [{ type: "closed" }]);
    assert.equal(await h.client.nextEvent(), undefined);
    h.client.sendAudio(audio(pcm16k(160, 1)));
    await h.client.sendToolResult("x", {});
    await sleep(20);
    assert.equal(h.fake.messages("realtimeInput").length, 0);
    assert.equal(h.fake.connections, 1, "no reconnect after close");
  } finally {
    await h.dispose();
  }
});

Deno.test("connect fails without the key in the error: no setupComplete, refused endpoint", async () => {
  const slow = await harness({
    fake: { autoSetupComplete: false },
    client: { options: { setupTimeoutMs: 100 } },
  });
  try {
    await assert.rejects(
      slow.client.connect(SETUP),
      (e) => e instanceof FlowcatError && e.kind === "timeout" && !e.message.includes(KEY),
    );
    await until(() => slow.events.some((e) => e.type === "closed"), "closed");
  } finally {
    await slow.dispose();
  }
  const refused = await harness();
  refused.fake.refuseConnections = true;
  try {
    await assert.rejects(
      refused.client.connect(SETUP),
      (e) => e instanceof FlowcatError && e.kind === "closed" && !e.message.includes(KEY),
    );
  } finally {
    await refused.dispose();
  }
});
