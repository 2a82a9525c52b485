/**
 * OpenAI Realtime after a dropped socket (TCP cut, no close frame), against the local fake: a
 * new session with the same instructions, tools and voice, seeded with the conversation as
 * heard (turns, tool call and result, the cut answer as far as it went), then the caller audio
 * no transcribed turn covers, with nothing lost; bounded retries, then `closed` as before.
 */

import assert from "node:assert/strict";
import { concatInt16 } from "../core/audio/pcm.ts";
import { audioFrame } from "../core/frames.ts";
import { memoryLogger } from "../core/log.ts";
import type { RealtimeEvent, ToolDecl } from "../core/seams.ts";
import { createOpenAIRealtime } from "../providers/openai/realtime.ts";
import { openAIStyleRealtime } from "../providers/openai/realtime_style.ts";
import { sleep, until as untilWithin } from "./_core_helpers.ts";
import {
  audioDeltaEvent,
  botTranscriptEvent,
  type ClientMessage,
  functionCallDoneEvent,
  OpenAIRealtimeFake,
  pcm16FromBase64LE,
  responseCreatedEvent,
  responseDoneEvent,
  userTranscriptEvent,
} from "./fakes/openai_realtime_fake.ts";

const TOOL: ToolDecl = {
  name: "get_weather",
  description: "Get weather",
  params: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};

/** Wait (polling) for `cond`, at most 5 s. */
const until = (cond: () => boolean, what: string) => untilWithin(cond, 5000, what);

async function harness(options: Record<string, unknown> = {}, factory = createOpenAIRealtime) {
  const fake = new OpenAIRealtimeFake();
  await fake.start();
  const log = memoryLogger();
  const llm = factory({
    apiKey: "sk-test",
    url: fake.url,
    logger: log,
    options: { reconnectBackoffMs: 20, ...options },
  });
  await llm.connect({ systemPrompt: "Weather agent.", tools: [TOOL], voice: "marin" });
  const events: RealtimeEvent[] = [];
  const pump = (async () => {
    for (let ev = await llm.nextEvent(); ev; ev = await llm.nextEvent()) events.push(ev);
  })();
  const sent: Int16Array[] = [];
  /** Caller audio at 24 kHz (no resampling): 20 ms chunks numbered from 1. */
  const say = (chunks: number) => {
    for (let i = 0; i < chunks; i++) {
      const pcm = new Int16Array(480).fill(sent.length + 1);
      sent.push(pcm);
      llm.sendAudio(audioFrame(pcm, 24000));
    }
  };
  const dispose = async () => {
    await llm.close();
    await pump;
    await fake.close();
  };
  return { fake, llm, log, events, sent, say, dispose };
}

const appendsOn = (fake: OpenAIRealtimeFake, n: number) =>
  concatInt16(
    fake.ofTypeOn("input_audio_buffer.append", n).map((m) => pcm16FromBase64LE(m.audio as string)),
  );

const itemOf = (m: ClientMessage) => m.item as Record<string, unknown>;

