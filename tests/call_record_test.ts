/**
 * The conversation's record (the model's context and the call transcript) against what the
 * caller heard, on a cascaded call over in-process doubles (scripted voice activity, STT and
 * LLM, a tone TTS) and an in-memory leg paced at real time: a transition's `say` line, the
 * fallback line after a model failure, tool results, a reply talked over before any of it was
 * heard; and never two user messages in a row.
 */

import assert from "node:assert/strict";
import {
  buildCascadedTask,
  type CascadedParts,
  type CascadedTaskOptions,
} from "../core/builders.ts";
import {
  type AgentBrain,
  type AudioFrame,
  type BrainAction,
  DEFAULT_STT_FALLBACK,
  type Frame,
  type LlmMessage,
  type SttService,
  type VadState,
} from "../mod.ts";
import { silentLogger } from "../core/log.ts";
import type { Finalize } from "../core/seams.ts";
import { MemorySessionSource } from "../server/session_store.ts";
import {
  ScriptedLlm,
  type ScriptedReply,
  ScriptedVad,
  SegmentStt,
  ToneTts,
} from "./_cascade_doubles.ts";
import { sleep, until } from "./_core_helpers.ts";
import { FakeLeg } from "./_fake_leg.ts";
import { movingOnBrain } from "./_graph_fixture.ts";

const MS_PER_CHAR = 5;
const FALLBACK = "Sorry, I am having trouble answering right now.";

interface Rig {
  leg: FakeLeg;
  llm: ScriptedLlm;
  tts: ToneTts;
  parts: CascadedParts;
  /** The caller says one turn (the STT double hears the next scripted sentence). */
  turn(): Promise<void>;
  caller(state: VadState): Promise<void>;
  /** The finalize report, once the call is over. */
  finished: Promise<Finalize>;
  /** Resolves once what the bot is saying has played out. */
  played(): Promise<void>;
  /** Hang up once everything queued has played; resolves with the finalize report. */
  hangUp(): Promise<Finalize>;
}

/** Extra builder options a test sets (interruption mode, fallback line). */
type Extra = Partial<Pick<CascadedTaskOptions, "interruptions" | "fallbackText">>;

async function rig(
  replies: ScriptedReply[],
  heard: string[],
  opts: { brain?: AgentBrain; ttsGapMs?: number; stt?: SttService } & Extra = {},
): Promise<Rig> {
  const leg = new FakeLeg();
  const vad = new ScriptedVad();
  const llm = new ScriptedLlm(replies);
  const tts = new ToneTts(opts.ttsGapMs ?? 0, MS_PER_CHAR);
  const sessions = new MemorySessionSource({ provider: "scripted" });
  const run = await sessions.createRun("carrier", { carrier: "twilio" });
  const finished = Promise.withResolvers<Finalize>();
  const task = buildCascadedTask({
    transport: leg,
    stt: opts.stt ?? new SegmentStt(heard),
    llm,
    tts,
    vad,
    brain: opts.brain ?? movingOnBrain(),
    session: sessions,
    runId: run.runId,
    token: run.token,
    logger: silentLogger,
    onFinalized: finished.resolve,
    taskParams: { idleTimeoutMs: null },
    ...(opts.interruptions ? { interruptions: opts.interruptions } : {}),
    ...(opts.fallbackText !== undefined ? { fallbackText: opts.fallbackText } : {}),
  });
  const parts = task.parts;
  const running = task.run();
  const caller = async (state: VadState) => {
    vad.state = state;
    for (let i = 0; i < 3; i++) {
      leg.feed({
        type: "audio",
        audio: { pcm: new Int16Array(320), sampleRate: 16000, numChannels: 1 },
      });
    }
    await until(() => parts.vad.speaking === (state === "speaking"), 1000, `caller ${state}`);
  };
  const played = async () => {
    await sleep(30);
    await until(() => !parts.output.speaking, 3000, "the bot to finish speaking");
  };
  leg.feed({ type: "start", callId: "call-1" });
  return {
    leg,
    llm,
    tts,
    parts,
    caller,
    async turn() {
      await caller("speaking");
      await caller("quiet");
    },
    played,
    finished: finished.promise,
    async hangUp() {
      await played();
      leg.feed({ type: "stop" });
      await running;
      leg.feed(undefined);
      return finished.promise;
    },
  };
}

/** The transcript as `role: text` lines (a tool line names its tool). */
function transcript(parts: CascadedParts): string[] {
  return parts.transcript.lines.map((l) =>
    `${l.role}${l.tool ? `(${l.tool})` : ""}: ${l.text}${l.interrupted ? " [cut]" : ""}`
  );
}

