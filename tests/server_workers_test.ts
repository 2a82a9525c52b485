import assert from "node:assert/strict";
import { MemorySessionSource } from "../server/session_store.ts";
import { parseWorkerCount, startWorkers, workerModuleUrl } from "../server/workers.ts";
import { benchAgentConfig } from "../bench/capacity_child.ts";
import { SentryReceiver } from "./_sentry_receiver.ts";
import { describeWorkerFailure } from "../server/worker_failures.ts";
import { signCallToken } from "../telephony/security.ts";
import { BENCH_TWILIO_TOKEN, writeBenchConfig } from "../bench/capacity_child.ts";
import { closeCalls, openCalls, runAudio } from "../bench/capacity_load.ts";
import { sleep } from "./_core_helpers.ts";
import { startServerChild } from "./_server_child.ts";

const SECRET = crypto.getRandomValues(new Uint8Array(32));

function pair(): [MemorySessionSource, MemorySessionSource] {
  const make = (index: number) =>
    new MemorySessionSource({ provider: "echo", cluster: { secret: SECRET, index, count: 2 } });
  return [make(0), make(1)];
}

Deno.test("workers: run ids are unique across workers and carry the creator's index", async () => {
  const [a, b] = pair();
  const ids = new Set<number>();
  for (let i = 0; i < 10; i++) {
    const ra = await a.createRun("carrier", { carrier: "twilio" });
    const rb = await b.createRun("carrier", { carrier: "twilio" });
    assert.equal(ra.runId % 2, 0);
    assert.equal(rb.runId % 2, 1);
    ids.add(ra.runId).add(rb.runId);
  }
  assert.equal(ids.size, 20);
});

Deno.test("workers: another worker adopts a run whose signed token checks out, and nothing else", async () => {
  const [a, b] = pair();
  const run = await a.createRun("carrier", { carrier: "twilio" });
  assert.equal(await b.verify(run.runId, run.token.replace(/.$/, "x")), undefined, "forged MAC");
  const other = await signCallToken(SECRET, { runId: run.runId + 2 });
  assert.equal(await b.verify(run.runId, other), undefined, "token of another run");
  const expired = await signCallToken(SECRET, { runId: run.runId, ttlSeconds: 1, now: 0 });
  assert.equal(await b.verify(run.runId, expired), undefined, "expired token");
  const adopted = await b.verify(run.runId, run.token, { origin: "carrier", carrier: "twilio" });
  assert.ok(adopted);
  assert.equal(adopted.runId, run.runId);
  assert.equal(adopted.carrier, "twilio");
  assert.equal(b.get(run.runId), adopted, "kept for finalize and artifacts");
  const placed = await a.createRun("outbound", { carrier: "telnyx", to: "+14155550100" });
  const fetched = await b.verify(placed.runId, placed.token, {
    origin: "outbound",
    carrier: "telnyx",
  });
  assert.equal(fetched?.origin, "outbound", "an outbound call's answer fetch adopts it too");
  await b.complete(run.runId, run.token, { kind: "end" } as never);
  // A worker never adopts its own ids (it made them: unknown means gone), nor does a
  // store outside a cluster, even with the same secret.
  const own = await signCallToken(SECRET, { runId: 4 });
  assert.equal(await a.verify(4, own), undefined);
  const single = new MemorySessionSource({ provider: "echo" });
  assert.equal(await single.verify(run.runId, run.token), undefined);
});

Deno.test("workers: --workers takes a positive count or auto", () => {
  assert.equal(parseWorkerCount("3"), 3);
  assert.equal(parseWorkerCount("auto", 16), 16);
  assert.throws(() => parseWorkerCount("0"), /--workers/);
  assert.throws(() => parseWorkerCount("two"), /--workers/);
});

