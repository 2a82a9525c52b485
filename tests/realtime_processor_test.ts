import assert from "node:assert/strict";
import { RealtimeProcessor } from "../core/processors/realtime.ts";
import { Pipeline } from "../core/pipeline.ts";
import { PipelineTask } from "../core/task.ts";
import { silentLogger } from "../core/log.ts";
import type { AudioFrame, Direction, Frame } from "../core/frames.ts";
import type { Link } from "../core/processor.ts";
import type { RealtimeEvent, RealtimeLlm } from "../core/seams.ts";
import { RealtimeEventQueue } from "../providers/realtime/_shared.ts";
import { Recorder, until } from "./_core_helpers.ts";

/** A model that says one audio chunk on connect and answers each audio frame with a chunk. */
class ScriptedModel implements RealtimeLlm {
  readonly q = new RealtimeEventQueue();
  heard = 0;
  connect(): Promise<void> {
    this.q.push({ type: "audio_out", audio: chunk(1) }); // before anyone listens: queued
    return Promise.resolve();
  }
  sendAudio(_audio: AudioFrame): void {
    this.heard++;
    this.q.push({ type: "audio_out", audio: chunk(2) });
  }
  updateSystem(): Promise<void> {
    return Promise.resolve();
  }
  sendToolResult(): Promise<void> {
    return Promise.resolve();
  }
  nextEvent(): Promise<RealtimeEvent | undefined> {
    return this.q.next();
  }
  close(): Promise<void> {
    this.q.push({ type: "usage", usage: { promptTokens: 1, completionTokens: 2, totalTokens: 3 } });
    this.q.close();
    return Promise.resolve();
  }
}

/** The same model in push mode. */
class PushModel extends ScriptedModel {
  listen(deliver: (ev: RealtimeEvent | undefined) => void): void {
    this.q.listen(deliver);
  }
}

/** Notes a model frame that arrives before this processor's start hook ran. */
class After extends Recorder {
  early = false;
  override processFrame(frame: Frame, dir: Direction, link: Link): void | Promise<void> {
    if (frame.kind === "TtsAudio" && !this.events.includes("start")) this.early = true;
    return super.processFrame(frame, dir, link);
  }
}

function chunk(v: number): AudioFrame {
  return { pcm: new Int16Array(480).fill(v), sampleRate: 24000, numChannels: 1 };
}

for (const [mode, Model] of [["push", PushModel], ["pull", ScriptedModel]] as const) {
  Deno.test(`realtime processor (${mode} mode): events after Start, in order; usage read at stop`, async () => {
    const model = new Model();
    const rt = new RealtimeProcessor(model, { systemPrompt: "p", tools: [] });
    const rec = new After("after");
    const task = new PipelineTask(new Pipeline([rt, rec]), {
      idleTimeoutMs: null,
      logger: silentLogger,
    });
    const done = task.run();
    await until(() => rec.frames.some((f) => f.kind === "TtsAudio"), 2000, "greeting audio");
    assert.equal(rec.early, false, "Start reaches the next processor before the model's audio");
    const { pcm, sampleRate } = chunk(0);
    await task.queueFrame({
      kind: "InputAudio",
      id: 1e9,
      audio: { pcm, sampleRate, numChannels: 1 },
    });
    await until(() => rec.frames.filter((f) => f.kind === "TtsAudio").length === 2, 2000, "echo");
    const levels = rec.frames.flatMap((f) =>
      f.frame.kind === "TtsAudio" ? [f.frame.audio.pcm[0]] : []
    );
    assert.deepEqual(levels, [1, 2], "the queued greeting first, then the answer");
    assert.equal(model.heard, 1);
    await task.stopWhenDone();
    assert.deepEqual(await done, { kind: "end" });
    assert.equal(rt.usage.totalTokens, 3, "the usage the model sent while closing was read");
  });
}

Deno.test("realtime processor (push mode): the model closing ends the call upstream", async () => {
  const model = new PushModel();
  const rt = new RealtimeProcessor(model, { systemPrompt: "p", tools: [] });
  const task = new PipelineTask(new Pipeline([rt]), { idleTimeoutMs: null, logger: silentLogger });
  const done = task.run();
  await until(() => rt.connected, 2000, "connected");
  await new Promise((r) => setTimeout(r, 5)); // listening from the next macrotask
  model.q.close("socket lost");
  const reason = await done;
  assert.equal(reason.kind, "end");
  assert.match(reason.kind === "end" ? reason.reason ?? "" : "", /model closed: socket lost/);
});

