/**
 * server/call_watch.ts: turns and turn latency from the frames reaching a task's ends, TTFB from
 * the service processors' Metrics frames, and Error frames handed on, on a real PipelineTask.
 */
import assert from "node:assert/strict";
import { makeFrame, Pipeline, PipelineTask } from "../mod.ts";
import { memoryLogger } from "../core/log.ts";
import { TurnMeter, watchCall } from "../server/call_watch.ts";
import { createServerMetrics } from "../server/server_metrics.ts";
import { Recorder, until } from "./_core_helpers.ts";

Deno.test("turn meter: VAD edges time each reply; speaking again before it cancels the timing", () => {
  const m = new TurnMeter();
  assert.equal(m.botStarted(0), undefined, "the greeting is no reply");
  m.botStopped();
  m.userStarted();
  m.userStopped(1000);
  m.userTranscript(1100); // ignored: VAD edges are the turn ends here
  assert.equal(m.botStarted(1450), 0.45);
  m.botStopped();
  m.userStopped(3000);
  m.userStarted(); // went on after a pause: no reply is timed from the first stop
  m.userStopped(4000);
  assert.equal(m.botStarted(4200), 0.2);
  assert.equal(m.turns, 2, "a pause inside a turn does not make two");
  assert.equal(m.measured, 2);
  assert.equal(m.meanLatency(), 0.325);
});

Deno.test("turn meter: without VAD edges a final caller transcript ends the turn", () => {
  const m = new TurnMeter();
  m.userTranscript(1000);
  m.userTranscript(1200); // a second piece of the same turn: the first one counts
  assert.equal(m.botStarted(1300), 0.3);
  m.userTranscript(1400); // heard while the bot speaks: not timed
  assert.equal(m.botStarted(1500), undefined);
  assert.equal(m.turns, 3);
});

Deno.test("watchCall: a task's ends feed turn latency, TTFB and failures", async () => {
  const metrics = createServerMetrics();
  const log = memoryLogger();
  const head = new Recorder("RealtimeProcessor");
  const task = new PipelineTask(new Pipeline([head]), { idleTimeoutMs: null, logger: log });
  let t = 0;
  const watch = watchCall(task, { providers: { realtime: "gemini" }, metrics, now: () => t }, log);
  const done = task.run();
  await until(() => head.link !== undefined);
  const link = head.link!;
  link.pushDown(makeFrame("Transcription", { text: "hi", userId: "user", final: true }));
  t = 700;
  link.broadcast(makeFrame("BotStartedSpeaking", {}));
  link.pushDown(
    makeFrame("Metrics", {
      data: [{ type: "ttfb", processor: "RealtimeProcessor", model: "m", seconds: 0.42 }],
    }),
  );
  link.pushError("gemini: could not connect: HTTP 429", false);
  await until(() => log.records.length > 0);
  await task.stopWhenDone();
  await done;
  assert.equal(watch.turns, 1);
  assert.equal(watch.meanLatency(), 0.7);
  const text = metrics.registry.expose();
  assert.ok(text.includes('flowcat_turn_latency_seconds_bucket{le="0.75"} 1'), text);
  assert.ok(text.includes("flowcat_turn_latency_seconds_count 1"), text);
  assert.ok(
    text.includes(
      'flowcat_provider_ttfb_seconds_bucket{service="realtime",provider="gemini",le="0.5"} 1',
    ),
    text,
  );
  assert.deepEqual(watch.failed?.counts, { "realtime/gemini/rate_limit": 1 });
  assert.equal(log.records[0].message, "provider failed");
});