Deno.test({
  name:
    "workers: one process, two worker threads on one port, carrier calls echo whichever worker answers",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const config = await writeBenchConfig("./.tmp/server_workers", 64);
    const child = new Deno.Command("deno", {
      args: [
        "run",
        "--allow-net=127.0.0.1",
        "--allow-read=.",
        "--allow-env=TWILIO_AUTH_TOKEN,FLOWCAT_LOG",
        "--ignore-env",
        "server/main.ts",
        "--config",
        config,
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--workers",
        "2",
      ],
      env: { TWILIO_AUTH_TOKEN: BENCH_TWILIO_TOKEN, FLOWCAT_LOG: "warn", NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const out = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    let port = 0;
    try {
      while (port === 0) {
        const { value, done } = await out.read();
        if (done) throw new Error(`server exited: ${text}`);
        text += value;
        const m = /on http:\/\/127\.0\.0\.1:(\d+)\/ \(model: echo; 2 workers on one port\)/.exec(
          text,
        );
        if (m) port = Number(m[1]);
      }
      const seen = new Set<number>();
      for (let i = 0; i < 40 && seen.size < 2; i++) {
        const res = await fetch(`http://127.0.0.1:${port}/healthz`, {
          headers: { connection: "close" },
        });
        seen.add((await res.json()).worker);
      }
      assert.deepEqual([...seen].sort(), [0, 1], "the kernel spread connections over both");
      const { calls, refused } = await openCalls([port], 16);
      assert.deepEqual(refused, [], "no media socket refused, whichever worker it reached");
      // Whichever worker takes a scrape answers for both, each sample labelled with its worker.
      const active = async () => {
        const res = await fetch(`http://127.0.0.1:${port}/metrics`, {
          headers: { connection: "close" },
        });
        const text = await res.text();
        const per = [...text.matchAll(/^flowcat_active_calls\{worker="(\d)"\} (\d+)$/gm)];
        assert.deepEqual(per.map((m) => m[1]).sort(), ["0", "1"], text);
        return per.reduce((a, m) => a + Number(m[2]), 0);
      };
      for (let i = 0; i < 50 && (await active()) !== 16; i++) await sleep(100);
      for (let i = 0; i < 4; i++) assert.equal(await active(), 16, "every scrape sees all calls");
      const run = await runAudio(calls, { durationMs: 1500, warmupFrames: 0, drainMs: 1500 });
      await closeCalls(calls);
      // Starts are spread over the first second: every call talks for at least 0.5 s.
      assert.ok(run.framesSent >= 16 * 25, `sent ${run.framesSent}`);
      assert.equal(run.framesEchoed, run.framesSent, "every frame echoed");
      assert.equal(run.oddSize, 0);
    } finally {
      child.kill("SIGTERM");
      const rest = (async () => {
        for (;;) {
          const { value, done } = await out.read();
          if (done) return;
          text += value;
        }
      })();
      const status = await child.status;
      await rest;
      await child.stderr.cancel();
      assert.equal(status.code, 0, text);
      assert.match(text, /draining the workers/);
      assert.match(text, /stopped/);
    }
  },
});

Deno.test("workers: the worker module is worker.ts from source, worker.js beside a bundle", () => {
  assert.equal(workerModuleUrl("file:///app/server/workers.ts"), "file:///app/server/worker.ts");
  assert.equal(
    workerModuleUrl("file:///opt/flowcat/lib/server.js"),
    "file:///opt/flowcat/lib/worker.js",
  );
});

for (const how of ["throw", "reject"] as const) {
  Deno.test({
    name: `workers: an error escaping a worker (${how}) is reported with its calls, counted, and ` +
      "stops that worker",
    sanitizeResources: false,
    sanitizeOps: false,
    fn: async () => {
      const receiver = new SentryReceiver();
      const dir = `./.tmp/server_workers_${how}`;
      await Deno.remove(dir, { recursive: true }).catch(() => {});
      await Deno.mkdir(dir, { recursive: true });
      const configPath = `${dir}/agent.json`;
      await Deno.writeTextFile(
        configPath,
        JSON.stringify({
          ...benchAgentConfig(64),
          observability: { errors: { dsn: receiver.dsn(), environment: "test" } },
        }),
      );
      Deno.env.set("TWILIO_AUTH_TOKEN", BENCH_TWILIO_TOKEN);
      const pool = await startWorkers({
        configPath,
        host: "127.0.0.1",
        port: 0,
        count: 2,
        instrument: new URL("./_worker_crash.ts", import.meta.url).href,
      });
      let calls: Awaited<ReturnType<typeof openCalls>>["calls"] = [];
      try {
        const opened = await openCalls([pool.port], 8);
        calls = opened.calls;
        assert.deepEqual(opened.refused, []);
        for (let i = 0; i < 50; i++) {
          const per = await pool.stats();
          if (per.reduce((a, s) => a + s.activeCalls, 0) === 8) break;
          await sleep(100);
        }
        const before = await pool.stats();
        const answers = await pool.probe(`${how} ${dir}/crash`);
        assert.equal(answers.filter((a) => a === true).length, 1, "exactly one worker fails");
        const failure = await pool.failed;
        assert.equal(failure.where, how === "throw" ? "uncaught_error" : "unhandled_rejection");
        assert.match(
          failure.message,
          how === "throw" ? /reading 'pcm'/ : /offset is out of bounds/,
        );
        // The calls it ended are the ones it was running.
        assert.equal(failure.calls.length, before[failure.index].activeCalls);
        // What the server prints before it drains the rest and exits 1.
        assert.match(
          describeWorkerFailure(failure),
          new RegExp(
            `^worker ${failure.index} failed \\(${
              failure.where.replace("_", " ")
            }: .+\\); draining the other workers and exiting$`,
          ),
        );
        // One fatal report to the DSN, naming the worker and its calls.
        const events = receiver.events;
        assert.equal(events.length, 1, JSON.stringify(events));
        const ev = events[0] as { level: string; tags: Record<string, string> };
        assert.equal(ev.level, "fatal");
        assert.deepEqual(
          [ev.tags.where, ev.tags.worker, ev.tags.calls],
          [failure.where, String(failure.index), failure.calls.join(",") || "none"],
        );
        // The other worker still serves, and its scrape counts the failure.
        const survivor = await pool.stats();
        assert.equal(survivor.length, 1);
        assert.equal(survivor[0].activeCalls, 8 - failure.calls.length);
        let text = "";
        // The port is shared: until the failed worker's listener is gone, the kernel may still
        // hand it a connection, which then closes unanswered; the next one reaches the survivor.
        for (let i = 0; i < 10 && !text.includes("flowcat_worker_failures_total"); i++) {
          try {
            const res = await fetch(`http://127.0.0.1:${pool.port}/metrics`, {
              headers: { connection: "close" },
            });
            text = await res.text();
          } catch {
            await sleep(50);
          }
        }
        assert.match(
          text,
          new RegExp(`flowcat_worker_failures_total\\{where="${failure.where}"\\} 1`),
        );
        assert.doesNotMatch(
          text,
          new RegExp(`worker="${failure.index}"`),
          "the dead worker's series are gone",
        );
      } finally {
        await closeCalls(calls);
        await pool.drain();
        await receiver.close();
        Deno.env.delete("TWILIO_AUTH_TOKEN");
      }
    },
  });
}

Deno.test("workers: --workers runs under the computed flags, each worker behind its guard", async () => {
  const server = await startServerChild("examples/agent.yaml", {}, { workers: 2 });
  try {
    assert.ok(server.flags.some((f) => f.startsWith("--allow-read=") && f.includes("server")));
    const seen = new Set<number>();
    for (let i = 0; i < 40 && seen.size < 2; i++) {
      const res = await fetch(`${server.base}/healthz`, { headers: { connection: "close" } });
      seen.add((await res.json()).worker);
    }
    assert.deepEqual([...seen].sort(), [0, 1], "both workers answered");
  } finally {
    assert.equal(await server.stop(), 0, server.stderr());
  }
});
