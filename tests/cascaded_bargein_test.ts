/**
 * A cascaded call where the caller talks over the bot's reply, over in-process doubles (scripted
 * voice activity, STT, LLM and a tone TTS of 40 ms a character) and an in-memory leg paced at
 * real time: the reply's context message, its transcript line (live and saved) and what the
 * model is sent next all end where the bot's playout stopped, and the line is marked.
 */

import assert from "node:assert/strict";
import { buildCascadedTask, type CascadedParts } from "../core/builders.ts";
import type { AudioFrame, VadAnalyzer, VadState } from "../mod.ts";
import { silentLogger } from "../core/log.ts";
import type { TranscriptLine } from "../core/processors/finalize.ts";
import type { Finalize } from "../core/seams.ts";
import { MemorySessionSource } from "../server/session_store.ts";
import { ScriptedLlm, type ScriptedReply, SegmentStt, ToneTts } from "./_cascade_doubles.ts";
import { sleep, until } from "./_core_helpers.ts";
import { FakeLeg } from "./_fake_leg.ts";
import { movingOnBrain } from "./_graph_fixture.ts";

/** Voice activity the test switches on and off. */
class ScriptedVad implements VadAnalyzer {
  state: VadState = "quiet";
  sampleRate(): number {
    return 16000;
  }
  analyze(_audio: AudioFrame): VadState {
    return this.state;
  }
  setParams(): void {}
}

const MS_PER_CHAR = 40;
const GREETING = "Hello.";
const S1 = "It is sunny this morning.";
const S2 = "Later today clouds roll in from the west.";
const S3 = "Tonight it will rain hard.";
const ms = (text: string) => text.length * MS_PER_CHAR;

interface Rig {
  leg: FakeLeg;
  llm: ScriptedLlm;
  tts: ToneTts;
  sessions: MemorySessionSource;
  runId: number;
  parts: CascadedParts;
  /** What the live view saw: each line at its index, again when it is cut. */
  shown: { index: number; text: string; interrupted?: true }[];
  running: Promise<unknown>;
  finished: Promise<Finalize>;
  /** The caller talks (or stops): the scripted VAD's state, seen by a few 20 ms frames. */
  caller(state: VadState): Promise<void>;
}

/**
 * A cascaded call on the doubles, `replies` the model's and `heard` the caller's turns, in order;
 * resolves once the greeting has played out (unless the test talks over it).
 */
async function rig(
  replies: ScriptedReply[],
  heard: string[],
  greeting = GREETING,
): Promise<Rig> {
  const leg = new FakeLeg();
  const vad = new ScriptedVad();
  const llm = new ScriptedLlm(replies);
  const tts = new ToneTts(0, MS_PER_CHAR);
  const sessions = new MemorySessionSource({ provider: "scripted" });
  const run = await sessions.createRun("carrier", { carrier: "twilio" });
  const shown: Rig["shown"] = [];
  const finished = Promise.withResolvers<Finalize>();
  const task = buildCascadedTask({
    transport: leg,
    stt: new SegmentStt(heard),
    llm,
    tts,
    vad,
    brain: movingOnBrain(),
    session: sessions,
    runId: run.runId,
    token: run.token,
    greeting,
    logger: silentLogger,
    onTranscript: (line: TranscriptLine, index: number) =>
      void shown.push({
        index,
        text: line.text,
        ...(line.interrupted ? { interrupted: true } : {}),
      }),
    onFinalized: finished.resolve,
    taskParams: { idleTimeoutMs: null },
  });
  const parts = task.parts;
  const running = task.run();
  const caller = async (state: VadState) => {
    vad.state = state;
    for (let i = 0; i < 3; i++) {
      leg.feed({
        type: "audio",
        audio: { pcm: new Int16Array(320), sampleRate: 16000, numChannels: 1 },
      });
    }
    await until(() => parts.vad.speaking === (state === "speaking"), 1000, `caller ${state}`);
  };
  leg.feed({ type: "start", callId: "call-1" });
  if (greeting === GREETING) {
    // The greeting plays out in full before the caller's first turn, and the bot has stopped
    // speaking (the output's stop hold-off has passed): speech sooner would talk over it.
    await until(() => leg.sentMs() >= ms(GREETING), 3000, "greeting played");
    await until(() => !parts.output.speaking, 3000, "bot stopped speaking");
  }
  return {
    leg,
    llm,
    tts,
    sessions,
    runId: run.runId,
    parts,
    shown,
    running,
    finished: finished.promise,
    caller,
  };
}

/** The transcript's lines, with the mark only where there is one. */
function linesOf(parts: CascadedParts) {
  return parts.transcript.lines.map(({ role, text, interrupted }) => ({
    role,
    text,
    ...(interrupted ? { interrupted } : {}),
  }));
}

