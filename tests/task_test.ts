import assert from "node:assert/strict";
import {
  type Direction,
  type Frame,
  FrameProcessor,
  type Link,
  makeFrame,
  Pipeline,
  PipelineTask,
  type StopReason,
} from "../mod.ts";
import { memoryLogger, silentLogger } from "../core/log.ts";
import { Recorder, sleep, until } from "./_core_helpers.ts";

const quiet = { idleTimeoutMs: null, logger: silentLogger } as const;

Deno.test("task params have their documented defaults", async () => {
  let params: unknown;
  class P extends FrameProcessor {
    override start(_s: unknown, p: unknown) {
      params = p;
    }
  }
  const task = new PipelineTask(new Pipeline([new P()]), quiet);
  task.onStarted(() => task.stopWhenDone());
  await task.run();
  assert.deepEqual(params, {
    audioInSampleRate: 16000,
    audioOutSampleRate: 24000,
    enableMetrics: false,
    enableUsageMetrics: false,
    enableTracing: false,
    reportOnlyInitialTtfb: false,
  });
  const { DEFAULT_TASK_PARAMS: d } = await import("../core/task.ts");
  assert.equal(d.heartbeatPeriodMs, 1000);
  assert.equal(d.heartbeatMonitorMs, 10000);
  assert.equal(d.idleTimeoutMs, 300000);
  assert.equal(d.cancelOnIdle, true);
  assert.deepEqual(d.idleTimeoutFrames, ["BotSpeaking", "UserSpeaking"]);
});

Deno.test("step 1-2: started fires only after every processor ran its start hook", async () => {
  const log: string[] = [];
  class SlowStart extends Recorder {
    override async start(...args: Parameters<Recorder["start"]>) {
      await sleep(20);
      super.start(...args);
    }
  }
  const task = new PipelineTask(
    new Pipeline([new SlowStart("a", log), new Recorder("b", log)]),
    quiet,
  );
  task.onStarted(() => {
    log.push("started");
    task.stopWhenDone();
  });
  await task.run();
  assert.deepEqual(log.slice(0, 3), ["a:start", "b:start", "started"]);
});

Deno.test("step 3: frames queued before run are pumped after Start, in order", async () => {
  const r = new Recorder("r");
  const task = new PipelineTask(new Pipeline([r]), quiet);
  await task.queueFrames([makeFrame("Text", { text: "1" }), makeFrame("Text", { text: "2" })]);
  await task.stopWhenDone();
  await task.run();
  assert.deepEqual(r.frames.map((f) => (f.frame as { text: string }).text), ["1", "2"]);
});

for (const kind of ["End", "Stop", "Cancel"] as const) {
  Deno.test(`step 4: upstream ${kind} reaching the source becomes downstream ${kind}`, async () => {
    const first = new Recorder("first");
    let last!: Link;
    class Ender extends FrameProcessor {
      override processFrame(f: Frame, d: Direction, link: Link) {
        last = link;
        if (f.kind === "Text") {
          link.push(makeFrame(kind, kind === "Stop" ? {} : { reason: "brain" }), "upstream");
        } else link.push(f, d);
      }
    }
    const task = new PipelineTask(new Pipeline([first, new Ender("ender")]), quiet);
    const upSeen: string[] = [];
    task.onFrameReachedUpstream([kind], (f) => void upSeen.push(f.kind));
    task.onStarted(() => task.queueFrame(makeFrame("Text", { text: "go" })));
    const reason: StopReason = await task.run();
    assert.ok(last);
    assert.equal(reason.kind, kind.toLowerCase());
    if (kind !== "Stop") assert.equal((reason as { reason?: string }).reason, "brain");
    assert.deepEqual(upSeen, [kind]);
    assert.deepEqual(first.events, ["start", `stop:${kind.toLowerCase()}`]);
  });
}

Deno.test("step 5: a fatal Error cancels the task; a non-fatal one does not", async () => {
  for (const fatal of [false, true]) {
    let link!: Link;
    class P extends FrameProcessor {
      override start(_s: unknown, _p: unknown, l: Link) {
        link = l;
      }
    }
    const task = new PipelineTask(new Pipeline([new P("p")]), quiet);
    task.onStarted(async () => {
      link.pushError("boom", fatal);
      await sleep(20);
      if (!task.hasFinished()) await task.stopWhenDone();
    });
    const reason = await task.run();
    assert.equal(reason.kind, fatal ? "cancel" : "end");
    if (fatal) assert.match((reason as { reason?: string }).reason ?? "", /fatal error: boom/);
  }
});

Deno.test("step 5: a fatal Error travelling downstream to the sink cancels too", async () => {
  const task = new PipelineTask(new Pipeline([new FrameProcessor("p")]), quiet);
  task.onStarted(() => task.queueFrame(makeFrame("Error", { message: "down", fatal: true })));
  assert.equal((await task.run()).kind, "cancel");
});

