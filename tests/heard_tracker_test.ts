/**
 * HeardTracker: lines heard in full are forgotten; an interruption cuts every other expected line
 * to what played of it; a line written after its utterance was cut is cut as it comes.
 */

import assert from "node:assert/strict";
import type { PlayoutCut } from "../mod.ts";
import { HeardTracker } from "../core/heard_tracker.ts";

const cut = (utteranceId: string, text: string, heard: string, fraction = 0.5): PlayoutCut => ({
  utteranceId,
  text,
  heard,
  fraction,
});

Deno.test("a line heard in full is not cut by a later interruption", () => {
  const t = new HeardTracker<string>();
  t.spoken("reply-1", "Hello there."); // played before the reply was committed
  assert.equal(t.expect("reply-1", "Hello there.", "m1"), undefined);
  assert.equal(t.expect("reply-2", "One. Two.", "m2"), undefined);
  t.spoken("reply-2", "One.");
  t.spoken("reply-2", "Two.");
  assert.equal(t.pending, 0);
  assert.deepEqual(t.interrupted(undefined), []);
});

Deno.test("the interrupted line keeps its played sentences and the heard part of the cut one", () => {
  const t = new HeardTracker<string>();
  t.expect("reply-1", "First one. Second one is longer. Third.", "m");
  t.spoken("reply-1", "First one.");
  assert.deepEqual(
    t.interrupted(cut("reply-1", "Second one is longer.", "Second one")),
    [{ target: "m", heard: "First one. Second one" }],
  );
  assert.equal(t.pending, 0);
});

Deno.test("lines none of which played are cut to nothing (still generating, or queued)", () => {
  const t = new HeardTracker<string>();
  t.expect("reply-1", "Playing now.", "playing");
  t.expect("reply-2", "After the tool call.", "after");
  assert.deepEqual(t.interrupted(cut("reply-1", "Playing now.", "Playing")), [
    { target: "playing", heard: "Playing" },
    { target: "after", heard: "" },
  ]);
});

Deno.test("a line whose utterance was cut before it came is cut as it is expected", () => {
  const t = new HeardTracker<string>();
  // A realtime turn: voice first, its words only after the barge-in, placed by the audio share.
  assert.deepEqual(t.interrupted(cut("turn-1", "", "", 0.8)), []);
  assert.equal(t.expect("turn-1", "Sure, let me help.", "line"), "Sure, let me");
  // Once only: the id is consumed.
  assert.equal(t.expect("turn-1", "Sure, let me help.", "again"), undefined);
  // Words the output had: their heard part counts, whatever the line's spacing.
  t.spoken("turn-2", "Well, ");
  t.interrupted(cut("turn-2", "actually no", "actually"));
  assert.equal(t.expect("turn-2", "Well,   actually no.", "line 2"), "Well,   actually");
});
