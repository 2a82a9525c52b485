import assert from "node:assert/strict";
import {
  customFrame,
  type Direction,
  type Frame,
  FrameProcessor,
  inputAudio,
  type Link,
  makeFrame,
  Pipeline,
  PipelineTask,
  type ProcessorSetup,
  type StartParams,
} from "../mod.ts";
import { silentLogger } from "../core/log.ts";
import { MAX_NESTED_DRAINS, ProcessorRuntime, YIELD_EVERY } from "../core/runtime.ts";
import type { Observer } from "../core/observers.ts";
import { Recorder, sleep, until } from "./_core_helpers.ts";

const quiet = { idleTimeoutMs: null, logger: silentLogger } as const;

/** A processor whose processFrame blocks until `open()` is called. */
class Gate extends Recorder {
  #open!: () => void;
  #gate = new Promise<void>((r) => (this.#open = r));
  open() {
    this.#open();
  }
  override async processFrame(frame: Frame, dir: Direction, link: Link) {
    this.frames.push({ kind: frame.kind, dir, id: frame.id, frame });
    await this.#gate;
    link.push(frame, dir);
  }
}

Deno.test("Start runs the start hook, is forwarded, and never reaches processFrame", async () => {
  const log: string[] = [];
  const a = new Recorder("a", log), b = new Recorder("b", log);
  const task = new PipelineTask(new Pipeline([a, b]), quiet);
  task.onStarted(() => {
    log.push("started");
    task.stopWhenDone();
  });
  await task.run();
  assert.deepEqual(log, ["a:start", "b:start", "started", "a:stop:end", "b:stop:end"]);
  assert.deepEqual(a.kinds(), []);
  assert.deepEqual(b.kinds(), []);
});

Deno.test("Interruption drops queued interruptible frames, keeps uninterruptible ones, runs the hook", async () => {
  const gate = new Gate("gate");
  const after = new Recorder("after");
  const task = new PipelineTask(new Pipeline([gate, after]), quiet);
  task.onStarted(async () => {
    await task.queueFrame(makeFrame("Text", { text: "first" })); // taken, blocks in the gate
    await until(() => gate.frames.length === 1);
    for (
      const f of [
        makeFrame("Text", { text: "drop-1" }),
        makeFrame("UpdateSettings", { target: "llm", settings: { a: 1 } }),
        makeFrame("TtsSpeak", { text: "drop-2" }),
        makeFrame("FunctionCallResult", {
          result: { toolCallId: "t", functionName: "f", result: "ok" },
        }),
        customFrame({ type: "KeepMe", frameClass: "data", uninterruptible: true }),
        customFrame({ type: "DropMe", frameClass: "control" }),
      ]
    ) await task.queueFrame(f);
    await task.queueFrame(makeFrame("Interruption", {}));
    gate.open();
    await until(() => after.events.includes("interruption"));
    await task.stopWhenDone();
  });
  await task.run();
  assert.deepEqual(gate.events, ["start", "interruption", "stop:end"]);
  assert.deepEqual(gate.kinds(), ["Text", "UpdateSettings", "FunctionCallResult", "Custom"]);
  assert.deepEqual(after.kinds(), ["Text", "UpdateSettings", "FunctionCallResult", "Custom"]);
  assert.ok(!gate.kinds().includes("Interruption"), "Interruption never reaches processFrame");
});

for (const kind of ["End", "Stop", "Cancel"] as const) {
  Deno.test(`${kind} runs the stop hook, is forwarded, and ends the loop`, async () => {
    const a = new Recorder("a"), b = new Recorder("b");
    const task = new PipelineTask(new Pipeline([a, b]), quiet);
    task.onStarted(async () => {
      await task.queueFrame(makeFrame("Text", { text: "before" }));
      if (kind === "Cancel") task.cancel("test");
      else await task.queueFrame(makeFrame(kind, {}));
    });
    const reason = await task.run();
    assert.equal(reason.kind, kind.toLowerCase());
    const stop = `stop:${kind.toLowerCase()}`;
    assert.deepEqual(a.events, ["start", stop]);
    assert.deepEqual(b.events, ["start", stop]);
    assert.ok(!a.kinds().includes(kind));
    // The loop is over: a late frame is dropped, not processed.
    const n = a.frames.length;
    a.link!.push(makeFrame("Text", { text: "late" }), "upstream"); // into the task source: ignored
    await task.queueFrame(makeFrame("Text", { text: "late" }));
    await sleep(5);
    assert.equal(a.frames.length, n);
  });
}

