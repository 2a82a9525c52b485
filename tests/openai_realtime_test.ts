/**
 * OpenAI Realtime client against the local fake server: handshake and auth, session.update in
 * the GA and beta shapes, audio both ways, transcripts, barge-in, tool calls, usage, errors,
 * malformed input, close and drop, and the OpenAI-style wrapper factory.
 */

import assert from "node:assert/strict";
import { resample } from "../core/audio/resample.ts";
import { rms, sine } from "../core/audio/pcm.ts";
import { FlowcatError } from "../core/errors.ts";
import { audioFrame, type ToolDecl } from "../core/frames.ts";
import { type LogRecord, memoryLogger } from "../core/log.ts";
import type { RealtimeEvent, RealtimeLlm, RealtimeSetup } from "../core/seams.ts";
import type { RealtimeFactory, RealtimeProviderOptions } from "../providers/registry.ts";
import { createOpenAIRealtime } from "../providers/openai/realtime.ts";
import { openAIStyleRealtime } from "../providers/openai/realtime_style.ts";
import {
  audioDeltaEvent,
  botTranscriptEvent,
  type ClientMessage,
  errorEvent,
  functionCallDoneEvent,
  OpenAIRealtimeFake,
  type OpenAIRealtimeFakeOptions,
  pcm16FromBase64LE,
  responseCreatedEvent,
  responseDoneEvent,
  speechStartedEvent,
  userTranscriptEvent,
} from "./fakes/openai_realtime_fake.ts";

const KEY = "sk-test-SECRET-0123456789";
const TOOL: ToolDecl = {
  name: "get_weather",
  description: "Get weather",
  params: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};
const SETUP: RealtimeSetup = { systemPrompt: "You are a test agent.", tools: [TOOL] };

interface Ctx {
  fake: OpenAIRealtimeFake;
  llm: RealtimeLlm;
  log: ReturnType<typeof memoryLogger>;
}

interface CtxOptions {
  fake?: OpenAIRealtimeFakeOptions;
  client?: Partial<RealtimeProviderOptions>;
  setup?: Partial<RealtimeSetup>;
  factory?: RealtimeFactory;
}

/** Start a fake, connect a client to it, run `fn`, close both. */
async function withClient(fn: (c: Ctx) => void | Promise<void>, o: CtxOptions = {}): Promise<void> {
  const fake = new OpenAIRealtimeFake(o.fake);
  await fake.start();
  const log = memoryLogger();
  const factory = o.factory ?? createOpenAIRealtime;
  const llm = factory({ apiKey: KEY, url: fake.url, logger: log, ...o.client });
  try {
    await llm.connect({ ...SETUP, ...o.setup });
    await fn({ fake, llm, log });
  } finally {
    await llm.close();
    await fake.close();
  }
}

