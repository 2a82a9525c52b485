/**
 * The cascaded processors over in-process service doubles: the documented frame sequences, context
 * aggregation, sentence-first speech, tool round trips through the brain, interruption
 * cancelling the model and the synthesis mid-flight, and a failing model kept non-fatal.
 */

import assert from "node:assert/strict";
import {
  type AgentBrain,
  AssistantContextAggregator,
  type BrainAction,
  BrainProcessor,
  createLlmContext,
  type Frame,
  type FrameProcessor,
  LlmProcessor,
  makeFrame,
  Pipeline,
  PipelineTask,
  SttProcessor,
  TtsProcessor,
  UserContextAggregator,
} from "../mod.ts";
import { ScriptedLlm, type ScriptedReply, SegmentStt, ToneTts } from "./_cascade_doubles.ts";
import { drive, Recorder, until } from "./_core_helpers.ts";

const TOOLS = [{ name: "go_on", description: "Move on.", params: { type: "object" } }];

/** A brain with one move: `go_on` moves to node "second" with a new prompt; `bye` ends. */
class TwoStepBrain implements AgentBrain {
  node = "first";
  systemPrompt(): string {
    return "You are step one.";
  }
  tools() {
    return TOOLS;
  }
  currentNodeId(): string {
    return this.node;
  }
  onToolCall(name: string): BrainAction {
    if (name === "go_on") {
      this.node = "second";
      return { type: "transition", systemPrompt: "You are step two.", tools: [], nodeId: "second" };
    }
    return { type: "end", disposition: "done" };
  }
  isFinished(): boolean {
    return false;
  }
  collectedVars() {
    return {};
  }
}

interface Rig {
  task: PipelineTask;
  llm: ScriptedLlm;
  tts: ToneTts;
  stt: SegmentStt;
  out: Recorder;
  errors: { message: string; fatal: boolean }[];
  context: ReturnType<typeof createLlmContext>;
  llmProc: LlmProcessor;
}

function rig(replies: ScriptedReply[], opts: { ttsGapMs?: number; heard?: string[] } = {}): Rig {
  const brain = new TwoStepBrain();
  const context = createLlmContext(brain.systemPrompt(), brain.tools());
  const llm = new ScriptedLlm(replies);
  const tts = new ToneTts(opts.ttsGapMs ?? 0);
  const stt = new SegmentStt(opts.heard ?? []);
  const out = new Recorder("out");
  const llmProc = new LlmProcessor(llm, context, { model: "scripted" });
  const processors: FrameProcessor[] = [
    new SttProcessor(stt),
    new UserContextAggregator(context),
    llmProc,
    new AssistantContextAggregator(context),
    new BrainProcessor(brain),
    new TtsProcessor(tts),
    out,
  ];
  const task = new PipelineTask(new Pipeline(processors), { enableMetrics: true });
  const errors: { message: string; fatal: boolean }[] = [];
  task.onError((message, fatal) => void errors.push({ message, fatal }));
  return { task, llm, tts, stt, out, errors, context, llmProc };
}

const userSays = (text: string): Frame =>
  makeFrame("Transcription", { text, userId: "user", final: true });

Deno.test("a keypad press is a user turn the model answers", async () => {
  const r = rig([{ text: ["You pressed five."] }]);
  await drive(r.task, async () => {
    await r.task.queueFrame(makeFrame("InputDtmf", { key: "5" }));
    await until(() => r.tts.said.length === 1 && r.out.kinds().includes("LlmResponseEnd"));
    await r.task.stopWhenDone();
  });
  assert.deepEqual(r.context.messages.slice(1), [
    { role: "user", content: 'The caller pressed "5" on the phone keypad.' },
    { role: "assistant", content: "You pressed five." },
  ]);
  assert.deepEqual(r.tts.said, ["You pressed five."]);
});

Deno.test("a user turn runs the model and speaks its reply sentence by sentence", async () => {
  const r = rig([{ text: ["Hello there. ", "How are ", "you?"] }]);
  await drive(r.task, async () => {
    await r.task.queueFrame(userSays("Hi"));
    await until(() => r.tts.said.length === 2 && r.out.kinds().includes("LlmResponseEnd"));
    await r.task.stopWhenDone();
  });
  // The first sentence is spoken before the model finished the reply.
  assert.deepEqual(r.tts.said, ["Hello there.", "How are you?"]);
  const kinds = r.out.kinds("downstream");
  // Speech and the reply's edges interleave; each keeps its documented order.
  const sentence = ["TtsText", "TtsStarted", "TtsAudio", "TtsAudio", "TtsAudio", "TtsStopped"];
  assert.deepEqual(kinds.filter((k) => k.startsWith("Tts")), [...sentence, ...sentence]);
  assert.deepEqual(kinds.filter((k) => k.startsWith("LlmResponse")), [
    "LlmResponseStart",
    "LlmResponseEnd",
  ]);
  assert.equal(kinds[0], "Transcription", "the caller's line is passed on for the transcript");
  assert.ok(!r.out.kinds().includes("LlmText"), "LlmText stops at the TTS");
  const bot = r.out.frames.find((f) =>
    f.frame.kind === "Transcription" && f.frame.userId === "bot"
  );
  assert.equal(bot && "text" in bot.frame ? bot.frame.text : "", "Hello there. How are you?");
  assert.deepEqual(r.context.messages.slice(1), [
    { role: "user", content: "Hi" },
    { role: "assistant", content: "Hello there. How are you?" },
  ]);
  assert.equal(r.llmProc.usage.totalTokens, 15);
  assert.deepEqual(r.errors, []);
});

