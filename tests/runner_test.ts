import assert from "node:assert/strict";
import { FrameProcessor, makeFrame, Pipeline, PipelineRunner, PipelineTask } from "../mod.ts";
import { silentLogger } from "../core/log.ts";

// Spawned by name: the test task grants --allow-run=deno, which resolves through PATH.
Deno.test("runner drains every task of a subprocess on SIGTERM", async () => {
  const child = new Deno.Command("deno", {
    args: ["run", "--allow-read=.", "tests/fixtures/runner_child.ts"],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  while (!out.includes("ready\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    out += value;
  }
  assert.ok(out.includes("ready"), `child did not start: ${out}`);
  child.kill("SIGTERM");
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    out += value;
  }
  const status = await child.status;
  const err = new TextDecoder().decode(await new Response(child.stderr).arrayBuffer());
  assert.equal(status.code, 0, err);
  for (const p of ["call-1/a", "call-1/b", "call-2/a", "call-2/b"]) {
    assert.ok(out.includes(`${p} stop hook: cancel`), out);
  }
  assert.equal(out.match(/finished: cancel \(SIGTERM received\)/g)?.length, 2, out);
  assert.ok(out.includes("running after drain: 0"));
});

Deno.test("runner.cancelAll cancels running tasks; run resolves with each reason", async () => {
  const runner = new PipelineRunner({
    handleSigint: false,
    handleSigterm: false,
    logger: silentLogger,
  });
  const a = new PipelineTask(new Pipeline([new FrameProcessor()]), {
    idleTimeoutMs: null,
    logger: silentLogger,
  });
  const b = new PipelineTask(new Pipeline([new FrameProcessor()]), {
    idleTimeoutMs: null,
    logger: silentLogger,
  });
  b.onStarted(() => b.queueFrame(makeFrame("End", {})));
  a.onStarted(() => void setTimeout(() => runner.cancelAll("shutdown"), 10));
  const [ra, rb] = await Promise.all([runner.run(a), runner.run(b)]);
  assert.deepEqual(rb, { kind: "end" });
  assert.deepEqual(ra, { kind: "cancel", reason: "shutdown" });
  assert.equal(runner.running, 0);
});
