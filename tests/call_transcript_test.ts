/**
 * CallTranscript: bot lines follow what the output transport says was heard; the listener sees
 * a cut line again at its index; a realtime line that comes after its cut is cut as it comes.
 */

import assert from "node:assert/strict";
import { CallTranscript, makeFrame, type TranscriptLine } from "../mod.ts";

const bot = (text: string, utteranceId: string) =>
  makeFrame("Transcription", { text, userId: "bot", final: true, utteranceId });

Deno.test("a bot line cut by a barge-in is cut in place and shown again at its index", () => {
  const seen: [number, string, boolean][] = [];
  const t = new CallTranscript((line, i) => void seen.push([i, line.text, !!line.interrupted]));
  t.observe(bot("Hello.", "greeting-1"));
  t.observe(makeFrame("SpokenText", { utteranceId: "greeting-1", text: "Hello." }));
  t.observe(makeFrame("Transcription", { text: "Weather?", userId: "user", final: true }));
  t.observe(bot("Sunny now. Rain later.", "reply-9"));
  t.observe(makeFrame("SpokenText", { utteranceId: "reply-9", text: "Sunny now." }));
  t.observe(makeFrame("BotInterrupted", {
    cut: { utteranceId: "reply-9", text: "Rain later.", heard: "Rain", fraction: 0.5 },
  }));
  assert.deepEqual(seen, [
    [0, "Hello.", false],
    [1, "Weather?", false],
    [2, "Sunny now. Rain later.", false],
    [2, "Sunny now. Rain", true],
  ]);
  assert.deepEqual(t.lines.map(({ text, interrupted }) => ({ text, interrupted })), [
    { text: "Hello.", interrupted: undefined },
    { text: "Weather?", interrupted: undefined },
    { text: "Sunny now. Rain", interrupted: true },
  ]);
});

Deno.test("a realtime line that comes after its barge-in is added already cut", () => {
  const seen: TranscriptLine[] = [];
  const t = new CallTranscript((line) => void seen.push({ ...line }));
  t.observe(makeFrame("BotInterrupted", {
    cut: { utteranceId: "turn-3", text: "", heard: "", fraction: 0.5 },
  }));
  t.observe(bot("one two three four", "turn-3"));
  assert.equal(seen.length, 1);
  assert.deepEqual({ ...seen[0], atMs: 0 }, {
    role: "bot",
    text: "one two",
    atMs: 0,
    interrupted: true,
  });
});

Deno.test("lines without an utterance id, and user lines, are never cut", () => {
  const t = new CallTranscript();
  t.observe(makeFrame("Transcription", { text: "untracked", userId: "bot", final: true }));
  t.observe(makeFrame("Transcription", { text: "me", userId: "user", final: true }));
  t.observe(makeFrame("BotInterrupted", {}));
  assert.deepEqual(t.lines.map((l) => [l.text, l.interrupted]), [
    ["untracked", undefined],
    ["me", undefined],
  ]);
});