Deno.test("a tool call goes through the brain; the model runs again with the result", async () => {
  const call = { toolCallId: "c1", functionName: "go_on", arguments: { why: "ready" } };
  const r = rig([{ text: ["One moment."], calls: [call] }, { text: ["Now step two."] }]);
  await drive(r.task, async () => {
    await r.task.queueFrame(userSays("Next please"));
    await until(() => r.llm.contexts.length === 2 && r.tts.said.length === 2, 3000);
    await r.task.stopWhenDone();
  });
  const second = r.llm.contexts[1].messages;
  assert.deepEqual(second[0], { role: "system", content: "You are step two." });
  assert.deepEqual(second.slice(1), [
    { role: "user", content: "Next please" },
    { role: "assistant", content: "One moment.", toolCalls: [call] },
    { role: "tool", toolCallId: "c1", content: JSON.stringify({ ok: true, node: "second" }) },
  ]);
  assert.deepEqual(r.llm.tools, [], "the new node's tools reached the service");
  assert.deepEqual(r.tts.said, ["One moment.", "Now step two."]);
});

Deno.test("an interruption aborts the model's stream and keeps what was said", async () => {
  const r = rig([{ text: ["One. ", "Two. ", "Three. ", "Four. ", "Five. ", "Six."], gapMs: 60 }]);
  await drive(r.task, async () => {
    await r.task.queueFrame(userSays("Count"));
    await until(() => r.tts.said.length >= 2, 3000);
    await r.task.queueFrame(makeFrame("Interruption", {}));
    await until(() => r.llm.signals[0]?.aborted === true, 1000, "model aborted");
    await r.task.stopWhenDone();
  });
  assert.ok(r.tts.said.length < 6, `spoke ${r.tts.said.length} of 6`);
  assert.ok(!r.out.kinds().includes("LlmResponseEnd"), "an aborted reply has no end");
  const last = r.context.messages.at(-1)!;
  assert.equal(last.role, "assistant");
  assert.match(last.content, /^One\. Two\./);
  assert.ok(!last.content.includes("Six"));
});

Deno.test("an interruption aborts text-to-speech mid-sentence", async () => {
  const r = rig([{ text: ["A rather long sentence to say."] }], { ttsGapMs: 80 });
  await drive(r.task, async () => {
    await r.task.queueFrame(userSays("Talk"));
    await until(() => r.out.kinds().includes("TtsAudio"), 3000);
    await r.task.queueFrame(makeFrame("Interruption", {}));
    await until(() => r.tts.aborted.length === 1, 1000, "synthesis aborted");
    await r.task.stopWhenDone();
  });
  assert.equal(r.out.kinds().filter((k) => k === "TtsAudio").length, 1);
});

Deno.test("a failing model is a non-fatal error and the bot says the fallback line", async () => {
  const r = rig([{ text: ["Hm"], fail: "upstream exploded" }, { text: ["Back again."] }]);
  await drive(r.task, async () => {
    await r.task.queueFrame(userSays("Hello?"));
    await until(() => r.tts.said.length === 2, 3000, "partial text and fallback spoken");
    await r.task.queueFrame(userSays("Still there?"));
    await until(() => r.tts.said.includes("Back again."), 3000);
    await r.task.stopWhenDone();
  });
  assert.equal(r.errors.length, 1);
  assert.equal(r.errors[0].fatal, false);
  assert.match(r.errors[0].message, /scripted-llm: upstream exploded/);
  // What the model said before failing, then the fallback line.
  assert.deepEqual(r.tts.said.slice(0, 2), [
    "Hm",
    "Sorry, I am having trouble answering right now.",
  ]);
  assert.ok(r.tts.said.includes("Back again."), "the call went on");
});

Deno.test("a batch STT is segmented by the caller's turn edges and feeds the model", async () => {
  const r = rig([{ text: ["Got it."] }], { heard: ["book a table"] });
  await drive(r.task, async () => {
    await r.task.queueFrame(makeFrame("UserStartedSpeaking", {}));
    for (let i = 0; i < 5; i++) {
      await r.task.queueFrame(
        makeFrame("InputAudio", {
          audio: { pcm: new Int16Array(320), sampleRate: 16000, numChannels: 1 },
        }),
      );
    }
    await r.task.queueFrame(makeFrame("UserStoppedSpeaking", {}));
    await until(() => r.tts.said.length === 1, 3000);
    await r.task.stopWhenDone();
  });
  assert.equal(r.stt.segments, 1);
  assert.equal(r.stt.heardFrames, 5);
  assert.deepEqual(r.llm.contexts[0].messages.at(-1), { role: "user", content: "book a table" });
});

Deno.test("the user aggregator waits for the end of the turn before committing", async () => {
  const r = rig([{ text: ["Both parts heard."] }]);
  await drive(r.task, async () => {
    await r.task.queueFrame(makeFrame("UserStartedSpeaking", {}));
    await r.task.queueFrame(userSays("first part"));
    await r.task.queueFrame(userSays("second part"));
    await until(() => r.out.kinds().filter((k) => k === "Transcription").length === 2);
    assert.equal(r.llm.contexts.length, 0, "no reply while the caller speaks");
    await r.task.queueFrame(makeFrame("UserStoppedSpeaking", {}));
    await until(() => r.tts.said.length === 1, 3000);
    await r.task.stopWhenDone();
  });
  assert.deepEqual(r.llm.contexts[0].messages.at(-1), {
    role: "user",
    content: "first part second part",
  });
});