/** Messages after the system prompt. */
const history = (messages: LlmMessage[]) => messages.filter((m) => m.role !== "system");

/** True when no two user messages follow each other. */
const alternates = (messages: LlmMessage[]) =>
  messages.every((m, i) => i === 0 || m.role !== "user" || messages[i - 1].role !== "user");

Deno.test("record: a transition's say line is heard after the reply that moved, and recorded so", async () => {
  const call = { toolCallId: "c1", functionName: "go_on", arguments: {} };
  const r = await rig(
    [{ text: ["Sure. "], calls: [call] }, { text: ["We are on step two."] }],
    ["Move on, please."],
  );
  await r.turn();
  await until(() => r.tts.said.length === 3, 3000, "reply, say line and next reply spoken");
  await r.hangUp();

  assert.deepEqual(r.tts.said, ["Sure.", "Moving on.", "We are on step two."]);
  // The model's second run knows the line was said, after the move's result.
  assert.deepEqual(history(r.llm.contexts[1].messages), [
    { role: "user", content: "Move on, please." },
    { role: "assistant", content: "Sure.", toolCalls: [call] },
    { role: "tool", toolCallId: "c1", content: '{"ok":true,"node":"second"}' },
    { role: "assistant", content: "Moving on." },
  ]);
  assert.deepEqual(
    history(r.parts.context.messages).at(-1),
    { role: "assistant", content: "We are on step two." },
  );
  assert.deepEqual(transcript(r.parts), [
    "user: Move on, please.",
    "bot: Sure.",
    "node: second",
    'tool(go_on): {"ok":true,"node":"second"}',
    "bot: Moving on.",
    "bot: We are on step two.",
  ]);
});

/** Answers `weather` itself: stays on its node with a result. */
class WeatherBrain implements AgentBrain {
  systemPrompt(): string {
    return "You tell the weather.";
  }
  tools() {
    return [{ name: "weather", description: "Today's weather.", params: { type: "object" } }];
  }
  currentNodeId(): string {
    return "weather";
  }
  onToolCall(): BrainAction {
    return { type: "stay", result: { tempC: 20 } };
  }
  isFinished(): boolean {
    return false;
  }
  collectedVars() {
    return {};
  }
}

Deno.test("record: a tool result sits after its call and before the reply it led to", async () => {
  const call = { toolCallId: "w1", functionName: "weather", arguments: {} };
  const r = await rig(
    [{ text: ["Let me look. "], calls: [call] }, { text: ["It is twenty degrees."] }],
    ["How warm is it?"],
    { brain: new WeatherBrain() },
  );
  await r.turn();
  await until(() => r.tts.said.length === 2, 3000, "both replies spoken");
  await r.hangUp();

  assert.deepEqual(history(r.parts.context.messages), [
    { role: "user", content: "How warm is it?" },
    { role: "assistant", content: "Let me look.", toolCalls: [call] },
    { role: "tool", toolCallId: "w1", content: '{"tempC":20}' },
    { role: "assistant", content: "It is twenty degrees." },
  ]);
  assert.deepEqual(transcript(r.parts), [
    "user: How warm is it?",
    "bot: Let me look.",
    'tool(weather): {"tempC":20}',
    "bot: It is twenty degrees.",
  ]);
});

/** Ends the call on any tool, with a goodbye. */
class GoodbyeBrain extends WeatherBrain {
  override onToolCall(): BrainAction {
    return { type: "end", say: "Goodbye.", disposition: "done" };
  }
}

Deno.test("record: an end's goodbye is heard after the reply, then the call ends", async () => {
  const call = { toolCallId: "e1", functionName: "weather", arguments: {} };
  const r = await rig([{ text: ["Thanks for calling. "], calls: [call] }], ["That is all."], {
    brain: new GoodbyeBrain(),
  });
  await r.turn();
  const report = await r.finished;
  r.leg.feed(undefined);
  assert.equal(report.disposition, "done");
  assert.deepEqual(r.tts.said, ["Thanks for calling.", "Goodbye."]);
  assert.ok(r.leg.sentMs() >= "Thanks for calling.Goodbye.".length * MS_PER_CHAR - 1);
  assert.deepEqual(transcript(r.parts), [
    "user: That is all.",
    "bot: Thanks for calling.",
    'tool(weather): {"ok":true,"ended":true}',
    "bot: Goodbye.",
  ]);
  assert.equal(r.llm.contexts.length, 1, "no reply after the end");
});

