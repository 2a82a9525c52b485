import assert from "node:assert/strict";
import { runDemoPipeline, sineFrame } from "../demo/pipeline.ts";

Deno.test("demo pipeline: frames in = frames out = frames sourced, sample-exact", async () => {
  const r = await runDemoPipeline();
  assert.equal(r.sourced, 50);
  assert.equal(r.framesIn, 50);
  assert.equal(r.framesOut, 50);
  assert.equal(r.echoed, 50);
  assert.ok(r.identical);
  assert.ok(r.ok);
});

Deno.test("demo sine is 440 Hz at half scale and continuous across frames", () => {
  const a = sineFrame(0), b = sineFrame(320);
  assert.equal(a.length, 320);
  assert.equal(Math.max(...a), 16384);
  // Continuity: the first sample of frame 2 continues frame 1's phase.
  const w = (2 * Math.PI * 440) / 16000;
  assert.equal(b[0], Math.round(Math.sin(w * 320) * 0.5 * 32767));
});

Deno.test("deno task demo pipeline prints its documented lines and exits 0", async () => {
  const out = await new Deno.Command("deno", {
    args: ["run", "--allow-read=.", "demo/main.ts", "pipeline"],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const labels = text.trim().split("\n").map((l) => l.split(":")[0]);
  assert.deepEqual(labels, [
    "Flowcat demo",
    "source",
    "audio",
    "chain",
    "frames in",
    "frames out",
    "echoed",
    "wall time",
    "result",
  ]);
  assert.match(text, /^result: +OK$/m);
  assert.match(text, /^chain: +Source -> Echo -> Tap -> Sink$/m);
});

Deno.test("demo rejects an unknown subcommand with usage and exit 2", async () => {
  const out = await new Deno.Command("deno", {
    args: ["run", "--allow-read=.", "demo/main.ts", "nope"],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 2);
  const err = new TextDecoder().decode(out.stderr);
  assert.match(err, /unknown subcommand "nope"/);
  assert.match(err, /Usage: deno task demo/);
  assert.doesNotMatch(err, /at .*\.ts:\d+/, "no stack trace");
});