Deno.test("step 7: cancel is bounded: a stuck processor is force-aborted after cancelTimeout", async () => {
  let aborted = false;
  class Stuck extends FrameProcessor {
    override async processFrame(_f: Frame, _d: Direction, _l: Link) {
      await new Promise(() => {}); // never returns
    }
    override start(s: { cancel: AbortSignal }) {
      s.cancel.addEventListener("abort", () => (aborted = true));
    }
  }
  const log = memoryLogger();
  const task = new PipelineTask(new Pipeline([new Stuck("stuck")]), {
    ...quiet,
    logger: log,
    cancelTimeoutMs: 50,
  });
  task.onStarted(async () => {
    await task.queueFrame(makeFrame("Text", { text: "stick" }));
    await sleep(5);
    task.cancel("user hung up");
  });
  const t0 = performance.now();
  const reason = await task.run();
  const ms = performance.now() - t0;
  assert.deepEqual(reason, { kind: "cancel", reason: "user hung up" });
  assert.ok(aborted, "the shared token was aborted");
  assert.ok(ms >= 50 && ms < 1000, `took ${ms} ms`);
  assert.ok(log.records.some((r) => r.level === "warn" && /cancel timed out/.test(r.message)));
  assert.ok(task.hasFinished());
});

Deno.test("step 8: idle timeout fires and cancels when cancelOnIdle", async () => {
  const task = new PipelineTask(new Pipeline([new FrameProcessor()]), {
    logger: silentLogger,
    idleTimeoutMs: 60,
  });
  let idle = 0;
  task.onIdleTimeout(() => void idle++);
  const t0 = performance.now();
  const reason = await task.run();
  assert.equal(idle, 1);
  assert.deepEqual(reason, { kind: "cancel", reason: "idle timeout" });
  assert.ok(performance.now() - t0 >= 55);
});

Deno.test("step 8: activity frames defer the idle timeout; without cancel it only fires the hook", async () => {
  let link!: Link;
  class Talker extends FrameProcessor {
    override start(_s: unknown, _p: unknown, l: Link) {
      link = l;
    }
  }
  const task = new PipelineTask(new Pipeline([new Talker()]), {
    logger: silentLogger,
    idleTimeoutMs: 60,
    cancelOnIdle: false,
  });
  const firedAt: number[] = [];
  const t0 = performance.now();
  task.onIdleTimeout(() => void firedAt.push(performance.now() - t0));
  task.onStarted(async () => {
    for (let i = 0; i < 6; i++) {
      link.broadcast(makeFrame("BotSpeaking", {})); // activity, both ends
      await sleep(20);
    }
    await until(() => firedAt.length >= 1, 1000);
    await task.stopWhenDone();
  });
  const reason = await task.run();
  assert.equal(reason.kind, "end", "not cancelled");
  assert.ok(firedAt[0] >= 150, `idle fired at ${firedAt[0]} ms, during activity`);
});

Deno.test("heartbeats reach the sink; the monitor warns when they stop arriving", async () => {
  let block = false;
  let hb = 0;
  class Blocker extends FrameProcessor {
    override async processFrame(f: Frame, d: Direction, link: Link) {
      if (f.kind === "Heartbeat") hb++;
      if (block) await sleep(200);
      link.push(f, d);
    }
  }
  const log = memoryLogger();
  const task = new PipelineTask(new Pipeline([new Blocker()]), {
    ...quiet,
    logger: log,
    enableHeartbeats: true,
    heartbeatPeriodMs: 10,
    heartbeatMonitorMs: 60,
  });
  const timeouts: number[] = [];
  const reached: number[] = [];
  task.onHeartbeatTimeout((s) => void timeouts.push(s));
  task.onFrameReachedDownstream(
    ["Heartbeat"],
    (f) => void reached.push((f as { timestampNs: number }).timestampNs),
  );
  task.onStarted(async () => {
    await until(() => reached.length >= 3, 1000, "heartbeats");
    assert.equal(timeouts.length, 0);
    block = true;
    await until(() => timeouts.length === 1, 2000, "monitor warning");
    block = false;
    task.cancel();
  });
  await task.run();
  assert.ok(hb >= 3);
  assert.ok(reached.every((t, i) => i === 0 || t > reached[i - 1]), "timestamps increase");
  assert.ok(timeouts[0] >= 0.06);
  assert.ok(
    log.records.some((r) => r.level === "warn" && /heartbeat not received/.test(r.message)),
  );
});

Deno.test("run() may be called once", async () => {
  const task = new PipelineTask(new Pipeline([]), quiet);
  task.onStarted(() => task.stopWhenDone());
  await task.run();
  await assert.rejects(() => task.run(), /only once/);
});

Deno.test("finished hooks get the stop reason", async () => {
  const task = new PipelineTask(new Pipeline([new FrameProcessor()]), quiet);
  const got: StopReason[] = [];
  task.onFinished((r) => void got.push(r));
  task.onStarted(() => task.queueFrame(makeFrame("End", { reason: "done" })));
  await task.run();
  assert.deepEqual(got, [{ kind: "end", reason: "done" }]);
});

Deno.test("cancel before run still cancels", async () => {
  const r = new Recorder("r");
  const task = new PipelineTask(new Pipeline([r]), quiet);
  task.cancel("early");
  assert.deepEqual(await task.run(), { kind: "cancel", reason: "early" });
  assert.deepEqual(r.events, ["start", "stop:cancel"]);
});
