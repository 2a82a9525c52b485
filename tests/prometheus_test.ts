/** server/prometheus.ts: the text exposition format, line by line. */
import assert from "node:assert/strict";
import {
  escapeLabelValue,
  formatValue,
  mergeFamilies,
  PROMETHEUS_CONTENT_TYPE,
  Registry,
  renderFamilies,
} from "../server/prometheus.ts";

Deno.test("prometheus: counters, gauges and histograms with HELP, TYPE and cumulative buckets", () => {
  const reg = new Registry();
  const ended = reg.counter("calls_ended_total", "Calls ended.\nBy reason.", [
    "transport",
    "reason",
  ]);
  ended.labels("twilio", "caller_hung_up").inc();
  ended.labels("twilio", "caller_hung_up").inc(2);
  ended.labels("sip", "drain").inc();
  ended.labels("sip", "drain").inc(-5); // counters never go down
  const active = reg.gauge("active_calls", "Calls now.");
  active.labels().set(3);
  active.labels().dec();
  reg.gauge("lag_seconds", "Lag.").collect(() => 0.25);
  const h = reg.histogram("latency_seconds", "Latency.", [], [1, 0.5, 2]);
  for (const v of [0.1, 0.5, 0.7, 3]) h.labels().observe(v);
  const text = reg.expose();
  assert.equal(
    text,
    [
      "# HELP calls_ended_total Calls ended.\\nBy reason.",
      "# TYPE calls_ended_total counter",
      'calls_ended_total{transport="twilio",reason="caller_hung_up"} 3',
      'calls_ended_total{transport="sip",reason="drain"} 1',
      "# HELP active_calls Calls now.",
      "# TYPE active_calls gauge",
      "active_calls 2",
      "# HELP lag_seconds Lag.",
      "# TYPE lag_seconds gauge",
      "lag_seconds 0.25",
      "# HELP latency_seconds Latency.",
      "# TYPE latency_seconds histogram",
      'latency_seconds_bucket{le="0.5"} 2',
      'latency_seconds_bucket{le="1"} 3',
      'latency_seconds_bucket{le="2"} 3',
      'latency_seconds_bucket{le="+Inf"} 4',
      "latency_seconds_sum 4.3",
      "latency_seconds_count 4",
      "",
    ].join("\n"),
  );
  assert.equal(PROMETHEUS_CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8");
});

Deno.test("prometheus: label values are escaped; histograms keep their labels before le", () => {
  const reg = new Registry();
  const c = reg.counter("errors_total", "Errors.", ["provider"]);
  c.labels('we"ird\\name\nx').inc();
  const h = reg.histogram("ttfb_seconds", "TTFB.", ["service"], [0.1]);
  h.labels("stt").observe(0.05);
  const text = reg.expose();
  assert.ok(text.includes('errors_total{provider="we\\"ird\\\\name\\nx"} 1'), text);
  assert.ok(text.includes('ttfb_seconds_bucket{service="stt",le="0.1"} 1'), text);
  assert.ok(text.includes('ttfb_seconds_bucket{service="stt",le="+Inf"} 1'), text);
  assert.ok(text.includes('ttfb_seconds_sum{service="stt"} 0.05'), text);
  assert.equal(escapeLabelValue('a"b'), 'a\\"b');
  assert.deepEqual([Infinity, -Infinity, NaN, 1e-7, 3].map(formatValue), [
    "+Inf",
    "-Inf",
    "NaN",
    "1e-7",
    "3",
  ]);
});

Deno.test("prometheus: bad names, label counts and duplicates are refused", () => {
  const reg = new Registry();
  assert.throws(() => reg.counter("bad-name", "x"));
  assert.throws(() => reg.counter("ok_total", "x", ["__reserved"]));
  assert.throws(() => reg.histogram("h", "x", ["le"], [1]));
  assert.throws(() => reg.histogram("h2", "x", [], []));
  const c = reg.counter("c_total", "x", ["a"]);
  assert.throws(() => c.labels());
  assert.throws(() => reg.counter("c_total", "again"));
  assert.throws(() => reg.gauge("g", "x", ["a"]).collect(() => 1));
});

Deno.test("prometheus: observing resolves nothing per call once the child is kept", () => {
  const reg = new Registry();
  const child = reg.histogram("h_seconds", "x", ["service"], [0.1, 1]).labels("tts");
  const before = Deno.memoryUsage().heapUsed;
  for (let i = 0; i < 1e6; i++) child.observe((i % 100) / 50);
  const grew = Deno.memoryUsage().heapUsed - before;
  assert.equal(child.count, 1e6);
  assert.ok(grew < 1_000_000, `a million observations grew the heap by ${grew} bytes`);
});

Deno.test("prometheus: constant labels lead every sample; several sources join per family", () => {
  const make = (worker: string, calls: number) => {
    const reg = new Registry();
    reg.gauge("active_calls", "Calls now.").collect(() => calls);
    reg.histogram("lat_seconds", "Lat.", ["service"], [1]).labels("stt").observe(0.5);
    return reg.collect({ worker });
  };
  const text = renderFamilies(mergeFamilies([make("0", 3), make("1", 4)]));
  assert.equal(
    text,
    [
      "# HELP active_calls Calls now.",
      "# TYPE active_calls gauge",
      'active_calls{worker="0"} 3',
      'active_calls{worker="1"} 4',
      "# HELP lat_seconds Lat.",
      "# TYPE lat_seconds histogram",
      'lat_seconds_bucket{worker="0",service="stt",le="1"} 1',
      'lat_seconds_bucket{worker="0",service="stt",le="+Inf"} 1',
      'lat_seconds_sum{worker="0",service="stt"} 0.5',
      'lat_seconds_count{worker="0",service="stt"} 1',
      'lat_seconds_bucket{worker="1",service="stt",le="1"} 1',
      'lat_seconds_bucket{worker="1",service="stt",le="+Inf"} 1',
      'lat_seconds_sum{worker="1",service="stt"} 0.5',
      'lat_seconds_count{worker="1",service="stt"} 1',
      "",
    ].join("\n"),
  );
  assert.throws(() => new Registry().collect({ "bad-name": "x" }));
});

Deno.test("prometheus: a mirror gets every increment, gauge change and observation, per child", () => {
  const reg = new Registry();
  const ended = reg.counter("ended_total", "Ended.", ["reason"]);
  const active = reg.gauge("active", "Active.");
  const latency = reg.histogram("latency_seconds", "Latency.", [], [0.5, 1]);
  ended.labels("timeout").inc(2); // before the mirror: a child that already exists
  const got: [string, number][] = [];
  const sink = (name: string) => (labels: Readonly<Record<string, string>>) => (v: number) =>
    got.push([`${name}${JSON.stringify(labels)}`, v]);
  ended.mirror(sink("ended"));
  active.mirror(sink("active"));
  latency.mirror(sink("latency"));
  ended.labels("timeout").inc();
  ended.labels("drain").inc(3);
  ended.labels("drain").inc(-1); // ignored, as by the counter
  active.labels().inc();
  active.labels().inc();
  active.labels().dec();
  active.labels().set(5);
  active.labels().set(5); // no change, nothing mirrored
  latency.labels().observe(0.7);
  assert.deepEqual(got, [
    ['ended{"reason":"timeout"}', 1],
    ['ended{"reason":"drain"}', 3],
    ["active{}", 1],
    ["active{}", 1],
    ["active{}", -1],
    ["active{}", 4],
    ["latency{}", 0.7],
  ]);
  // The Prometheus values are unchanged by mirroring.
  assert.match(reg.expose(), /^ended_total\{reason="timeout"\} 3$/m);
  assert.match(reg.expose(), /^active 5$/m);
  assert.deepEqual(latency.buckets, [0.5, 1]);
});
