/** Reading a transcript for the end of the caller's turn, and the windows that follow from it. */

import assert from "node:assert/strict";
import { DEFAULT_TURN_WINDOWS, FlowcatError } from "../mod.ts";
import { silenceNeededMs, transcriptCompleteness, validateTurnWindows } from "../core/turn_end.ts";

Deno.test("a question or a finished sentence reads complete", () => {
  for (
    const t of [
      "What time is it?",
      "Can I get a?",
      "I need to change my delivery address.",
      "Thanks!",
      'He said "fine."',
      "My order has not arrived yet.",
    ]
  ) {
    assert.equal(transcriptCompleteness(t), "complete", t);
  }
});

Deno.test("a sentence trailing off on an article, conjunction or filler reads incomplete", () => {
  for (
    const t of [
      "I would like to book a",
      "Can you tell me the",
      "I want to change my",
      "and",
      "It was late and.",
      "So, um",
      "I was thinking, uh...",
      "My number is 4 5 6 -",
      "I need a taxi,",
      "My account number is",
      "Could you send it to",
    ]
  ) {
    assert.equal(transcriptCompleteness(t), "incomplete", t);
  }
});

Deno.test("no punctuation and no telling word, or a rare last word with a stop, reads unsure", () => {
  for (
    const t of [
      "I would like to book a table",
      "The problem started",
      "yes",
      "Yes, I'd like to.",
      "I wanted to talk about.",
      "",
    ]
  ) {
    assert.equal(transcriptCompleteness(t), "unsure", t);
  }
});

Deno.test("the transcriber's end of utterance makes a reading one step more finished", () => {
  assert.equal(transcriptCompleteness("The problem started", true), "complete");
  assert.equal(transcriptCompleteness("I would like to book a", true), "unsure");
  assert.equal(transcriptCompleteness("What time is it?", true), "complete");
});

Deno.test("each reading waits its own window", () => {
  const w = DEFAULT_TURN_WINDOWS;
  assert.equal(silenceNeededMs(w, "complete"), w.completeMs);
  assert.equal(silenceNeededMs(w, "unsure"), w.unsureMs);
  assert.equal(silenceNeededMs(w, "incomplete"), w.incompleteMs);
  assert.ok(w.completeMs <= w.unsureMs && w.unsureMs <= w.incompleteMs);
});

Deno.test("windows out of order or out of range are a config error", () => {
  const w = { ...DEFAULT_TURN_WINDOWS };
  assert.deepEqual(validateTurnWindows(w), w);
  assert.throws(
    () => validateTurnWindows({ ...w, completeMs: 900 }),
    (e: unknown) => e instanceof FlowcatError && /complete <= unsure <= incomplete/.test(e.message),
  );
  assert.throws(() => validateTurnWindows({ ...w, pauseMs: -1 }), FlowcatError);
  assert.throws(() => validateTurnWindows({ ...w, incompleteMs: 20_000 }), FlowcatError);
});
