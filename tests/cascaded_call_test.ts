/**
 * A cascaded call end to end with no key: a Twilio-framed WebSocket caller -> energy VAD ->
 * Whisper-style STT (local fake over HTTP) -> OpenAI-compatible LLM (local fake, SSE) with a
 * tool call that moves the graph brain -> real eSpeak NG TTS -> mu-law back to the caller.
 * Barge-in during the reply stops synthesis and clears the carrier; finalize runs once.
 */

import assert from "node:assert/strict";
import { rms, sine } from "../core/audio/pcm.ts";
import { buildCascadedTask, type CascadedParts } from "../core/builders.ts";
import { silentLogger } from "../core/log.ts";
import type { Finalize } from "../core/seams.ts";
import { createOpenAIChatLlm } from "../providers/openai/chat.ts";
import { createWhisperHttpStt } from "../providers/openai/whisper_http.ts";
import { createEspeakTts } from "../providers/espeak/tts.ts";
import { MemorySessionSource } from "../server/session_store.ts";
import { sleep, until } from "./_core_helpers.ts";
import { movingOnBrain } from "./_graph_fixture.ts";
import { type TwilioCall, twilioCall } from "./_twilio_client.ts";
import {
  finishChunk,
  OpenAIChatFake,
  streamReply,
  textChunk,
  toolCallChunk,
  usageChunk,
} from "./fakes/openai_chat_fake.ts";
import { WhisperHttpFake } from "./fakes/whisper_http_fake.ts";

interface Harness {
  call: TwilioCall;
  finished: Promise<Finalize>;
  llm: OpenAIChatFake;
  stt: WhisperHttpFake;
  sessions: MemorySessionSource;
  parts: () => CascadedParts;
  close(): Promise<void>;
}

async function harness(): Promise<Harness> {
  const llm = new OpenAIChatFake();
  const stt = new WhisperHttpFake();
  await stt.start();
  const sessions = new MemorySessionSource({ provider: "openai" });
  const run = await sessions.createRun("carrier", { carrier: "twilio" });
  const finished = Promise.withResolvers<Finalize>();
  let parts: CascadedParts | undefined;
  const call = await twilioCall((transport) => {
    const task = buildCascadedTask({
      transport,
      stt: createWhisperHttpStt({ provider: "speaches", baseUrl: `${stt.url}/v1` }),
      llm: createOpenAIChatLlm({ provider: "ollama", baseUrl: llm.baseUrl, model: "llama3.2" }),
      tts: createEspeakTts(),
      models: { llm: "llama3.2" },
      brain: movingOnBrain(),
      session: sessions,
      runId: run.runId,
      token: run.token,
      greeting: "Hello from Flowcat.",
      vadParams: { confidence: 0.7, startSecs: 0.1, stopSecs: 0.4, minVolume: 0.6 },
      logger: silentLogger,
      onFinalized: finished.resolve,
      taskParams: { idleTimeoutMs: null },
    });
    parts = task.parts;
    task.run().catch(finished.reject);
  }, run.token);
  return {
    call,
    finished: finished.promise,
    llm,
    stt,
    sessions,
    parts: () => parts!,
    async close() {
      await call.close();
      await llm.close();
      await stt.close();
    },
  };
}

/** Wait until the caller has received audio and then none for `quietMs` (the bot finished). */
async function botFinished(call: TwilioCall, quietMs = 400, ms = 10_000): Promise<void> {
  await until(() => call.media().length > 0, ms, "bot audio");
  let last = -1;
  let since = performance.now();
  await until(
    () => {
      const n = call.media().length;
      if (n !== last) {
        last = n;
        since = performance.now();
      }
      return performance.now() - since >= quietMs;
    },
    ms,
    "bot to finish speaking",
  );
}

const tone = (secs: number) =>
  sine({ freq: 300, sampleRate: 8000, samples: Math.round(8000 * secs), amplitude: 9000 });

