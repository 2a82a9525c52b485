import assert from "node:assert/strict";
import { SentenceSplitter } from "../core/sentences.ts";

function split(pieces: string[]): string[] {
  const s = new SentenceSplitter();
  return [...pieces.flatMap((p) => s.push(p)), ...s.flush()];
}

Deno.test("sentences end at . ! ? followed by a space, across streamed pieces", () => {
  const s = new SentenceSplitter();
  assert.deepEqual(s.push("Hello there. How a"), ["Hello there."]);
  assert.deepEqual(s.push("re you?"), [], "the end is known only when the next char comes");
  assert.deepEqual(s.push(" Fine!"), ["How are you?"]);
  assert.deepEqual(s.flush(), ["Fine!"]);
  assert.deepEqual(s.flush(), []);
});

Deno.test("abbreviations, initials, decimals and closing quotes do not split wrongly", () => {
  assert.deepEqual(split(["Dr. Smith paid 3.14 dollars. ", "J. R. R. Tolkien wrote it."]), [
    "Dr. Smith paid 3.14 dollars.",
    "J. R. R. Tolkien wrote it.",
  ]);
  assert.deepEqual(split(['He said "stop." Then he left.']), ['He said "stop."', "Then he left."]);
  assert.deepEqual(split(["So do I. Then what?"]), ["So do I.", "Then what?"]);
  assert.deepEqual(split(["Wait... what?! Really."]), ["Wait...", "what?!", "Really."]);
});

Deno.test("line breaks end a sentence; CJK stops need no space", () => {
  assert.deepEqual(split(["- one\n- two\n"]), ["- one", "- two"]);
  assert.deepEqual(split(["你好。再见。"]), ["你好。", "再见。"]);
});

Deno.test("a run without an end is cut at a space before maxChars", () => {
  const s = new SentenceSplitter({ maxChars: 20 });
  const out = s.push("alpha beta gamma delta epsilon zeta eta");
  assert.ok(out.length >= 1);
  for (const o of out) assert.ok(o.length <= 21, o);
  assert.equal([...out, ...s.flush()].join(" "), "alpha beta gamma delta epsilon zeta eta");
});

Deno.test("reset drops pending text", () => {
  const s = new SentenceSplitter();
  s.push("half a sent");
  s.reset();
  assert.equal(s.pending, "");
  assert.deepEqual(s.flush(), []);
});
