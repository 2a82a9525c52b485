import assert from "node:assert/strict";
import {
  type FrameEvent,
  FrameProcessor,
  type FramePushEvent,
  IdleFrameObserver,
  type Link,
  makeFrame,
  Pipeline,
  PipelineTask,
  type ProcessorSetup,
  type StartParams,
  TurnTrackingObserver,
  UserBotLatencyObserver,
} from "../mod.ts";
import { silentLogger } from "../core/log.ts";
import { sleep } from "./_core_helpers.ts";

class Driver extends FrameProcessor {
  link!: Link;
  override start(_s: ProcessorSetup, _p: StartParams, link: Link) {
    this.link = link;
  }
}

Deno.test("onProcess, onPush and onPipelineStarted see every hop", async () => {
  const procs: FrameEvent[] = [];
  const pushes: FramePushEvent[] = [];
  let started = 0;
  const obs = {
    onProcess: (e: FrameEvent) => void procs.push(e),
    onPush: (e: FramePushEvent) => void pushes.push(e),
    onPipelineStarted: () => void started++,
  };
  const task = new PipelineTask(new Pipeline([new FrameProcessor("a"), new FrameProcessor("b")]), {
    idleTimeoutMs: null,
    logger: silentLogger,
    observers: [obs],
  });
  const text = makeFrame("Text", { text: "x" });
  task.onStarted(async () => {
    await task.queueFrame(text);
    await task.stopWhenDone();
  });
  await task.run();
  assert.equal(started, 1);
  const textPushes = pushes.filter((p) => p.frame === text).map((p) =>
    `${p.source}->${p.destination}`
  );
  assert.deepEqual(textPushes, ["PipelineTask#source->a", "a->b", "b->PipelineTask#sink"]);
  assert.deepEqual(procs.filter((p) => p.frame === text).map((p) => p.processor), ["a", "b"]);
  assert.ok(pushes.every((p, i) => i === 0 || p.timestampNs >= pushes[i - 1].timestampNs));
});

Deno.test("turn tracking and user-to-bot latency follow speaking edges", async () => {
  const turns = new TurnTrackingObserver();
  const latency = new UserBotLatencyObserver();
  const idle = new IdleFrameObserver();
  const d = new Driver("driver");
  const task = new PipelineTask(
    new Pipeline([new FrameProcessor("up"), d, new FrameProcessor("down")]),
    {
      idleTimeoutMs: null,
      logger: silentLogger,
      observers: [turns, latency, idle],
    },
  );
  task.onStarted(async () => {
    const say = (
      k:
        | "UserStartedSpeaking"
        | "UserStoppedSpeaking"
        | "BotStartedSpeaking"
        | "BotStoppedSpeaking",
    ) => d.link.broadcast(makeFrame(k, {}));
    say("UserStartedSpeaking");
    await sleep(5);
    say("UserStoppedSpeaking");
    await sleep(30);
    say("BotStartedSpeaking");
    d.link.pushDown(makeFrame("BotSpeaking", {}));
    await sleep(5);
    say("UserStartedSpeaking"); // barge-in: turn 1 ends interrupted, turn 2 starts
    await sleep(5);
    say("BotStoppedSpeaking");
    say("UserStoppedSpeaking");
    await sleep(10);
    say("BotStartedSpeaking");
    await sleep(5);
    say("BotStoppedSpeaking");
    await sleep(5);
    await task.stopWhenDone();
  });
  await task.run();
  assert.deepEqual(turns.turns.map((t) => [t.number, t.interrupted, t.endNs !== undefined]), [
    [1, true, true],
    [2, false, true],
  ]);
  assert.equal(latency.latencies.length, 2);
  assert.ok(
    latency.latencies[0] >= 0.025 && latency.latencies[0] < 0.5,
    String(latency.latencies[0]),
  );
  assert.ok(idle.lastActivityNs !== undefined);
});
