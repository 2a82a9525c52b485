/**
 * The end of the caller's turn, decided by what they said (UserContextAggregator with turn
 * windows), and the draft replies started while it waits (LlmProcessor holding them): answered
 * at once when finished, drafted and held when unclear, the draft dropped and its request
 * aborted when the caller goes on, never a reply twice, and a turn answered too soon reopened.
 */

import assert from "node:assert/strict";
import {
  AssistantContextAggregator,
  BrainProcessor,
  createLlmContext,
  type Frame,
  LlmProcessor,
  makeFrame,
  Pipeline,
  PipelineTask,
  type TurnWindows,
  UserContextAggregator,
} from "../mod.ts";
import { ScriptedLlm, type ScriptedReply } from "./_cascade_doubles.ts";
import { drive, Recorder, sleep, until } from "./_core_helpers.ts";

/** Short windows, far enough apart to tell which one ended a turn. */
const WINDOWS: TurnWindows = {
  pauseMs: 0,
  completeMs: 0,
  unsureMs: 250,
  incompleteMs: 600,
  speculate: true,
};

function rig(replies: ScriptedReply[], windows: TurnWindows = WINDOWS) {
  const context = createLlmContext("Be brief.", []);
  const llm = new ScriptedLlm(replies);
  const out = new Recorder("out");
  const user = new UserContextAggregator(context, { turns: windows });
  const task = new PipelineTask(
    new Pipeline([
      user,
      new LlmProcessor(llm, context),
      new AssistantContextAggregator(context),
      out,
    ]),
    {},
  );
  /** When each reply started reaching the output. */
  const replies_ = () => out.frames.filter((f) => f.kind === "LlmResponseStart").length;
  return { context, llm, out, task, replies: replies_ };
}

const says = (text: string): Frame =>
  makeFrame("Transcription", { text, userId: "user", final: true });
const started = () => makeFrame("UserStartedSpeaking", {});
const stopped = () => makeFrame("UserStoppedSpeaking", {});

/** The caller says `text` and pauses (a batch transcriber: the words come after the pause). */
async function turn(task: PipelineTask, text: string): Promise<number> {
  await task.queueFrame(started());
  await task.queueFrame(stopped());
  const at = performance.now();
  await task.queueFrame(says(text));
  return at;
}

Deno.test("turns: a finished sentence is answered at the pause, with no draft", async () => {
  const r = rig([{ text: ["Noon."] }]);
  await drive(r.task, async () => {
    const at = await turn(r.task, "What time is it?");
    await until(() => r.replies() === 1, 2000, "reply");
    assert.ok(performance.now() - at < 200, "no wait for a finished sentence");
    await r.task.stopWhenDone();
  });
  assert.equal(r.llm.contexts.length, 1);
  assert.deepEqual(r.context.messages.slice(1), [
    { role: "user", content: "What time is it?" },
    { role: "assistant", content: "Noon." },
  ]);
});

Deno.test("turns: an unclear turn waits its window; the reply drafted meanwhile is held, then played", async () => {
  const r = rig([{ text: ["Sure."] }]);
  await drive(r.task, async () => {
    const at = await turn(r.task, "I would like to book a table");
    await until(() => r.llm.contexts.length === 1, 1000, "draft started");
    await sleep(100);
    assert.equal(r.replies(), 0, "the draft is held while the caller may go on");
    assert.equal(r.context.messages.length, 1, "nothing written before the turn is over");
    await until(() => r.replies() === 1, 2000, "reply played");
    const waited = performance.now() - at;
    assert.ok(waited >= 240, `waited ${waited} ms`);
    await r.task.stopWhenDone();
  });
  assert.equal(r.llm.contexts.length, 1, "one request: the draft became the reply");
  assert.equal(r.llm.signals[0].aborted, false);
  assert.deepEqual(r.context.messages.slice(1), [
    { role: "user", content: "I would like to book a table" },
    { role: "assistant", content: "Sure." },
  ]);
});

Deno.test("turns: the caller goes on: the draft's request is aborted, one reply to the whole turn", async () => {
  const r = rig([{ text: ["For one?"], gapMs: 150 }, { text: ["Booked for two."] }]);
  await drive(r.task, async () => {
    await turn(r.task, "I would like to book a table");
    await until(() => r.llm.contexts.length === 1, 1000, "draft started");
    await turn(r.task, "for two people.");
    await until(() => r.replies() === 1, 2000, "reply");
    await sleep(50);
    await r.task.stopWhenDone();
  });
  assert.equal(r.llm.signals[0].aborted, true, "the draft's request was aborted");
  assert.equal(r.replies(), 1, "no duplicate reply");
  const texts = r.out.frames.filter((f) => f.kind === "LlmText").map((f) =>
    f.frame.kind === "LlmText" ? f.frame.text : ""
  );
  assert.deepEqual(texts, ["Booked for two."]);
  assert.deepEqual(r.context.messages.slice(1), [
    { role: "user", content: "I would like to book a table for two people." },
    { role: "assistant", content: "Booked for two." },
  ]);
});

