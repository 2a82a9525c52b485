/**
 * The capacity benchmark, smallest run: 3 calls for about a second against a real server
 * child (spawned with `deno`), through the answer webhook and Twilio-framed media sockets.
 * Checks the result's shape and that every frame sent came back as exactly one echo, from the
 * agent and from the bare-echo floor.
 */
import assert from "node:assert/strict";
import { runCapacityBench } from "../bench/capacity.ts";
import { capacitySvg } from "../bench/capacity_plot.ts";

Deno.test("capacity bench: 3 calls echo every frame, result has the documented shape", async () => {
  const r = await runCapacityBench({
    calls: [3],
    durationS: 1,
    up: false,
    rampMs: 200,
    warmupFrames: 5,
    warmupCalls: 0,
    scratchDir: ".tmp/capacity_test",
    command: "test",
    floor: true,
    workers: [1, 2],
    log: () => {},
  });
  assert.equal(r.points.length, 2);
  const p = r.points[0];
  assert.equal(p.calls, 3);
  assert.equal(p.workers, 1);
  assert.equal(p.calls_refused, 0);
  assert.ok(p.frames_sent >= 3 * 30, `frames sent: ${p.frames_sent}`);
  assert.equal(p.frames_lost, 0, "every frame echoed");
  assert.equal(p.frames_echoed, p.frames_sent);
  assert.equal(p.odd_size_messages, 0, "one 20 ms message per 20 ms frame");
  assert.equal(p.unsolicited_messages, 0);
  assert.ok(p.latency_ms.samples > 0);
  for (const k of ["p50", "p99", "p999", "max"] as const) {
    assert.ok(Number.isFinite(p.latency_ms[k]) && p.latency_ms[k] > 0, k);
  }
  assert.ok(p.latency_ms.p50 <= p.latency_ms.p99 && p.latency_ms.p99 <= p.latency_ms.max);
  assert.equal(p.server_split.length, 1);
  const sp = p.server_split[0];
  assert.ok(sp.server_ms.samples > 0, "server-side latency sampled");
  // The split matches each reply to the message that caused it: every echoed frame the
  // generator timed is matched once on the server, and the server's share of a frame lies
  // inside its end-to-end time, so each percentile of the one is at most the other's.
  assert.equal(sp.unmatched, 0, "every reply matched to its message");
  assert.equal(sp.server_ms.samples, p.latency_ms.samples, "the same frames on both sides");
  assert.equal(sp.pipeline_ms.samples, sp.server_ms.samples);
  for (const k of ["p50", "p99", "p999", "max"] as const) {
    assert.ok(sp.server_ms[k] <= p.latency_ms[k], `server ${k} within end to end`);
    assert.ok(sp.pipeline_ms[k] <= sp.server_ms[k] && sp.pacing_ms[k] <= sp.server_ms[k], k);
  }
  assert.ok(p.server.cpu_percent > 0 && p.server.rss_bytes_max > 0);
  // The call limit and the idle watch are deadlines on one isolate-wide timer: none per call.
  assert.ok(p.idle.timers_per_session < 1, `timers per idle call: ${p.idle.timers_per_session}`);
  assert.equal(typeof p.idle.heap_bytes_per_session, "number");
  assert.equal(typeof p.healthy, "boolean");
  assert.deepEqual(Object.keys(r.saturated_at), ["1", "2"]);
  // Two worker threads in the one server process: every frame echoed, and each worker's timers
  // and latency split counted (bench/capacity_worker_probe.ts).
  const w2 = r.points[1];
  assert.equal(w2.workers, 2);
  assert.equal(w2.frames_lost, 0);
  assert.ok(w2.server_split[0]?.pipeline_ms.samples > 0, "the workers' split is joined");
  assert.equal(w2.server_split[0].unmatched, 0);
  assert.equal(w2.server_split[0].server_ms.samples, w2.latency_ms.samples);
  assert.ok(w2.server_split[0].server_ms.p99 <= w2.latency_ms.p99);
  assert.ok(
    Number.isFinite(w2.idle.timers_per_session) && w2.idle.timers_per_session < 1,
    `the workers' timers are counted, none per call: ${w2.idle.timers_per_session}`,
  );
  assert.equal(r.deno.deno, Deno.version.deno);
  assert.ok(r.machine.cpus >= 1);
  assert.match(capacitySvg(r.points, r.machine), /^<svg[^>]*>[\s\S]*<polyline[\s\S]*<\/svg>\n$/);
  // The floor: the same 3 calls against the bare echo, which answers every frame too.
  assert.equal(r.floor?.length, 1);
  const f = r.floor![0];
  assert.equal(f.calls, 3);
  assert.equal(f.frames_lost, 0, "the bare echo answers every frame");
  assert.equal(f.odd_size_messages, 0, "in the agent's message shape");
  assert.equal(f.unsolicited_messages, 0);
  assert.deepEqual(f.server_split, [], "no pipeline to split");
  assert.match(capacitySvg(r.points, r.machine, r.floor), /bare echo \(floor\)/);
});

Deno.test("capacity bench --repeat: agent and floor interleaved per round, median and spread", async () => {
  const r = await runCapacityBench({
    calls: [3],
    durationS: 1,
    rampMs: 200,
    warmupFrames: 5,
    warmupCalls: 0,
    scratchDir: ".tmp/capacity_test_repeat",
    command: "test",
    floor: true,
    repeat: 2,
    // This checkout again, as a before/after comparison would use an archive of another commit.
    baseline: ".",
    contention: "test run",
    log: () => {},
  });
  assert.equal(r.points.length, 2);
  assert.equal(r.baseline_points?.length, 2);
  assert.equal(r.floor?.length, 2);
  assert.equal(r.contention?.note, "test run");
  const row = r.repeated?.[0];
  assert.ok(row !== undefined);
  assert.equal(row.calls, 3);
  assert.equal(row.rounds, 2);
  assert.equal(row.agent.e2e_p99_ms.values.length, 2);
  const { median, min, max } = row.agent.e2e_p99_ms;
  assert.ok(min <= median && median <= max);
  assert.equal(row.agent.frames_lost.max, 0);
  assert.equal(row.cpu_ratio?.values.length, 2);
  assert.ok(row.cpu_ratio!.median > 0, "agent CPU per frame over the floor's, per round");
  assert.equal(row.baseline?.cpu_us_per_frame.values.length, 2);
  assert.equal(row.cpu_vs_baseline?.values.length, 2);
  // Only rounds in which neither point lost a frame count as kept up.
  const kept = r.points.filter((p, i) => p.frames_lost === 0 && r.floor![i].frames_lost === 0);
  assert.equal(row.kept_up?.cpu_ratio?.values.length, kept.length);
  // Each round's server figures lie within its end-to-end ones.
  for (const p of r.points) {
    assert.equal(p.server_split[0].unmatched, 0);
    assert.ok(p.server_split[0].server_ms.p99 <= p.latency_ms.p99);
  }
});