Deno.test("RealtimeEventQueue.listen: queued events first, then live ones, then undefined at close", () => {
  const q = new RealtimeEventQueue();
  q.push({ type: "turn_complete" });
  const got: (string | undefined)[] = [];
  q.listen((ev) => got.push(ev?.type));
  q.push({ type: "interrupted" });
  q.close();
  q.push({ type: "turn_complete" }); // after close: dropped
  assert.deepEqual(got, ["turn_complete", "interrupted", "closed", undefined]);
  const late: (string | undefined)[] = [];
  const q2 = new RealtimeEventQueue();
  q2.push({ type: "interrupted" });
  q2.close("bye");
  q2.listen((ev) => late.push(ev?.type));
  assert.deepEqual(
    late,
    ["interrupted", "closed", undefined],
    "a listener after close gets it all",
  );
});

Deno.test("realtime processor: a model turn is one utterance; words after its cut keep its id", async () => {
  const model = new PushModel();
  model.connect = () => Promise.resolve(); // no greeting
  const rt = new RealtimeProcessor(model, { systemPrompt: "p", tools: [] });
  const rec = new Recorder("after");
  const task = new PipelineTask(new Pipeline([rt, rec]), {
    idleTimeoutMs: null,
    logger: silentLogger,
  });
  const done = task.run();
  await until(() => rt.connected, 2000, "connected");
  await new Promise((r) => setTimeout(r, 5));
  const say = (...evs: RealtimeEvent[]) => evs.forEach((ev) => model.q.push(ev));
  // Turn 1: voice first, then words, then the end of the turn.
  say(
    { type: "audio_out", audio: chunk(1) },
    { type: "bot_text", text: "Hi ", final: false },
    { type: "bot_text", text: "there", final: false },
    { type: "bot_text", text: "Hi there", final: true },
    { type: "turn_complete" },
  );
  // Turn 2: cut short; its transcript comes after the cut; then the next audio is a new turn.
  say(
    { type: "audio_out", audio: chunk(2) },
    { type: "interrupted" },
    { type: "bot_text", text: "Let me check", final: true },
    { type: "audio_out", audio: chunk(3) },
  );
  await until(() => rec.frames.filter((f) => f.kind === "TtsAudio").length === 3, 2000);
  await task.stopWhenDone();
  await done;
  const seen = rec.frames.filter((f) => f.dir === "downstream").flatMap(({ frame: f }) => {
    if (f.kind === "TtsText") return [`text ${f.utteranceId} "${f.text}"`];
    if (f.kind === "Transcription") return [`line ${f.utteranceId} "${f.text}"`];
    if (f.kind === "TtsAudio" || f.kind === "TtsStopped") return [f.kind];
    return [];
  });
  const [t1, t2, t3] = [...new Set(seen.flatMap((s) => s.match(/turn-\d+/) ?? []))];
  assert.deepEqual(seen, [
    `text ${t1} ""`,
    "TtsAudio",
    `text ${t1} "Hi "`,
    `text ${t1} "there"`,
    `line ${t1} "Hi there"`,
    "TtsStopped",
    `text ${t2} ""`,
    "TtsAudio",
    // A model that sends only the final words: they still go to the output, under the turn's id.
    `text ${t2} "Let me check"`,
    `line ${t2} "Let me check"`,
    `text ${t3} ""`,
    "TtsAudio",
  ]);
});

Deno.test("realtime processor: the caller's audio ends at the model unless forwarded", async () => {
  for (const forward of [true, false]) {
    const model = new PushModel();
    const rt = new RealtimeProcessor(model, { systemPrompt: "p", tools: [] }, {
      forwardInputAudio: forward,
    });
    const rec = new Recorder("after");
    const task = new PipelineTask(new Pipeline([rt, rec]), {
      idleTimeoutMs: null,
      logger: silentLogger,
    });
    const done = task.run();
    await until(() => rt.connected, 2000, "connected");
    const { pcm, sampleRate } = chunk(0);
    for (let i = 0; i < 3; i++) {
      await task.queueFrame({
        kind: "InputAudio",
        id: 1e9 + i,
        audio: { pcm, sampleRate, numChannels: 1 },
      });
      await task.queueFrame({ kind: "InputDtmf", id: 2e9 + i, key: "5" });
    }
    await until(() => rec.frames.filter((f) => f.kind === "InputDtmf").length === 3, 2000, "keys");
    await until(() => model.heard === 3, 2000, "the model heard every frame");
    const passed = rec.frames.filter((f) => f.kind === "InputAudio").length;
    assert.equal(passed, forward ? 3 : 0, `forwardInputAudio ${forward}`);
    await task.stopWhenDone();
    await done;
  }
});
