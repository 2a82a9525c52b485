import assert from "node:assert/strict";
import {
  type Direction,
  type Frame,
  FrameProcessor,
  type Link,
  makeFrame,
  type MetricsData,
  Pipeline,
  PipelineTask,
  type PipelineTaskParams,
} from "../mod.ts";
import { silentLogger } from "../core/log.ts";

/** Reports TTFB and processing on each Text, and usage on each LlmRun. */
class Service extends FrameProcessor {
  constructor(readonly metrics = true) {
    super("svc");
  }
  override canGenerateMetrics() {
    return this.metrics;
  }
  override processFrame(f: Frame, d: Direction, link: Link) {
    if (f.kind === "Text") {
      link.startTtfb();
      link.startProcessing();
      link.stopTtfb("m1");
      link.stopProcessing();
    } else if (f.kind === "LlmRun") {
      link.reportLlmUsage({ promptTokens: 3, completionTokens: 4, totalTokens: 7 }, "m1");
      link.reportTtsUsage(12);
    } else link.push(f, d);
  }
}

async function collect(params: PipelineTaskParams, svc = new Service()): Promise<MetricsData[]> {
  const got: MetricsData[] = [];
  const task = new PipelineTask(new Pipeline([svc]), {
    idleTimeoutMs: null,
    logger: silentLogger,
    ...params,
  });
  task.onFrameReachedDownstream(
    ["Metrics"],
    (f) => void got.push(...(f as { data: MetricsData[] }).data),
  );
  task.onStarted(async () => {
    await task.queueFrames([
      makeFrame("Text", { text: "a" }),
      makeFrame("Text", { text: "b" }),
      makeFrame("LlmRun", {}),
    ]);
    await task.stopWhenDone();
  });
  await task.run();
  return got;
}

Deno.test("no Metrics frame unless metrics are enabled", async () => {
  assert.deepEqual(await collect({}), []);
});

Deno.test("no Metrics frame from a processor that cannot generate metrics", async () => {
  assert.deepEqual(
    await collect({ enableMetrics: true, enableUsageMetrics: true }, new Service(false)),
    [],
  );
});

Deno.test("ttfb and processing metrics are reported per measurement", async () => {
  const got = await collect({ enableMetrics: true });
  assert.deepEqual(got.map((m) => m.type), ["ttfb", "processing", "ttfb", "processing"]);
  const ttfb = got[0] as Extract<MetricsData, { type: "ttfb" }>;
  assert.equal(ttfb.processor, "svc");
  assert.equal(ttfb.model, "m1");
  assert.ok(ttfb.seconds >= 0 && ttfb.seconds < 1);
});

Deno.test("reportOnlyInitialTtfb reports the first TTFB only", async () => {
  const got = await collect({ enableMetrics: true, reportOnlyInitialTtfb: true });
  assert.deepEqual(got.map((m) => m.type), ["ttfb", "processing", "processing"]);
});

Deno.test("usage metrics need enableUsageMetrics", async () => {
  const got = await collect({ enableUsageMetrics: true });
  assert.deepEqual(got, [
    {
      type: "llm_usage",
      processor: "svc",
      model: "m1",
      tokens: { promptTokens: 3, completionTokens: 4, totalTokens: 7 },
    },
    { type: "tts_usage", processor: "svc", characters: 12 },
  ]);
});
