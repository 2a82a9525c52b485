/** Cutting a line to what was heard: visible-character counts, whole words, no dangling marks. */

import assert from "node:assert/strict";
import { cutAtFraction, heardPrefix, visibleLength } from "../core/heard_text.ts";

Deno.test("visibleLength counts what is not white space, code points not UTF-16 units", () => {
  assert.equal(visibleLength(" Hello,\n there! "), 12);
  assert.equal(visibleLength(""), 0);
  assert.equal(visibleLength("ok 👍"), 3);
});

Deno.test("heardPrefix cuts back to a whole word and drops soft punctuation left hanging", () => {
  const text = "Sure, let me help you with that.";
  assert.equal(heardPrefix(text, 0), "");
  assert.equal(heardPrefix(text, 3), "", "the first word was not heard in full");
  assert.equal(heardPrefix(text, 4), "Sure");
  assert.equal(heardPrefix(text, 5), "Sure");
  assert.equal(heardPrefix(text, 9), "Sure, let");
  assert.equal(heardPrefix(text, 10), "Sure, let me");
  assert.equal(heardPrefix(text, 26), text, "everything heard: the text itself");
  assert.equal(heardPrefix("One. Two — three", 7), "One. Two");
  assert.equal(
    heardPrefix("First sentence. Second", 14),
    "First sentence.",
    "a sentence end stays",
  );
});

Deno.test("heardPrefix keeps the line's own spacing and cuts text without spaces per character", () => {
  assert.equal(heardPrefix("Hello\nthere,  friend", 10), "Hello\nthere");
  assert.equal(heardPrefix("你好世界", 2), "你好");
});

Deno.test("cutAtFraction spreads the characters evenly over the audio", () => {
  assert.equal(cutAtFraction("one two three four", 0.5), "one two");
  assert.equal(cutAtFraction("one two three four", 0), "");
  assert.equal(cutAtFraction("one two three four", 1), "one two three four");
  assert.equal(cutAtFraction("one two three four", 1.7), "one two three four", "clamped");
  assert.equal(cutAtFraction("one two three four", -1), "", "clamped");
});
