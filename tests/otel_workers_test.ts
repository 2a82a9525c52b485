/**
 * OpenTelemetry from worker threads: the real server with `--workers 2` and `OTEL_DENO=true`
 * carries carrier calls on both threads; Deno's one exporter sends the spans made in each worker
 * and the metrics each worker records, every point with its `worker` attribute, to an OTLP/HTTP
 * receiver in this test.
 */
import assert from "node:assert/strict";
import { BENCH_TWILIO_TOKEN, writeBenchConfig } from "../bench/capacity_child.ts";
import { closeCalls, openCalls } from "../bench/capacity_load.ts";
import { until } from "./_core_helpers.ts";
import { OtlpReceiver } from "./_otlp_receiver.ts";
import { startServerChild } from "./_server_child.ts";

Deno.test({
  name: "otel workers: spans and metrics of calls on two worker threads reach the collector",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const receiver = new OtlpReceiver();
    const config = await writeBenchConfig("./.tmp/otel_workers", 64);
    const server = await startServerChild(config, {
      TWILIO_AUTH_TOKEN: BENCH_TWILIO_TOKEN,
      FLOWCAT_LOG: "warn",
      OTEL_DENO: "true",
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_BSP_SCHEDULE_DELAY: "200",
      OTEL_METRIC_EXPORT_INTERVAL: "300",
    }, {
      args: ["--workers", "2"],
      // Worker threads load their modules at run time: from source they read the tree, which the
      // computed grants do not cover (server_workers_test.ts runs them so too).
      flags: [
        "--allow-net=127.0.0.1",
        "--allow-read=.",
        "--allow-env=TWILIO_AUTH_TOKEN,FLOWCAT_LOG,OTEL_DENO",
        "--ignore-env",
      ],
    });
    try {
      assert.match(server.stdout(), /2 workers on one port/);
      const port = Number(new URL(server.base).port);
      // Enough calls that the kernel puts some on each thread (checked below, not assumed).
      const { calls, refused } = await openCalls([port], 12);
      assert.deepEqual(refused, []);
      await until(
        () => receiver.latest("flowcat.calls.started").length === 2,
        10_000,
        "calls started on both workers",
      );
      await closeCalls(calls);
      await until(
        () => receiver.scoped("flowcat").filter((s) => s.name === "call").length === 12,
        10_000,
        "a call span per call",
      );
      await until(
        () => receiver.latest("flowcat.calls.ended").reduce((a, p) => a + (p.value ?? 0), 0) === 12,
        10_000,
        "every call counted as ended",
      );
    } finally {
      assert.equal(await server.stop(), 0, server.stderr());
      await receiver.close();
    }
    const started = receiver.latest("flowcat.calls.started");
    assert.deepEqual(started.map((p) => p.attributes.worker).sort(), ["0", "1"]);
    assert.equal(started.reduce((a, p) => a + (p.value ?? 0), 0), 12);
    for (const p of started) assert.ok(p.value! > 0, `worker ${p.attributes.worker} took calls`);
    // Each call span is exported once, whichever thread ran the call.
    const spans = receiver.scoped("flowcat").filter((s) => s.name === "call");
    assert.equal(new Set(spans.map((s) => s.attributes["flowcat.call.id"])).size, 12);
    for (const s of spans) assert.equal(s.attributes["flowcat.call.end_reason"], "caller_hung_up");
  },
});