Deno.test("End drains queued frames before stopping; Cancel does not flush", async () => {
  for (const cancel of [false, true]) {
    const gate = new Gate("gate");
    const after = new Recorder("after");
    const task = new PipelineTask(new Pipeline([gate, after]), quiet);
    task.onStarted(async () => {
      for (let i = 0; i < 5; i++) await task.queueFrame(makeFrame("Text", { text: String(i) }));
      await until(() => gate.frames.length === 1);
      if (cancel) task.cancel();
      else await task.stopWhenDone();
      gate.open();
    });
    await task.run();
    assert.equal(
      after.kinds().length,
      cancel ? 1 : 5,
      cancel ? "cancel drops the queue" : "end drains",
    );
  }
});

Deno.test("an error thrown by processFrame becomes an upstream non-fatal Error frame", async () => {
  class Boom extends FrameProcessor {
    override processFrame(frame: Frame, dir: Direction, link: Link) {
      if (frame.kind === "Text" && frame.text === "sync") throw new Error("sync boom");
      if (frame.kind === "Text" && frame.text === "async") {
        return Promise.reject(new Error("async boom"));
      }
      link.push(frame, dir);
    }
  }
  const up = new Recorder("up");
  const boom = new Boom("boom");
  const errors: [string, boolean, string | undefined][] = [];
  const task = new PipelineTask(new Pipeline([up, boom]), quiet);
  task.onError((m, f, p) => void errors.push([m, f, p]));
  task.onStarted(async () => {
    await task.queueFrames([
      makeFrame("Text", { text: "sync" }),
      makeFrame("Text", { text: "async" }),
    ]);
    await until(() => errors.length === 2);
    await task.stopWhenDone();
  });
  const reason = await task.run();
  assert.equal(reason.kind, "end", "a non-fatal error does not stop the task");
  assert.deepEqual(errors, [["sync boom", false, "boom"], ["async boom", false, "boom"]]);
  assert.deepEqual(up.kinds("upstream"), ["Error", "Error"]);
});

Deno.test("backpressure: the producer waits once the normal channel holds 64 frames", async () => {
  const gate = new Gate("gate");
  let pushed = 0;
  let link!: Link;
  class Producer extends FrameProcessor {
    override start(_s: ProcessorSetup, _p: StartParams, l: Link) {
      link = l;
    }
  }
  const task = new PipelineTask(new Pipeline([new Producer("producer"), gate]), quiet);
  task.onStarted(async () => {
    const pump = (async () => {
      for (let i = 0; i < 200; i++) {
        link.pushDown(makeFrame("Text", { text: String(i) }));
        pushed++;
        await link.writable();
      }
    })();
    await sleep(30);
    // One frame is inside the gate's processFrame; 64 wait in its channel.
    assert.equal(pushed, 65);
    gate.open();
    await pump;
    await task.stopWhenDone();
  });
  await task.run();
  assert.equal(gate.kinds().filter((k) => k === "Text").length, 200);
});

Deno.test("backpressure: system frames (input audio) never block", async () => {
  const gate = new Gate("gate");
  const task = new PipelineTask(new Pipeline([gate]), quiet);
  let queued = 0;
  task.onStarted(async () => {
    await task.queueFrame(makeFrame("Text", { text: "hold" }));
    await until(() => gate.frames.length === 1);
    const pcm = new Int16Array(160);
    for (let i = 0; i < 500; i++) {
      await task.queueFrame(inputAudio({ pcm, sampleRate: 8000, numChannels: 1 }));
      queued++;
    }
    gate.open();
    await task.stopWhenDone();
  });
  await task.run();
  assert.equal(queued, 500);
  assert.equal(gate.kinds().filter((k) => k === "InputAudio").length, 500);
});

Deno.test("a processor's own burst of pushes makes its loop wait for the neighbour", async () => {
  class Burst extends FrameProcessor {
    override processFrame(frame: Frame, dir: Direction, link: Link) {
      if (frame.kind === "LlmRun") {
        for (let i = 0; i < 100; i++) link.pushDown(makeFrame("LlmText", { text: "x" }));
      } else link.push(frame, dir);
    }
  }
  const burst = new Recorder("before");
  const gate = new Gate("gate");
  const task = new PipelineTask(new Pipeline([burst, new Burst("burst"), gate]), quiet);
  task.onStarted(async () => {
    await task.queueFrame(makeFrame("LlmRun", {}));
    await task.queueFrame(makeFrame("LlmRun", {}));
    await sleep(20);
    // The second LlmRun waits in Burst's channel: Burst's loop blocks on the full gate.
    assert.equal(gate.frames.length, 1);
    gate.open();
    await task.stopWhenDone();
  });
  await task.run();
  assert.equal(gate.kinds().filter((k) => k === "LlmText").length, 200);
});

