/**
 * A whole speech-to-speech call (Twilio framing -> buildS2sTask -> the real Gemini Live client
 * -> the fake) across two provider handovers: a `goAway` whose deadline cuts the answer, then a
 * TCP drop. The caller hears the whole answer, the transcript has it, and the call completes
 * once when the brain ends it.
 */
import assert from "node:assert/strict";
import { GraphBrain } from "../core/agent/graph_brain.ts";
import { parseGraphSpec } from "../core/agent/graph_spec.ts";
import { sine } from "../core/audio/pcm.ts";
import { silentLogger } from "../core/log.ts";
import { createGeminiLive } from "../providers/google/gemini_live.ts";
import { sleep, until } from "./_core_helpers.ts";
import { s2sTwilioCall } from "./_s2s_twilio.ts";
import { GeminiLiveFake } from "./fakes/gemini_live_fake.ts";

const GRAPH = `
version: 1
start: help
nodes:
  - id: help
    prompt: Answer questions about orders.
    transitions:
      - name: done
        description: The caller has no more questions.
        target: bye
  - id: bye
    prompt: Say goodbye.
    terminal: true
`;

const ANSWER = "Your parcel left Lyon this morning and will reach you on Thursday afternoon"
  .split(" ");

Deno.test("s2s call across a goAway cut and a TCP drop: whole answer heard, completed once", async () => {
  const fake = await new GeminiLiveFake().start();
  const spec = parseGraphSpec(GRAPH);
  if (!spec.ok) throw new Error(JSON.stringify(spec.problems));
  // The model goes on from the heard point when told its answer was cut.
  fake.model.onClientContent = (n, turns, answerNow) => {
    if (!answerNow) return;
    const heard = turns.find((t) => t.role === "model")?.text ?? "";
    const from = heard === "" ? 0 : heard.split(" ").length;
    void fake.model.reply(n, ANSWER.slice(from), { firstWord: from + 1, wordMs: 100 });
  };
  const realtime = createGeminiLive({
    apiKey: "k",
    url: fake.url,
    logger: silentLogger,
    options: { reconnectBackoffMs: 20 },
  });
  const { call, finished, sessions, completions } = await s2sTwilioCall(
    realtime,
    { brain: new GraphBrain(spec.spec), model: "gemini" },
    "gemini",
  );
  try {
    await fake.waitFor((m) => m.kind === "setup");
    await until(() => fake.timeline.includes("c1 >setupComplete"), 3000, "c1 ready");
    await sleep(100);
    fake.model.issueHandle(1);
    await sleep(100);
    // The caller asks (0.4 s); the answer starts; goAway; its deadline cuts the answer.
    await call.speak(sine({ freq: 400, sampleRate: 8000, samples: 3200, amplitude: 8000 }));
    await until(() => fake.messages("realtimeInput", 1).length >= 18, 3000, "question");
    const first = fake.model.reply(1, ANSWER, { wordMs: 100 });
    await sleep(300);
    fake.model.goAway(1, 400);
    assert.ok((await first) < ANSWER.length, "the deadline cut the answer");
    // The whole answer reaches the caller: 100 ms per word, 20 ms per media message.
    await until(() => call.media().length >= ANSWER.length * 5, 8000, "the whole answer");
    // Later the TCP connection drops with no answer running; the call goes on.
    await sleep(200);
    fake.dropAbruptly();
    await until(() => fake.timeline.includes("c3 >setupComplete"), 5000, "c3 ready");
    await sleep(100);
    fake.send({ toolCall: { functionCalls: [{ id: "c-end", name: "end_call", args: {} }] } }, 3);
    const report = await finished;
    assert.equal(completions(), 1, "the call completed once");
    assert.match(String(report.usage.endedBy), /^end: brain/);
    const doc = JSON.parse(
      new TextDecoder().decode(sessions.memoryArtifact("run-1-transcript.json")),
    );
    const botText = doc.lines.filter((l: { role: string }) => l.role === "bot")
      .map((l: { text: string }) => l.text).join(" ");
    assert.equal(botText, ANSWER.join(" "), "the transcript holds the whole answer once");
  } finally {
    await call.close();
    await fake.close();
  }
});
