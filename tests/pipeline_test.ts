import assert from "node:assert/strict";
import {
  type Direction,
  type Frame,
  FrameProcessor,
  type Link,
  makeFrame,
  ParallelPipeline,
  Pipeline,
  PipelineTask,
  type ProcessorSetup,
  type StartParams,
} from "../mod.ts";
import { silentLogger } from "../core/log.ts";
import { Recorder, sleep, until } from "./_core_helpers.ts";

const quiet = { idleTimeoutMs: null, logger: silentLogger } as const;
const text = (f: { frame: Frame }) => (f.frame as { text?: string }).text;

/** Appends its tag to Text frames (makes a new frame, so the id changes). */
class Tagger extends FrameProcessor {
  constructor(readonly tag: string) {
    super(`tag-${tag}`);
  }
  override processFrame(f: Frame, d: Direction, link: Link) {
    if (f.kind === "Text" && d === "downstream") {
      link.push(makeFrame("Text", { text: f.text + this.tag }), d);
    } else link.push(f, d);
  }
}

Deno.test("nested pipelines run as one flat chain, in order", async () => {
  const out = new Recorder("out");
  const inner = new Pipeline([new Tagger("b"), new Pipeline([new Tagger("c")]), new Pipeline([])]);
  const task = new PipelineTask(new Pipeline([new Tagger("a"), inner, out]), quiet);
  task.onStarted(async () => {
    await task.queueFrame(makeFrame("Text", { text: ">" }));
    await task.stopWhenDone();
  });
  await task.run();
  assert.deepEqual(out.frames.map(text), [">abc"]);
});

Deno.test("parallel: a frame fanned to N branches leaves once; frames made in branches each leave", async () => {
  const out = new Recorder("out");
  const par = new ParallelPipeline([[new FrameProcessor("p1")], [new FrameProcessor("p2")], [
    new Tagger("x"),
  ]]);
  const task = new PipelineTask(new Pipeline([par, out]), quiet);
  const original = makeFrame("Text", { text: "t" });
  const passthrough = makeFrame("LlmText", { text: "same" });
  task.onStarted(async () => {
    await task.queueFrames([original, passthrough]);
    await task.stopWhenDone();
  });
  await task.run();
  const texts = out.frames.filter((f) => f.kind === "Text").map(text).sort();
  assert.deepEqual(texts, ["t", "tx"], "original once (from p1/p2), tagged copy once");
  assert.equal(out.frames.filter((f) => f.kind === "LlmText").length, 1);
  assert.equal(out.events.filter((e) => e === "start").length, 1, "Start leaves the block once");
  assert.equal(
    out.events.filter((e) => e.startsWith("stop")).length,
    1,
    "End leaves the block once",
  );
});

Deno.test("parallel: upstream frames fan into every branch and merge back once", async () => {
  const head = new Recorder("head");
  const tail = new Recorder("tail");
  const par = new ParallelPipeline([[new FrameProcessor("u1")], [new FrameProcessor("u2")]]);
  const task = new PipelineTask(new Pipeline([head, par, tail]), quiet);
  task.onStarted(async () => {
    tail.link!.push(makeFrame("Text", { text: "up" }), "upstream");
    await until(() => head.frames.length >= 1);
    await sleep(5);
    await task.stopWhenDone();
  });
  await task.run();
  assert.deepEqual(head.kinds("upstream"), ["Text"]);
});

Deno.test("parallel: lifecycle frames wait for every branch; output meanwhile is held, then flushed", async () => {
  class SlowStart extends FrameProcessor {
    override async start() {
      await sleep(40);
    }
  }
  class EarlyTalker extends FrameProcessor {
    override start(_s: ProcessorSetup, _p: StartParams, link: Link) {
      // Speaks right after its own Start passes, while the slow branch is still starting.
      setTimeout(() => link.pushDown(makeFrame("Text", { text: "early" })), 5);
    }
  }
  const out = new Recorder("out");
  const order: string[] = [];
  class Order extends FrameProcessor {
    override start() {
      order.push("Start");
    }
    override processFrame(f: Frame, d: Direction, link: Link) {
      order.push(f.kind);
      link.push(f, d);
    }
  }
  const par = new ParallelPipeline([[new SlowStart("slow")], [new EarlyTalker("early")]]);
  const task = new PipelineTask(new Pipeline([par, new Order("order"), out]), quiet);
  task.onStarted(() => task.stopWhenDone());
  await task.run();
  assert.deepEqual(order, ["Start", "Text"], "Start left the block before the held Text");
});

Deno.test("parallel: End waits for the slowest branch to drain", async () => {
  class Slow extends FrameProcessor {
    override async processFrame(f: Frame, d: Direction, link: Link) {
      if (f.kind === "Text") {
        await sleep(10);
        return link.push(makeFrame("Text", { text: f.text + "s" }), d);
      }
      link.push(f, d);
    }
  }
  const out = new Recorder("out");
  const task = new PipelineTask(
    new Pipeline([new ParallelPipeline([[new Slow("slow")], [new FrameProcessor("fast")]]), out]),
    quiet,
  );
  task.onStarted(async () => {
    await task.queueFrames([1, 2, 3].map((i) => makeFrame("Text", { text: String(i) })));
    await task.stopWhenDone();
  });
  await task.run();
  // The slow branch's own output all arrives before out sees End.
  assert.deepEqual(out.frames.map(text), ["1", "2", "3", "1s", "2s", "3s"]);
  assert.deepEqual(out.events, ["start", "stop:end"]);
});