/** The next event, or a failure after `ms`. */
async function next(llm: RealtimeLlm, ms = 3000): Promise<RealtimeEvent | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      llm.nextEvent(),
      new Promise<never>((_, rej) => {
        timer = setTimeout(() => rej(new Error("no realtime event")), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

const sessionOf = (m: ClientMessage) => m.session as Record<string, unknown>;
const noSecret = (records: LogRecord[]) => assert.ok(!JSON.stringify(records).includes(KEY));
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

Deno.test("openai: bearer auth, model query, handshake order, key never logged", async () => {
  await withClient(({ fake, log }) => {
    assert.equal(fake.headers["authorization"], `Bearer ${KEY}`);
    assert.equal(fake.headers["openai-beta"], undefined);
    assert.equal(fake.path, "/v1/realtime");
    assert.deepEqual(fake.query, { model: "gpt-realtime" });
    assert.equal(fake.received[0].type, "session.update");
    assert.ok(log.records.some((r) => r.message.includes("session ready")));
    noSecret(log.records);
  });
  await withClient(({ fake }) => {
    assert.equal(fake.query.model, "gpt-4o-realtime-preview");
  }, { client: { model: "gpt-4o-realtime-preview" } });
});

Deno.test("openai: GA session.update carries instructions, voice, tools, transcription, VAD", async () => {
  await withClient(({ fake }) => {
    const s = sessionOf(fake.ofType("session.update")[0]);
    assert.equal(s.type, "realtime");
    assert.deepEqual(s.output_modalities, ["audio"]);
    assert.equal(s.instructions, "You are a test agent.");
    assert.deepEqual(s.tools, [{
      type: "function",
      name: "get_weather",
      description: "Get weather",
      parameters: TOOL.params,
    }]);
    assert.equal(s.tool_choice, "auto");
    const audio = s.audio as Record<string, Record<string, unknown>>;
    assert.deepEqual(audio.input.format, { type: "audio/pcm", rate: 24000 });
    assert.deepEqual(audio.input.transcription, { model: "gpt-4o-transcribe" });
    assert.deepEqual(audio.input.turn_detection, {
      type: "server_vad",
      threshold: 0.5,
      prefix_padding_ms: 500,
      silence_duration_ms: 350,
      create_response: true,
      interrupt_response: true,
    });
    assert.deepEqual(audio.output, { format: { type: "audio/pcm", rate: 24000 }, voice: "alloy" });
    assert.equal(s.modalities, undefined);
  }, { setup: { vad: { prefixPaddingMs: 500, silenceDurationMs: 350 } } });
});

Deno.test("openai: voice is options.voice, else setup.voice, else alloy", async () => {
  const voiceOf = (
    fake: OpenAIRealtimeFake,
  ) => ((sessionOf(fake.ofType("session.update")[0]).audio as Record<
    string,
    Record<string, unknown>
  >)
    .output.voice);
  await withClient(({ fake }) => assert.equal(voiceOf(fake), "marin"), {
    setup: { voice: "marin" },
  });
  await withClient(({ fake }) => assert.equal(voiceOf(fake), "cedar"), {
    setup: { voice: "marin" },
    client: { voice: "cedar" },
  });
});

Deno.test("openai: beta protocol sends the flat session shape and the OpenAI-Beta header", async () => {
  await withClient(async ({ fake, llm, log }) => {
    assert.equal(fake.headers["openai-beta"], "realtime=v1");
    assert.equal(fake.headers["authorization"], `Bearer ${KEY}`);
    const s = sessionOf(fake.ofType("session.update")[0]);
    assert.equal(s.type, undefined);
    assert.deepEqual(s.modalities, ["audio", "text"]);
    assert.equal(s.voice, "verse");
    assert.equal(s.input_audio_format, "pcm16");
    assert.equal(s.output_audio_format, "pcm16");
    assert.deepEqual(s.input_audio_transcription, { model: "whisper-1" });
    const td = s.turn_detection as Record<string, unknown>;
    assert.equal(td.type, "server_vad");
    assert.equal(td.interrupt_response, true);
    assert.equal(td.create_response, true);
    assert.equal((s.tools as unknown[]).length, 1);
    // Beta server event names map the same way.
    fake.send(audioDeltaEvent(new Int16Array([1, 2, 3]), "item_b", "beta"));
    fake.send(botTranscriptEvent("hi", false, "beta"));
    fake.send(botTranscriptEvent("hi there", true, "beta"));
    const ev = await next(llm);
    assert.equal(ev?.type, "audio_out");
    assert.deepEqual(await next(llm), { type: "bot_text", text: "hi", final: false });
    assert.deepEqual(await next(llm), { type: "bot_text", text: "hi there", final: true });
    await llm.updateSystem("New prompt.", []);
    const upd = await fake.waitFor((m) =>
      m.type === "session.update" && sessionOf(m).instructions === "New prompt."
    );
    assert.equal(sessionOf(upd).type, undefined);
    noSecret(log.records);
  }, { client: { options: { protocol: "beta" } }, setup: { voice: "verse" } });
});

Deno.test("openai: kickoff sends a user input_text message then response.create", async () => {
  await withClient(async ({ fake }) => {
    await fake.waitFor((m) => m.type === "response.create");
    const types = fake.received.map((m) => m.type);
    assert.deepEqual(types, ["session.update", "conversation.item.create", "response.create"]);
    assert.deepEqual(fake.received[1].item, {
      type: "message",
      role: "user",
      content: [{ type: "input_text", text: "Greet the caller." }],
    });
  }, { setup: { kickoff: "Greet the caller." } });
});

Deno.test("openai: a keypad press is a user input_text message, then response.create", async () => {
  await withClient(async ({ fake, llm }) => {
    llm.sendDtmf!("#");
    await fake.waitFor((m) => m.type === "response.create");
    const item = fake.ofType("conversation.item.create")[0];
    assert.deepEqual(item.item, {
      type: "message",
      role: "user",
      content: [{ type: "input_text", text: 'The caller pressed "#" on the phone keypad.' }],
    });
  });
});

Deno.test("openai: 16 kHz audio goes out resampled to 24 kHz base64 PCM16", async () => {
  await withClient(async ({ fake, llm }) => {
    const input = sine({ freq: 1000, sampleRate: 16000, samples: 3200, amplitude: 8000 });
    for (let i = 0; i < input.length; i += 320) {
      llm.sendAudio(audioFrame(input.subarray(i, i + 320), 16000));
    }
    await fake.waitFor(() => fake.ofType("input_audio_buffer.append").length === 10);
    const chunks = fake.ofType("input_audio_buffer.append").map((m) =>
      pcm16FromBase64LE(m.audio as string)
    );
    chunks.forEach((c) => assert.equal(c.length, 480)); // 20 ms at 24 kHz
    const got = new Int16Array(chunks.reduce((n, c) => n + c.length, 0));
    let off = 0;
    for (const c of chunks) {
      got.set(c, off);
      off += c.length;
    }
    assert.deepEqual(got, resample(input, 16000, 24000));
    // Same tone, same level once past the filter's start-up.
    const tail = got.subarray(480);
    assert.ok(Math.abs(rms(tail) - rms(input)) / rms(input) < 0.05);
    let crossings = 0;
    for (let i = 1; i < tail.length; i++) if ((tail[i - 1] < 0) !== (tail[i] < 0)) crossings++;
    const hz = crossings / 2 / (tail.length / 24000);
    assert.ok(Math.abs(hz - 1000) < 30, `tone at ${hz} Hz`);
    // Any rate is accepted: 8 kHz triples.
    llm.sendAudio(audioFrame(new Int16Array(160), 8000));
    await fake.waitFor(() => fake.ofType("input_audio_buffer.append").length === 11);
    const eleventh = fake.ofType("input_audio_buffer.append")[10];
    assert.equal(pcm16FromBase64LE(eleventh.audio as string).length, 480);
    // Interleaved stereo is averaged to mono (24 kHz in: no resampling).
    const stereo = new Int16Array(960).map((_, i) => (i % 2 === 0 ? 1000 : 3000));
    llm.sendAudio(audioFrame(stereo, 24000, 2));
    await fake.waitFor(() => fake.ofType("input_audio_buffer.append").length === 12);
    const mono = pcm16FromBase64LE(fake.ofType("input_audio_buffer.append")[11].audio as string);
    assert.deepEqual(mono, new Int16Array(480).fill(2000));
  });
});

// Audio out at 24 kHz and final transcripts: tests/realtime_conformance_test.ts.

Deno.test("openai: speech_started interrupts and truncates the assistant item", async () => {
  await withClient(async ({ fake, llm }) => {
    fake.send(responseCreatedEvent());
    fake.send(audioDeltaEvent(new Int16Array(1200), "item_a"));
    fake.send(audioDeltaEvent(new Int16Array(1200), "item_a"));
    fake.send(speechStartedEvent());
    assert.equal((await next(llm))?.type, "audio_out");
    assert.equal((await next(llm))?.type, "audio_out");
    assert.deepEqual(await next(llm), { type: "interrupted" });
    const tr = await fake.waitFor((m) => m.type === "conversation.item.truncate");
    assert.deepEqual(
      { item_id: tr.item_id, content_index: tr.content_index, audio_end_ms: tr.audio_end_ms },
      { item_id: "item_a", content_index: 0, audio_end_ms: 100 }, // 2400 samples at 24 kHz
    );
    // A second barge-in does not truncate the same item again; server interrupt is on: no cancel.
    fake.send(speechStartedEvent());
    assert.deepEqual(await next(llm), { type: "interrupted" });
    await sleep(50);
    assert.equal(fake.ofType("conversation.item.truncate").length, 1);
    assert.equal(fake.ofType("response.cancel").length, 0);
  });
});

Deno.test("openai: with serverInterrupt off, barge-in cancels the active response", async () => {
  await withClient(async ({ fake, llm }) => {
    const s = sessionOf(fake.ofType("session.update")[0]);
    const audio = s.audio as Record<string, Record<string, Record<string, unknown>>>;
    assert.equal(audio.input.turn_detection.interrupt_response, false);
    fake.send(speechStartedEvent()); // no response yet: nothing to cancel
    assert.deepEqual(await next(llm), { type: "interrupted" });
    fake.send(responseCreatedEvent());
    fake.send(speechStartedEvent());
    assert.deepEqual(await next(llm), { type: "interrupted" });
    await fake.waitFor((m) => m.type === "response.cancel");
    assert.equal(fake.ofType("response.cancel").length, 1);
  }, { client: { options: { serverInterrupt: false } } });
});

Deno.test("openai: function call events become tool_call; bad JSON gives {} and a warning", async () => {
  await withClient(async ({ fake, llm, log }) => {
    fake.send(functionCallDoneEvent("call_1", "get_weather", { city: "Oslo" }));
    assert.deepEqual(await next(llm), {
      type: "tool_call",
      id: "call_1",
      name: "get_weather",
      args: { city: "Oslo" },
    });
    fake.send(functionCallDoneEvent("call_2", "get_weather", "{not json"));
    assert.deepEqual(await next(llm), {
      type: "tool_call",
      id: "call_2",
      name: "get_weather",
      args: {},
    });
    assert.ok(log.records.some((r) => r.level === "warn" && r.message.includes("arguments")));
  });
});

Deno.test("openai: sendToolResult sends function_call_output and response.create", async () => {
  await withClient(async ({ fake, llm }) => {
    await llm.sendToolResult("call_9", { tempC: 21 });
    await fake.waitFor((m) => m.type === "response.create");
    const out = fake.ofType("conversation.item.create")[0];
    assert.deepEqual(out.item, {
      type: "function_call_output",
      call_id: "call_9",
      output: '{"tempC":21}',
    });
    const types = fake.received.map((m) => m.type);
    assert.ok(types.indexOf("conversation.item.create") < types.indexOf("response.create"));
    // A string result is passed as text.
    fake.send(responseDoneEvent());
    await llm.sendToolResult("call_10", "done");
    const second = await fake.waitFor((m) =>
      m.type === "conversation.item.create" &&
      (m.item as Record<string, unknown>).call_id === "call_10"
    );
    assert.equal((second.item as Record<string, unknown>).output, "done");
  });
});

Deno.test("openai: a tool result during an active response waits for response.done", async () => {
  await withClient(async ({ fake, llm }) => {
    fake.send(responseCreatedEvent());
    fake.send(functionCallDoneEvent("call_1", "get_weather", { city: "Oslo" }));
    assert.equal((await next(llm))?.type, "tool_call");
    await llm.sendToolResult("call_1", { tempC: 3 });
    await fake.waitFor((m) => m.type === "conversation.item.create");
    await sleep(50);
    assert.equal(fake.ofType("response.create").length, 0);
    fake.send(responseDoneEvent());
    await fake.waitFor((m) => m.type === "response.create");
    assert.equal(fake.ofType("response.create").length, 1);
  });
});

Deno.test("openai: updateSystem sends session.update with the new instructions and tools", async () => {
  await withClient(async ({ fake, llm }) => {
    const tool: ToolDecl = { name: "end_call", description: "Hang up", params: { type: "object" } };
    await llm.updateSystem("You are now billing.", [tool]);
    const m = await fake.waitFor((m) =>
      m.type === "session.update" && sessionOf(m).instructions === "You are now billing."
    );
    assert.deepEqual(sessionOf(m), {
      type: "realtime",
      instructions: "You are now billing.",
      tools: [{
        type: "function",
        name: "end_call",
        description: "Hang up",
        parameters: { type: "object" },
      }],
      tool_choice: "auto",
    });
  });
});

Deno.test("openai: response.done gives usage then turn_complete", async () => {
  await withClient(async ({ fake, llm }) => {
    fake.send(responseDoneEvent({ input: 250, output: 80, cached: 12 }));
    assert.deepEqual(await next(llm), {
      type: "usage",
      usage: {
        promptTokens: 250,
        completionTokens: 80,
        totalTokens: 330,
        cacheReadInputTokens: 12,
      },
    });
    assert.deepEqual(await next(llm), { type: "turn_complete" });
  });
});

Deno.test("openai: an error event is logged and not fatal", async () => {
  await withClient(async ({ fake, llm, log }) => {
    fake.send(errorEvent("rate_limited", "Slow down"));
    fake.send(userTranscriptEvent("still here", true));
    assert.deepEqual(await next(llm), { type: "user_text", text: "still here", final: true });
    const warn = log.records.find((r) => r.level === "warn" && r.message.includes("server error"));
    assert.equal(warn?.fields?.code, "rate_limited");
    assert.equal(warn?.fields?.message, "Slow down");
  });
});

Deno.test("openai: malformed and unknown server messages are skipped", async () => {
  await withClient(async ({ fake, llm }) => {
    fake.send("not json at all");
    fake.send("[1,2,3]");
    fake.send('{"no":"type"}');
    fake.send({ type: "response.output_audio.delta", item_id: "x", delta: "@@not base64@@" });
    fake.send({ type: "response.output_audio.delta", item_id: "x", delta: "AA==" }); // odd bytes
    fake.send({ type: "response.function_call_arguments.done", arguments: "{}" }); // no call_id
    fake.send({ type: "conversation.item.input_audio_transcription.completed", transcript: 7 });
    fake.send({ type: "rate_limits.updated", rate_limits: [] });
    fake.send({ type: "some.future.event" });
    fake.send(userTranscriptEvent("valid", true));
    assert.deepEqual(await next(llm), { type: "user_text", text: "valid", final: true });
  });
});

Deno.test("openai: with reconnects off, a dropped socket gives closed, then undefined", async () => {
  await withClient(async ({ fake, llm }) => {
    await fake.dropConnection(1011, "boom");
    const ev = await next(llm);
    assert.equal(ev?.type, "closed");
    assert.match((ev as { reason?: string }).reason ?? "", /1011/);
    assert.equal(await next(llm), undefined);
    await assert.rejects(llm.updateSystem("x", []), FlowcatError);
  }, { client: { options: { reconnectAttempts: 0 } } });
});

Deno.test("openai: close is idempotent; events end with closed then undefined", async () => {
  await withClient(async ({ llm }) => {
    await Promise.all([llm.close(), llm.close()]);
    await llm.close();
    assert.equal((await next(llm))?.type, "closed");
    assert.equal(await next(llm), undefined);
    llm.sendAudio(audioFrame(new Int16Array(320), 16000)); // no throw after close
    await assert.rejects(
      llm.sendToolResult("c", {}),
      (e: unknown) => e instanceof FlowcatError && e.kind === "closed",
    );
  });
});

Deno.test("openai: a missing session.created or session.updated times out", async () => {
  for (
    const [fakeOpts, what] of [
      [{ sendSessionCreated: false }, "session.created"],
      [{ answerSessionUpdate: false }, "session.updated"],
    ] as const
  ) {
    const fake = new OpenAIRealtimeFake(fakeOpts);
    await fake.start();
    const llm = createOpenAIRealtime({ apiKey: KEY, url: fake.url, options: { timeoutMs: 200 } });
    await assert.rejects(
      llm.connect(SETUP),
      (e: unknown) =>
        e instanceof FlowcatError && e.kind === "timeout" && e.message.includes(what) &&
        !e.message.includes(KEY),
    );
    assert.equal((await next(llm))?.type, "closed");
    await llm.close();
    await fake.close();
  }
});

Deno.test("openai: a rejected session.update fails connect with the server's code", async () => {
  const fake = new OpenAIRealtimeFake({
    rejectSessionUpdate: { code: "invalid_value", message: "bad voice" },
  });
  await fake.start();
  const llm = createOpenAIRealtime({ apiKey: KEY, url: fake.url });
  await assert.rejects(
    llm.connect(SETUP),
    (e: unknown) =>
      e instanceof FlowcatError && e.kind === "protocol" && e.message.includes("invalid_value"),
  );
  await llm.close();
  await fake.close();
});

Deno.test("openai: an unreachable endpoint fails without leaking the key", async () => {
  const fake = new OpenAIRealtimeFake();
  await fake.start();
  const url = fake.url;
  await fake.close(); // nothing listens there now
  const log = memoryLogger();
  const llm = createOpenAIRealtime({ apiKey: KEY, url, logger: log });
  await assert.rejects(
    llm.connect(SETUP),
    (e: unknown) => e instanceof FlowcatError && !e.message.includes(KEY),
  );
  await llm.close();
  noSecret(log.records);
});

Deno.test("openai-style wrapper: own base URL, auth header, default model and voice", async () => {
  const fake = new OpenAIRealtimeFake();
  await fake.start();
  const factory = openAIStyleRealtime({
    name: "acme",
    baseUrl: fake.url.replace("/v1/realtime", "/acme/v2/realtime"),
    authHeader: "api-key",
    defaultModel: "acme-voice-1",
    defaultVoice: "nova",
  });
  assert.throws(() => factory({}), /acme: missing API key/);
  const log = memoryLogger();
  const llm = factory({ apiKey: KEY, logger: log });
  try {
    await llm.connect(SETUP);
    assert.equal(fake.path, "/acme/v2/realtime");
    assert.equal(fake.headers["api-key"], KEY);
    assert.equal(fake.headers["authorization"], undefined);
    assert.deepEqual(fake.query, { model: "acme-voice-1" });
    const s = sessionOf(fake.ofType("session.update")[0]);
    assert.equal((s.audio as Record<string, Record<string, unknown>>).output.voice, "nova");
    assert.ok(log.records.some((r) => r.message.startsWith("acme: ")));
    noSecret(log.records);
  } finally {
    await llm.close();
    await fake.close();
  }
});

Deno.test("openai-style wrapper: header function and a beta default protocol", async () => {
  const fake = new OpenAIRealtimeFake();
  await fake.start();
  const factory = openAIStyleRealtime({
    name: "legacy",
    baseUrl: fake.url,
    authHeader: (key) => ({ "X-Api-Token": `Token ${key}` }),
    defaultModel: "legacy-rt",
    defaultVoice: "shimmer",
    protocol: "beta",
  });
  const llm = factory({ apiKey: KEY, model: "legacy-rt-2" });
  try {
    await llm.connect(SETUP);
    assert.equal(fake.headers["x-api-token"], `Token ${KEY}`);
    assert.equal(fake.headers["openai-beta"], "realtime=v1");
    assert.equal(fake.query.model, "legacy-rt-2");
    assert.equal(sessionOf(fake.ofType("session.update")[0]).voice, "shimmer");
  } finally {
    await llm.close();
    await fake.close();
  }
  assert.throws(
    () => openAIStyleRealtime({ name: "x", baseUrl: "", defaultModel: "m", defaultVoice: "v" }),
    FlowcatError,
  );
  assert.throws(() => factory({ apiKey: KEY, options: { protocol: "v2" } }), /options.protocol/);
});