Deno.test("record: the fallback line after a model failure is in the context and the transcript", async () => {
  const r = await rig([{ fail: "model down" }, { text: ["It is noon."] }], [
    "What time is it?",
    "Hello?",
  ]);
  await r.turn();
  await until(() => r.tts.said.length === 1, 3000, "fallback spoken");
  await r.played();
  await r.turn();
  await until(() => r.tts.said.length === 2, 3000, "second reply spoken");
  await r.hangUp();

  assert.deepEqual(r.tts.said, [FALLBACK, "It is noon."]);
  // The next request: the caller's turns are answered by the line they heard, not adjacent.
  assert.deepEqual(history(r.llm.contexts[1].messages), [
    { role: "user", content: "What time is it?" },
    { role: "assistant", content: FALLBACK },
    { role: "user", content: "Hello?" },
  ]);
  assert.deepEqual(transcript(r.parts), [
    "user: What time is it?",
    `bot: ${FALLBACK}`,
    "user: Hello?",
    "bot: It is noon.",
  ]);
});

Deno.test("record: a turn the model left unanswered joins the next one", async () => {
  const r = await rig([{ fail: "model down" }, { text: ["It is noon."] }], [
    "What time is it?",
    "Hello?",
  ], { fallbackText: "" });
  await r.turn();
  await until(() => r.llm.contexts.length === 1, 3000, "first request");
  await r.turn();
  await until(() => r.tts.said.length === 1, 3000, "reply spoken");
  await r.hangUp();

  assert.deepEqual(history(r.llm.contexts[1].messages), [
    { role: "user", content: "What time is it? Hello?" },
  ]);
  assert.ok(alternates(r.parts.context.messages));
});

Deno.test("record: a reply talked over before any of it played leaves it, and the turns join", async () => {
  // Synthesis is slow: the caller speaks again before the reply's first audio.
  const r = await rig([{ text: ["Okay, booking. "] }, { text: ["For two, done."] }], [
    "Book a table",
    "for two.",
  ], { interruptions: "always", ttsGapMs: 300 });
  await r.turn();
  await until(
    () => r.parts.context.messages.some((m) => m.content === "Okay, booking."),
    3000,
    "reply written",
  );
  await r.turn();
  await until(() => r.llm.contexts.length === 2, 3000, "second request");
  await until(() => r.tts.said.includes("For two, done."), 3000, "second reply spoken");
  await r.hangUp();

  assert.equal(r.leg.clears >= 1, true, "playback cleared");
  assert.deepEqual(history(r.llm.contexts[1].messages), [
    { role: "user", content: "Book a table for two." },
  ]);
  assert.deepEqual(transcript(r.parts), [
    "user: Book a table",
    "bot:  [cut]",
    "user: for two.",
    "bot: For two, done.",
  ]);
});

Deno.test("record: a turn the transcriber failed on gets the fallback line, heard and recorded", async () => {
  // The first segment fails (after the provider's retries), the second is heard.
  const r = await rig([{ text: ["Noon."] }], ["!HTTP 503 (3 attempts)", "What time is it?"]);
  await r.turn();
  await until(() => r.tts.said.length === 1, 3000, "fallback spoken");
  await r.played();
  await r.turn();
  await until(() => r.tts.said.length === 2, 3000, "reply spoken");
  await r.hangUp();

  assert.deepEqual(r.tts.said, [DEFAULT_STT_FALLBACK, "Noon."]);
  assert.deepEqual(history(r.llm.contexts[0].messages), [
    { role: "assistant", content: DEFAULT_STT_FALLBACK },
    { role: "user", content: "What time is it?" },
  ]);
  assert.deepEqual(transcript(r.parts), [
    `bot: ${DEFAULT_STT_FALLBACK}`,
    "user: What time is it?",
    "bot: Noon.",
  ]);
});

/** A streaming transcriber whose socket is gone: every frame of audio fails. */
class DeadStreamStt implements SttService {
  name(): string {
    return "dead-stream";
  }
  start(): Promise<void> {
    return Promise.resolve();
  }
  runStt(_audio: AudioFrame): Promise<Frame[]> {
    return Promise.reject(new Error("dead-stream: socket closed (1006)"));
  }
  setMuted(): void {}
}

Deno.test("record: a streaming transcriber failing while the caller speaks: the fallback, once a turn", async () => {
  const r = await rig([], [], { stt: new DeadStreamStt() });
  await r.turn();
  await until(() => r.tts.said.length === 1, 3000, "fallback spoken");
  await r.played();
  await r.turn();
  await until(() => r.tts.said.length === 2, 3000, "fallback spoken again");
  await r.hangUp();
  assert.deepEqual(r.tts.said, [DEFAULT_STT_FALLBACK, DEFAULT_STT_FALLBACK]);
  assert.equal(r.llm.contexts.length, 0, "nothing for the model to answer");
});
