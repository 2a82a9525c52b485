/** What a reseeded OpenAI session is given: the conversation as heard and the untranscribed audio. */

import assert from "node:assert/strict";
import { AudioBacklog, OpenAIConversation } from "../providers/openai/realtime_history.ts";

const texts = (c: OpenAIConversation) =>
  c.seedEvents("ga").map((e) => {
    const item = e.item as { type: string; role?: string; content?: { text: string }[] };
    return item.type === "message" ? `${item.role}:${item.content![0].text}` : item.type;
  });

Deno.test("conversation: a barged-in answer is kept as far as it was said, not as generated", () => {
  const c = new OpenAIConversation();
  c.userSaid("Tell me a story");
  c.answerPart("Once upon");
  c.answerPart(" a time");
  c.answerCut(); // the caller talks over it
  c.answerDone("Once upon a time there was a king"); // the full generated transcript comes later
  c.responseDone();
  c.userSaid("Shorter please");
  c.answerPart("A king.");
  c.answerDone("A king.");
  c.responseDone();
  assert.deepEqual(texts(c), [
    "user:Tell me a story",
    "assistant:Once upon a time",
    "user:Shorter please",
    "assistant:A king.",
  ]);
  assert.equal(c.takeCutAnswer(), undefined, "nothing is running");
});

Deno.test("conversation: the answer a drop cuts is closed with what was heard", () => {
  const c = new OpenAIConversation();
  c.toolCall("call_1", "lookup", { id: 7 });
  c.toolResult("call_1", '{"ok":true}');
  c.answerPart("Your order");
  assert.deepEqual(c.takeCutAnswer(), { heard: "Your order" });
  assert.deepEqual(texts(c), ["function_call", "function_call_output", "assistant:Your order"]);
  c.answerPart(""); // audio, no transcript yet
  assert.deepEqual(c.takeCutAnswer(), { heard: "" });
});

Deno.test("backlog: a transcribed turn's audio goes; what follows its commit stays", () => {
  const dropped: number[] = [];
  const b = new AudioBacklog(1000, () => dropped.push(1));
  b.push("q1", 100, true);
  b.push("q2", 100, true);
  b.committed();
  b.push("after", 100, true);
  b.transcribed();
  b.push("down", 100, false);
  assert.deepEqual(b.replay(), { chunks: ["after", "down"], ms: 200, missingMs: 0 });
});

Deno.test("backlog: the bound drops sent audio quietly, unsent audio with one warning", () => {
  const dropped: number[] = [];
  const b = new AudioBacklog(300, () => dropped.push(1));
  for (let i = 0; i < 5; i++) b.push(`s${i}`, 100, true);
  assert.deepEqual(dropped, []);
  for (let i = 0; i < 4; i++) b.push(`u${i}`, 100, false);
  assert.deepEqual(dropped, [1]);
  const r = b.replay();
  assert.deepEqual(r.chunks, ["u1", "u2", "u3"]);
  assert.equal(r.missingMs, 500);
});
