/**
 * PlayoutLedger: the bot words laid on the output's audio timeline, pieces reported once they
 * have played, and where an interruption cut them.
 */

import assert from "node:assert/strict";
import { DEFAULT_MS_PER_CHAR, PlayoutLedger } from "../core/playout_ledger.ts";

/** Two sentences of one reply, 1 s and 2 s of audio, as a TTS processor sends them. */
function twoSentences(): PlayoutLedger {
  const ledger = new PlayoutLedger();
  ledger.text("reply-1", "Hello there.");
  ledger.audio(600);
  ledger.audio(400);
  ledger.close();
  ledger.text("reply-1", "How are you doing today?");
  ledger.audio(2000);
  ledger.close();
  return ledger;
}

Deno.test("a sentence is reported once all its audio has played, and only once", () => {
  const ledger = twoSentences();
  assert.deepEqual(ledger.played(999), []);
  assert.deepEqual(ledger.played(1000), [{ utteranceId: "reply-1", text: "Hello there." }]);
  assert.deepEqual(ledger.played(2500), []);
  assert.deepEqual(ledger.played(3000), [{
    utteranceId: "reply-1",
    text: "How are you doing today?",
  }]);
  assert.equal(ledger.active, false);
});

Deno.test("an interruption cuts the sentence playing on a word boundary, by its share of audio", () => {
  const ledger = twoSentences();
  const at = 1000 + 2000 * 0.5; // half of the second sentence
  assert.deepEqual(ledger.cut(at), {
    spoken: [{ utteranceId: "reply-1", text: "Hello there." }],
    cut: {
      utteranceId: "reply-1",
      text: "How are you doing today?",
      heard: "How are you", // 10 of its 20 letters: "How are you d" back to a whole word
      fraction: 0.5,
    },
  });
  // The timeline starts again; the cut utterance's late words are not new speech.
  assert.equal(ledger.queuedMs, 0);
  ledger.text("reply-1", "Anything else?");
  assert.equal(ledger.active, false);
});

Deno.test("a cut between segments has no cut piece; queued segments are unheard", () => {
  const ledger = new PlayoutLedger();
  ledger.audio(500); // audio with no words (a chime): on the timeline, in no segment
  ledger.text("say-1", "Moving on.");
  ledger.audio(800);
  ledger.close();
  assert.deepEqual(ledger.cut(300), { spoken: [] });
});

Deno.test("a realtime turn: words added as they come, audio before them, closed at turn end", () => {
  const ledger = new PlayoutLedger();
  ledger.text("turn-1", "");
  ledger.audio(1000);
  ledger.text("turn-1", "Sure, let ");
  ledger.text("turn-1", "me help.");
  ledger.audio(1000);
  assert.deepEqual(ledger.played(2000), [], "open: more audio may come");
  ledger.close();
  assert.deepEqual(ledger.played(2000), [{ utteranceId: "turn-1", text: "Sure, let me help." }]);
});

Deno.test("a segment still synthesizing lasts at least as long as its text at the speech rate", () => {
  const ledger = new PlayoutLedger();
  assert.equal(ledger.msPerChar, DEFAULT_MS_PER_CHAR);
  const text = "This sentence is still being synthesized."; // 41 characters
  ledger.text("reply-2", text);
  ledger.audio(400); // far less than the text takes to say
  const { cut } = ledger.cut(400);
  // Not taken as played in full: 400 ms of about 41 * 65 ms.
  assert.ok(cut !== undefined && cut.fraction < 0.2, JSON.stringify(cut));
  assert.equal(cut.heard, "This");
});

Deno.test("the speech rate is learned from the call's finished segments", () => {
  const ledger = new PlayoutLedger();
  ledger.text("a", "x".repeat(50));
  ledger.audio(1000); // 20 ms a character
  ledger.close();
  assert.equal(ledger.msPerChar, 20);
});

Deno.test("headClosed: whether played() could report anything, however far playout has got", () => {
  const ledger = new PlayoutLedger();
  assert.equal(ledger.headClosed, false, "empty");
  ledger.text("turn-1", "");
  ledger.audio(500);
  assert.equal(ledger.headClosed, false, "its audio still arriving");
  assert.deepEqual(ledger.played(10_000), [], "an open segment is never reported");
  ledger.close();
  assert.equal(ledger.headClosed, true);
  assert.deepEqual(ledger.played(499), []);
  assert.equal(ledger.headClosed, true, "not played yet: still to report");
  ledger.played(500);
  assert.equal(ledger.headClosed, false, "reported and forgotten");
});