Deno.test("openai drop mid-answer: a reseeded session, the answer goes on, no caller audio lost", async () => {
  const h = await harness();
  try {
    await h.fake.waitFor((m) => m.type === "session.update");
    const firstSession = structuredClone(h.fake.session);
    // The caller asks; the server commits and transcribes the turn.
    h.say(10);
    await until(() => h.fake.ofType("input_audio_buffer.append").length === 10, "question");
    h.fake.send({ type: "input_audio_buffer.committed", item_id: "item_user" });
    h.fake.send(userTranscriptEvent("What is the weather in Oslo?", true));
    h.fake.send(responseCreatedEvent("resp_1"));
    h.fake.send(functionCallDoneEvent("call_1", "get_weather", { city: "Oslo" }));
    h.fake.send(responseDoneEvent());
    await until(() => h.events.some((e) => e.type === "tool_call"), "tool call");
    await h.llm.sendToolResult("call_1", { tempC: 21 });
    await h.fake.waitFor((m) =>
      m.type === "response.create" && h.fake.ofType("response.create").length === 1
    );
    // The answer starts; the caller keeps some sound going; then the TCP connection is cut.
    h.fake.send(responseCreatedEvent("resp_2"));
    h.fake.send(audioDeltaEvent(new Int16Array(2400).fill(7), "item_bot"));
    h.fake.send(botTranscriptEvent("It is 21 degrees", false));
    h.say(5);
    await until(() => h.events.some((e) => e.type === "bot_text"), "answer part");
    await until(() => h.fake.ofType("input_audio_buffer.append").length === 15, "after-turn audio");
    h.fake.reconnectDelayMs = 200;
    await h.fake.dropAbruptly();
    h.say(8); // spoken while the new session opens
    await h.fake.waitForConnections(2);
    await until(() => h.log.records.some((r) => /handed over/.test(r.message)), "handover");
    await until(() => appendsOn(h.fake, 2).length >= 13 * 480, "replayed audio");

    // Same instructions, tools and voice.
    const second = h.fake.session;
    assert.equal(second.instructions, firstSession.instructions);
    assert.deepEqual(second.tools, firstSession.tools);
    assert.deepEqual(second.audio, firstSession.audio);
    // Seeded with the conversation as heard, in order, then asked to go on.
    const items = h.fake.ofTypeOn("conversation.item.create", 2).map(itemOf);
    assert.deepEqual(items.slice(0, 4), [
      {
        type: "message",
        role: "user",
        content: [{ type: "input_text", text: "What is the weather in Oslo?" }],
      },
      {
        type: "function_call",
        call_id: "call_1",
        name: "get_weather",
        arguments: '{"city":"Oslo"}',
      },
      { type: "function_call_output", call_id: "call_1", output: '{"tempC":21}' },
      {
        type: "message",
        role: "assistant",
        content: [{ type: "output_text", text: "It is 21 degrees" }],
      },
    ]);
    assert.match(JSON.stringify(items[4]), /continue from exactly where it stopped/);
    assert.equal(items.length, 5);
    assert.equal(h.fake.ofTypeOn("response.create", 2).length, 1);
    // Caller audio: the transcribed question is text now; everything after it is replayed.
    assert.deepEqual(appendsOn(h.fake, 2), concatInt16(h.sent.slice(10)), "0 ms lost");
    const handover = h.log.records.find((r) => /handed over/.test(r.message))!.fields!;
    assert.match(String(handover.reason), /no close frame/);
    assert.equal(handover.reply, "continued");
    assert.equal(handover.replayedMs, 13 * 20);
    console.log(
      `handover openai drop mid-answer: gap ${handover.gapMs} ms, replayed ${handover.replayedMs} ms`,
    );
    // The cut answer's turn was closed; the call goes on.
    assert.ok(h.events.some((e) => e.type === "turn_complete"));
    assert.ok(!h.events.some((e) => e.type === "closed"));
    await h.llm.close();
    await until(() => h.events.filter((e) => e.type === "closed").length === 1, "closed once");
  } finally {
    await h.dispose();
  }
});

Deno.test("openai drop with the service gone: bounded retries, then closed with the reason", async () => {
  const h = await harness({ reconnectAttempts: 2 });
  try {
    await h.fake.waitFor((m) => m.type === "session.update");
    h.fake.refuseConnections = true;
    await h.fake.dropAbruptly();
    await until(() => h.events.some((e) => e.type === "closed"), "closed");
    const closed = h.events.find((e) => e.type === "closed") as { reason?: string };
    assert.match(closed.reason ?? "", /no close frame.*reconnect failed after 2 attempts/);
    assert.equal(h.log.records.filter((r) => /reconnect attempt failed/.test(r.message)).length, 2);
    assert.equal(await h.llm.nextEvent(), undefined);
  } finally {
    await h.dispose();
  }
});

Deno.test("openai-style provider: the same reconnect, with its own auth and dialect", async () => {
  const acme = openAIStyleRealtime({
    name: "acme",
    baseUrl: "wss://realtime.acme.example/v1/realtime",
    authHeader: "api-key",
    defaultModel: "acme-voice-1",
    defaultVoice: "nova",
    protocol: "beta",
  });
  const h = await harness({}, acme);
  try {
    await h.fake.waitFor((m) => m.type === "session.update");
    h.fake.send({ type: "input_audio_buffer.committed", item_id: "item_user" });
    h.fake.send(userTranscriptEvent("Hello there", true));
    h.fake.send(botTranscriptEvent("Hi, how can I help?", true, "beta"));
    h.fake.send(responseDoneEvent());
    await until(() => h.events.some((e) => e.type === "turn_complete"), "first turn");
    await h.fake.dropAbruptly();
    await until(
      () => h.log.records.some((r) => /acme: session handed over/.test(r.message)),
      "handover",
    );
    await until(() => h.fake.ofTypeOn("conversation.item.create", 2).length >= 2, "seed");
    await sleep(50);
    assert.equal(
      h.fake.headers["api-key"],
      "sk-test",
      "the new session authenticates the same way",
    );
    assert.equal(h.fake.headers["openai-beta"], "realtime=v1");
    const items = h.fake.ofTypeOn("conversation.item.create", 2).map(itemOf);
    assert.deepEqual(items, [
      { type: "message", role: "user", content: [{ type: "input_text", text: "Hello there" }] },
      {
        type: "message",
        role: "assistant",
        content: [{ type: "text", text: "Hi, how can I help?" }],
      },
    ]);
    assert.equal(h.fake.ofTypeOn("response.create", 2).length, 0, "nothing was cut: no new answer");
  } finally {
    await h.dispose();
  }
});