Deno.test("cascaded call: greeting, STT turn, LLM tool call moves the brain, spoken reply", async () => {
  const h = await harness();
  h.stt.reply({ body: { text: "I would like to move on." } });
  h.llm.reply(
    streamReply([
      toolCallChunk(0, { id: "call_1", name: "go_on", arguments: '{"rea' }),
      toolCallChunk(0, { arguments: 'son":"ready' }),
      toolCallChunk(0, { arguments: '"}' }),
      finishChunk("tool_calls"),
      usageChunk({ prompt_tokens: 40, completion_tokens: 6, total_tokens: 46 }),
    ]),
    streamReply([
      textChunk("We are on step two now. "),
      textChunk("Anything else?"),
      finishChunk("stop"),
      usageChunk({ prompt_tokens: 60, completion_tokens: 9, total_tokens: 69 }),
    ]),
  );
  try {
    // The greeting is spoken by eSpeak NG and reaches the caller as 8 kHz mu-law.
    await botFinished(h.call);
    const greeting = h.call.decode(h.call.media());
    assert.ok(greeting.length > 8000 * 0.5, `greeting ${greeting.length} samples`);
    assert.ok(rms(greeting) > 500, `greeting has energy: ${rms(greeting)}`);
    const before = h.call.media().length;

    // The caller talks for 0.8 s, then is silent: one STT segment, one LLM turn.
    await h.call.speak(tone(0.8));
    await h.call.speak(new Int16Array(8000 * 0.6));
    await until(() => h.llm.requests.length === 2, 8000, "two model requests");

    const seg = h.stt.requests[0];
    assert.equal(seg.path, "/v1/audio/transcriptions");
    assert.equal(seg.wav?.sampleRate, 16000);
    const secs = seg.wav!.samples / 16000;
    assert.ok(secs > 0.7 && secs < 2, `segment of ${secs} s`);

    const first = h.llm.requests[0].body as { messages: { role: string; content: unknown }[] };
    assert.deepEqual(first.messages.map((m) => m.role), ["system", "assistant", "user"]);
    assert.equal(first.messages[0].content, "Greet the caller.");
    assert.equal(first.messages[2].content, "I would like to move on.");
    assert.deepEqual(
      (h.llm.requests[0].body.tools as { function: { name: string } }[]).map((t) =>
        t.function.name
      ),
      ["go_on", "end_call"],
    );

    // The brain moved: the second request has the new prompt, the call, its result and the
    // transition's line, which the caller heard before this reply.
    const second = h.llm.requests[1].body as {
      messages: Record<string, unknown>[];
      tools: { function: { name: string } }[];
    };
    assert.equal(second.messages[0].content, "Second step, talk to Sam.");
    assert.deepEqual(second.tools.map((t) => t.function.name), ["finish", "end_call"]);
    const roles = second.messages.map((m) => m.role);
    assert.deepEqual(roles.slice(-3), ["assistant", "tool", "assistant"]);
    assert.equal(second.messages.at(-2)!.tool_call_id, "call_1");
    assert.equal(second.messages.at(-1)!.content, "Moving on.");

    // "Moving on." (the transition's say) and the reply are spoken.
    await until(() => h.call.media().length > before + 50, 8000, "reply audio");
    await botFinished(h.call);
    assert.ok(rms(h.call.decode(h.call.media().slice(before))) > 500);

    await h.call.hangup();
    const report = await h.finished;
    assert.equal(report.usage.endedBy, "end: caller hung up");
    assert.equal(report.usage.totalTokens, 46 + 69);
    assert.equal(report.usage.model, "llama3.2");
    assert.ok(Number(report.usage.ttsCharacters) > 20);
    assert.deepEqual(h.sessions.get(1)!.finalize, report, "completed once, with this report");
    const doc = JSON.parse(
      new TextDecoder().decode(h.sessions.memoryArtifact("run-1-transcript.json")),
    );
    const lines = doc.lines.map((l: { role: string; text: string }) => `${l.role}: ${l.text}`);
    assert.deepEqual(lines, [
      "bot: Hello from Flowcat.",
      "user: I would like to move on.",
      "node: second",
      'tool: {"ok":true,"node":"second"}',
      "bot: Moving on.",
      "bot: We are on step two now. Anything else?",
    ]);
  } finally {
    await h.close();
  }
});

Deno.test("cascaded call: barge-in stops synthesis and clears the carrier", async () => {
  const h = await harness();
  const long = Array.from(
    { length: 12 },
    (_, i) => `This is sentence number ${i + 1} of a long answer.`,
  );
  h.stt.reply({ body: { text: "Tell me a long story." } }, { body: { text: "Stop." } });
  h.llm.reply(
    streamReply([...long.map((s) => textChunk(`${s} `)), finishChunk("stop")]),
    streamReply([textChunk("Sure, stopping."), finishChunk("stop")]),
  );
  try {
    await botFinished(h.call);
    await h.call.speak(tone(0.6));
    await h.call.speak(new Int16Array(8000 * 0.6));
    const tts = () => h.parts().tts;
    await until(() => tts().characters > 200, 8000, "long reply being spoken");
    await sleep(1500);
    // Talk over the bot: the VAD's barge-in interrupts; the carrier is told to clear.
    await h.call.speak(tone(0.6));
    await until(() => h.call.got.some((m) => m.event === "clear"), 4000, "clear");
    assert.deepEqual(h.call.got.find((m) => m.event === "clear"), {
      event: "clear",
      streamSid: "MZ1",
    });
    // Playback stopped at once, though the reply had half a minute of speech left.
    const atClear = h.call.media().length;
    await sleep(1000);
    const after = h.call.media().length - atClear;
    assert.ok(after <= 10, `${after} media messages after the clear`);
    await h.call.speak(new Int16Array(8000 * 0.6));
    await until(() => h.llm.requests.length === 2, 6000, "the next turn reaches the model");
    await h.call.hangup();
    const report = await h.finished;
    assert.equal(report.usage.endedBy, "end: caller hung up");
  } finally {
    await h.close();
  }
});