Deno.test("cascaded barge-in: the reply is kept, shown and saved as far as it was heard", async () => {
  const r = await rig([{ text: [`${S1} `, `${S2} `, S3] }, { text: ["Okay."] }], [
    "What is the weather?",
    "Stop, thanks.",
  ]);
  const { leg, llm, parts } = r;
  try {
    await r.caller("speaking");
    await r.caller("quiet");
    // Barge in about 2/3 into the second sentence (sent: a little less has played).
    const cutAt = ms(GREETING) + ms(S1) + 0.68 * ms(S2);
    await until(() => leg.sentMs() >= cutAt, 6000, "reply playing its second sentence");
    await r.caller("speaking");
    await until(() => leg.clears === 1, 2000, "playback cleared");
    await r.caller("quiet");
    await until(() => llm.contexts.length === 2, 3000, "the caller's next turn reaches the model");
    await until(() => r.tts.said.includes("Okay."), 3000, "next reply spoken");
    leg.feed({ type: "stop" });
    await r.running;
  } finally {
    leg.feed(undefined);
  }
  const report = await r.finished;
  assert.equal(report.usage.endedBy, "end: caller hung up");

  // Heard: the first sentence in full, then S2's words up to where playout stopped (20 to 25 of
  // its 34 letters, back to a whole word); never S3, which was still queued.
  const heard = parts.context.messages.find((m) =>
    m.role === "assistant" && m.content !== GREETING
  );
  assert.ok(heard !== undefined && heard.role === "assistant");
  assert.match(heard.content, /^It is sunny this morning\. Later today clouds roll( in)?$/);

  // The model's next run is sent the heard text, not the generated reply.
  assert.deepEqual(llm.contexts[1].messages.slice(1), [
    { role: "assistant", content: GREETING },
    { role: "user", content: "What is the weather?" },
    { role: "assistant", content: heard.content },
    { role: "user", content: "Stop, thanks." },
  ]);

  // The transcript: the greeting was heard in full; the reply ends where playout stopped.
  assert.deepEqual(linesOf(parts), [
    { role: "bot", text: GREETING },
    { role: "user", text: "What is the weather?" },
    { role: "bot", text: heard.content, interrupted: true },
    { role: "user", text: "Stop, thanks." },
    { role: "bot", text: "Okay." },
  ]);

  // The live view saw the reply as generated, then the same line again, cut and marked.
  assert.deepEqual(r.shown.filter((s) => s.index === 2), [
    { index: 2, text: `${S1} ${S2} ${S3}` },
    { index: 2, text: heard.content, interrupted: true },
  ]);

  // The saved transcript records the cut line.
  const doc = JSON.parse(
    new TextDecoder().decode(r.sessions.memoryArtifact(`run-${r.runId}-transcript.json`)),
  );
  assert.deepEqual(doc.lines[2], { ...doc.lines[2], text: heard.content, interrupted: true });
  assert.equal(doc.lines[0].interrupted, undefined, "a line heard in full is not marked");
});

Deno.test("cascaded barge-in: a reply still being generated keeps only what had played", async () => {
  // The model is slow: its second sentence comes 1.6 s into the reply, after the barge-in.
  const r = await rig([{ text: [`${S1} `, `${S2} `], gapMs: 800 }], ["What is the weather?"]);
  const { leg, parts } = r;
  try {
    await r.caller("speaking");
    await r.caller("quiet");
    // Barge in halfway through the first sentence.
    await until(() => leg.sentMs() >= ms(GREETING) + 0.55 * ms(S1), 6000, "first sentence");
    await r.caller("speaking");
    await until(() => leg.clears === 1, 2000, "playback cleared");
    await until(() => r.llm.signals[0]?.aborted === true, 2000, "model aborted");
    await sleep(50);
    leg.feed({ type: "stop" });
    await r.running;
  } finally {
    leg.feed(undefined);
  }
  // About half of S1's 21 letters (9 to 12), back to a whole word.
  assert.deepEqual(parts.context.messages.slice(1), [
    { role: "assistant", content: GREETING },
    { role: "user", content: "What is the weather?" },
    { role: "assistant", content: "It is sunny" },
  ]);
  assert.deepEqual(linesOf(parts).slice(2), [
    { role: "bot", text: "It is sunny", interrupted: true },
  ]);
});

Deno.test("cascaded barge-in: a greeting talked over is kept in the context as far as heard", async () => {
  const greeting = "Welcome to the weather line, where every forecast is fresh.";
  const r = await rig([{ text: ["Go ahead."] }], ["Hi, quick question."], greeting);
  const { leg, parts } = r;
  try {
    // The caller talks in 45% into the greeting (2.4 s of speech).
    await until(() => leg.sentMs() >= 0.45 * ms(greeting), 3000, "greeting playing");
    await r.caller("speaking");
    await until(() => leg.clears === 1, 2000, "playback cleared");
    await r.caller("quiet");
    await until(() => r.llm.contexts.length === 1, 3000, "the caller's turn reaches the model");
    leg.feed({ type: "stop" });
    await r.running;
  } finally {
    leg.feed(undefined);
  }
  // 19 to 23 of its 50 letters heard ("line," ends at 24), back to a whole word.
  const said = parts.transcript.lines[0];
  assert.equal(said.interrupted, true);
  assert.match(said.text, /^Welcome to the weather( line)?$/);
  assert.deepEqual(r.llm.contexts[0].messages.slice(1), [
    { role: "assistant", content: said.text },
    { role: "user", content: "Hi, quick question." },
  ]);
});