Deno.test("custom frames pass through untouched in the direction they arrived", async () => {
  const a = new FrameProcessor("a"), b = new FrameProcessor("b");
  const end = new Recorder("end");
  const down = customFrame({ type: "Sprite", frameClass: "data", data: { x: 1 } });
  const up = customFrame({ type: "Vision", frameClass: "system" });
  const seenUp: Frame[] = [];
  const seenDown: Frame[] = [];
  const task = new PipelineTask(new Pipeline([a, b, end]), quiet);
  task.onFrameReachedUpstream(["Custom"], (f) => void seenUp.push(f));
  task.onFrameReachedDownstream(["Custom"], (f) => void seenDown.push(f));
  task.onStarted(async () => {
    await task.queueFrame(down);
    end.link!.push(up, "upstream");
    await until(() => seenUp.length === 1 && seenDown.length === 1);
    await task.stopWhenDone();
  });
  await task.run();
  assert.equal(seenDown[0], down);
  assert.equal(seenUp[0], up);
  assert.deepEqual(down.custom, { type: "Sprite", frameClass: "data", data: { x: 1 } });
});

Deno.test("broadcast pushes both ways with paired sibling ids", async () => {
  const first = new Recorder("first"), mid = new Recorder("mid"), last = new Recorder("last");
  const task = new PipelineTask(new Pipeline([first, mid, last]), quiet);
  task.onStarted(async () => {
    mid.link!.broadcast(makeFrame("BotSpeaking", {}));
    await until(() => first.frames.length === 1 && last.frames.length === 1);
    await task.stopWhenDone();
  });
  await task.run();
  const up = first.frames[0], down = last.frames[0];
  assert.equal(up.dir, "upstream");
  assert.equal(down.dir, "downstream");
  assert.notEqual(up.id, down.id);
  assert.equal(up.frame.broadcastSiblingId, down.id);
  assert.equal(down.frame.broadcastSiblingId, up.id);
  assert.equal(mid.frames.length, 0, "the broadcaster does not see its own frames");
});

// ------------------------------------------------------------------ the loop runs only with work

function looseRuntime(p: FrameProcessor, log: string[], observer?: Observer) {
  const rt = new ProcessorRuntime(p, {
    clock: () => 0,
    observer,
    cancel: new AbortController().signal,
    enableMetrics: false,
    enableUsageMetrics: false,
    logger: silentLogger,
  });
  const sink = (name: string) => ({
    name,
    enqueue: (f: Frame) => void log.push(`${name}:${f.kind}`),
    isFull: () => false,
    waitWritable: () => Promise.resolve(),
  });
  rt.next = sink("next");
  rt.prev = sink("prev");
  return rt;
}

Deno.test("loop: an idle processor is parked; a frame runs it at once (depth first), End ends it", async () => {
  const log: string[] = [];
  const rt = looseRuntime(new FrameProcessor("p"), log);
  const done = rt.run();
  assert.ok(rt.parked, "nothing queued: parked at once");
  rt.enqueue(makeFrame("Text", { text: "a" }), "downstream");
  assert.deepEqual(log, ["next:Text"], "handled inside the producer's call");
  assert.ok(rt.parked, "parked again once drained");
  rt.enqueue(makeFrame("End", {}), "downstream");
  await done;
  assert.ok(rt.stopped && !rt.parked);
  assert.deepEqual(log, ["next:Text", "next:End"]);
});

Deno.test("loop: a frame crosses parked processors on the producer's stack, up to a bounded depth", async () => {
  const log: string[] = [];
  const n = MAX_NESTED_DRAINS + 4;
  const rts = Array.from({ length: n }, (_, i) => looseRuntime(new FrameProcessor(`p${i}`), log));
  for (let i = 0; i + 1 < n; i++) {
    rts[i].next = rts[i + 1];
    rts[i + 1].prev = rts[i];
  }
  const done = Promise.all(rts.map((rt) => rt.run()));
  rts[0].enqueue(makeFrame("Text", { text: "a" }), "downstream");
  const waiting = rts.flatMap((rt, i) => rt.parked ? [] : [i]);
  assert.deepEqual(waiting, [MAX_NESTED_DRAINS], "the first MAX_NESTED_DRAINS ran in the call");
  assert.deepEqual(log, [], "the rest waits for a microtask");
  await Promise.resolve();
  assert.deepEqual(log, ["next:Text"], "then it reaches the end, in order");
  rts[0].enqueue(makeFrame("End", {}), "downstream");
  await done;
  assert.deepEqual(log, ["next:Text", "next:End"]);
});

