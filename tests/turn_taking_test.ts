/**
 * Adaptive turn-taking on real speech: espeak-ng utterances (made now, nothing committed) paced in
 * real time over a Twilio-protocol socket into a cascaded call with the default energy VAD and the
 * eSpeak voice (bench/turns.ts, the bench's own harness). A caller who pauses 600-700 ms inside a
 * sentence is not cut off; a finished sentence is answered well under the old fixed 800 ms window.
 * The bounds are loose: other tests share the two cores.
 */

import assert from "node:assert/strict";
import { DEFAULT_TURN_WINDOWS } from "../mod.ts";
import { runTurnsCase } from "../bench/turns.ts";
import { speakUtterance } from "../bench/turn_speech.ts";

Deno.test("turn taking: mid-sentence pauses are not turns; finished sentences are answered fast", async () => {
  const utterances = await Promise.all([
    speakUtterance({
      pieces: ["We are flying to Paris", "on the twelfth of May."],
      pausesMs: [600],
    }),
    speakUtterance({
      pieces: ["Can you tell me the", "opening hours on Sunday?"],
      pausesMs: [700],
    }),
    speakUtterance({ pieces: ["What time do you open on Sunday?"], pausesMs: [] }),
    speakUtterance({ pieces: ["My order has not arrived yet."], pausesMs: [] }),
  ]);
  const samples = await runTurnsCase(
    { name: "adaptive", turns: { ...DEFAULT_TURN_WINDOWS }, sttDelayMs: 0, llmTtfbMs: 0 },
    utterances,
  );
  const shown = JSON.stringify(samples, null, 1);
  assert.equal(samples.filter((s) => s.premature).length, 0, shown);
  for (const s of samples) {
    assert.ok(s.firstAudioMs !== undefined && s.firstAudioMs > 0, shown);
    // The 200 ms pause plus a little: far from the old 800 ms window plus synthesis.
    assert.ok(s.firstAudioMs < 650, shown);
  }
});