Deno.test("turns: an unfinished turn waits the longest window and is not drafted", async () => {
  const r = rig([{ text: ["Go on."] }]);
  await drive(r.task, async () => {
    const at = await turn(r.task, "My account number is");
    await sleep(400);
    assert.equal(r.llm.contexts.length, 0, "no draft for words that need more");
    await until(() => r.replies() === 1, 2000, "answered anyway");
    assert.ok(performance.now() - at >= 590);
    await r.task.stopWhenDone();
  });
});

Deno.test("turns: the transcriber's end of utterance ends an unclear turn at once", async () => {
  const r = rig([{ text: ["Okay."] }]);
  await drive(r.task, async () => {
    await r.task.queueFrame(started());
    await r.task.queueFrame(stopped());
    const at = performance.now();
    await r.task.queueFrame(
      makeFrame("Transcription", {
        text: "The problem started",
        userId: "user",
        final: true,
        endOfUtterance: true,
      }),
    );
    await until(() => r.replies() === 1, 2000, "reply");
    assert.ok(performance.now() - at < 200);
    await r.task.stopWhenDone();
  });
});

Deno.test("turns: a draft's tool call waits for the turn to end", async () => {
  const call = { toolCallId: "t1", functionName: "lookup", arguments: {} };
  const context = createLlmContext("Be brief.", []);
  const llm = new ScriptedLlm([{ text: ["Checking."], calls: [call] }, { text: ["Done."] }]);
  const asked: string[] = [];
  const brain = {
    systemPrompt: () => "Be brief.",
    tools: () => [],
    currentNodeId: () => "n",
    onToolCall: (name: string) => {
      asked.push(name);
      return { type: "stay" as const, result: "found" };
    },
    isFinished: () => false,
    collectedVars: () => ({}),
  };
  const out = new Recorder("out");
  const task = new PipelineTask(
    new Pipeline([
      new UserContextAggregator(context, { turns: WINDOWS }),
      new LlmProcessor(llm, context),
      new AssistantContextAggregator(context),
      new BrainProcessor(brain),
      out,
    ]),
    {},
  );
  await drive(task, async () => {
    await turn(task, "Look up my order");
    await until(() => llm.contexts.length === 1, 1000, "draft started");
    await sleep(100);
    assert.deepEqual(asked, [], "no tool runs for a turn that is not over");
    await until(() => llm.contexts.length === 2, 2000, "the tool ran, the model ran again");
    await task.stopWhenDone();
  });
  assert.deepEqual(asked, ["lookup"]);
  assert.deepEqual(context.messages.slice(1), [
    { role: "user", content: "Look up my order" },
    { role: "assistant", content: "Checking.", toolCalls: [call] },
    { role: "tool", toolCallId: "t1", content: "found" },
    { role: "assistant", content: "Done." },
  ]);
});

Deno.test("turns: speaking again before any of the reply played reopens the turn", async () => {
  // The reply's text streams slowly: the caller goes on after the turn ended, before it plays.
  const r = rig([{ text: ["Sure, ", "which day?"], gapMs: 200 }, { text: ["Booked Friday."] }]);
  await drive(r.task, async () => {
    await turn(r.task, "Book me a table.");
    await until(() => r.llm.contexts.length === 1, 1000, "answered");
    await r.task.queueFrame(started());
    await until(() => r.llm.signals[0]?.aborted === true, 1000, "reply aborted");
    await r.task.queueFrame(stopped());
    await r.task.queueFrame(says("On Friday."));
    await until(() => r.llm.contexts.length === 2, 2000, "asked again");
    await until(() => r.out.kinds().filter((k) => k === "LlmResponseEnd").length === 1, 2000);
    await r.task.stopWhenDone();
  });
  assert.equal(
    r.out.events.filter((e) => e === "interruption").length,
    1,
    "the unplayed reply was interrupted",
  );
  assert.deepEqual(r.llm.contexts[1].messages.slice(1), [
    { role: "user", content: "Book me a table. On Friday." },
  ]);
});