Deno.test("loop: a frame that comes straight back waits until the pusher's push returns", async () => {
  const seen: string[] = [];
  class Echoer extends FrameProcessor {
    override processFrame(f: Frame, _d: Direction, l: Link) {
      if (f.kind === "Text") l.push(makeFrame("Text", { text: "back" }), "upstream");
    }
  }
  class Source extends FrameProcessor {
    override processFrame(f: Frame) {
      if (f.kind === "Text") seen.push(`handled ${f.text}`);
    }
  }
  const a = looseRuntime(new Source("a"), []);
  const b = looseRuntime(new Echoer("b"), []);
  a.next = b;
  b.prev = a;
  const done = Promise.all([a.run(), b.run()]);
  // As a model reader or a timer of `a` would: a push from outside a's loop.
  a.push(makeFrame("Text", { text: "out" }), "downstream");
  seen.push("push returned");
  await Promise.resolve();
  assert.deepEqual(seen, ["push returned", "handled back"]);
  a.enqueue(makeFrame("End", {}), "downstream");
  b.enqueue(makeFrame("End", {}), "downstream");
  await done;
});

Deno.test("loop: a long burst yields every YIELD_EVERY frames, so two loops interleave", async () => {
  const order: string[] = [];
  const mk = (name: string) => {
    class Tag extends FrameProcessor {
      override processFrame(f: Frame, d: Direction, l: Link) {
        order.push(name);
        l.push(f, d);
      }
    }
    return looseRuntime(new Tag(name), []);
  };
  const a = mk("a"), b = mk("b");
  for (let i = 0; i < 200; i++) {
    a.enqueue(makeFrame("Text", { text: "x" }), "downstream");
    b.enqueue(makeFrame("Text", { text: "x" }), "downstream");
  }
  a.enqueue(makeFrame("End", {}), "downstream");
  b.enqueue(makeFrame("End", {}), "downstream");
  await Promise.all([a.run(), b.run()]);
  assert.equal(order.length, 400);
  let longest = 0;
  for (let i = 0, run = 0; i < order.length; i++) {
    run = i > 0 && order[i] === order[i - 1] ? run + 1 : 1;
    longest = Math.max(longest, run);
  }
  assert.ok(longest <= YIELD_EVERY, `one loop ran ${longest} frames without yielding`);
  assert.ok(order.indexOf("b") < 200, "b started before a finished");
});

Deno.test("loop: an asynchronous processFrame is awaited before the next frame; an abort while parked ends run()", async () => {
  const seen: string[] = [];
  class Slow extends FrameProcessor {
    override async processFrame(f: Frame, d: Direction, l: Link) {
      const text = f.kind === "Text" ? f.text : "";
      seen.push(`start ${text}`);
      if (text === "1") await sleep(20);
      seen.push(`end ${text}`);
      l.push(f, d);
    }
  }
  const rt = looseRuntime(new Slow("slow"), []);
  const done = rt.run();
  for (const t of ["1", "2", "3"]) rt.enqueue(makeFrame("Text", { text: t }), "downstream");
  await until(() => seen.length === 6);
  assert.deepEqual(seen, ["start 1", "end 1", "start 2", "end 2", "start 3", "end 3"]);
  assert.ok(rt.parked);
  rt.abort();
  await done;
});

Deno.test("loop: a throwing observer ends that loop only; a loop woken in the same pass still runs", async () => {
  const log: string[] = [];
  const bad = looseRuntime(new FrameProcessor("bad"), [], {
    onProcess: () => {
      throw new Error("observer bug");
    },
  });
  const good = looseRuntime(new FrameProcessor("good"), log);
  const badDone = bad.run();
  const goodDone = good.run();
  bad.enqueue(makeFrame("Text", { text: "a" }), "downstream");
  good.enqueue(makeFrame("Text", { text: "b" }), "downstream");
  await assert.rejects(badDone, /observer bug/);
  await Promise.resolve();
  assert.deepEqual(log, ["next:Text"]);
  good.enqueue(makeFrame("End", {}), "downstream");
  await goodDone;
});
