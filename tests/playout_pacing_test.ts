/**
 * Outbound pacing under a deliberately blocked event loop: the shared playout clock serves every
 * playing output in one pass, and after a stall an output sends what is due within its lead,
 * not a catch-up burst; nothing is lost or reordered.
 */
import assert from "node:assert/strict";
import { makeFrame } from "../core/frames.ts";
import { FrameProcessor, type Link } from "../core/processor.ts";
import { Pipeline } from "../core/pipeline.ts";
import { PipelineTask } from "../core/task.ts";
import { TransportOutput } from "../core/processors/transport.ts";
import { joinPlayoutClock, leavePlayoutClock } from "../core/playout_clock.ts";
import { silentLogger } from "../core/log.ts";
import { until } from "./_core_helpers.ts";
import { FakeLeg } from "./_fake_leg.ts";

/** Keep the thread busy for `ms`, as a long synchronous job or a GC pause would. */
function blockFor(ms: number): number {
  const end = performance.now() + ms;
  while (performance.now() < end) { /* busy */ }
  return performance.now();
}

/** A TransportOutput on a fake leg, fed through a driver's link. */
function outputRig(leadMs: number) {
  const leg = new FakeLeg();
  const out = new TransportOutput(leg, { leadMs });
  const rig = { leg, out } as {
    leg: FakeLeg;
    out: TransportOutput;
    link: Link;
    task: PipelineTask;
  };
  class Driver extends FrameProcessor {
    override start(_s: unknown, _p: unknown, l: Link) {
      rig.link = l;
    }
  }
  rig.task = new PipelineTask(new Pipeline([new Driver(), out]), {
    idleTimeoutMs: null,
    logger: silentLogger,
  });
  return rig;
}

Deno.test("after a blocked event loop, what fell due goes out at once but never more than the lead", async () => {
  const LEAD = 40;
  const CHUNK = 20;
  const rig = outputRig(LEAD);
  const { leg, task } = rig;
  // One second of audio with a ramp in it, so order and completeness can be checked sample by
  // sample: 50 chunks of 20 ms.
  const pcm = new Int16Array(16000);
  for (let i = 0; i < pcm.length; i++) pcm[i] = i % 32000;
  let blockEnd = 0;
  task.onStarted(async () => {
    rig.link.pushDown(
      makeFrame("TtsAudio", { audio: { pcm, sampleRate: 16000, numChannels: 1 } }),
    );
    await until(() => leg.sent.length >= 5);
    blockEnd = blockFor(200); // ten chunks fall due while the thread is blocked
    await until(() => leg.sent.length === 50, 5000);
    await task.stopWhenDone();
  });
  await task.run();

  // Nothing lost or reordered.
  const played = new Int16Array(16000);
  let at = 0;
  for (const s of leg.sent) {
    played.set(s.audio.pcm, at);
    at += s.audio.pcm.length;
  }
  assert.equal(at, 16000);
  assert.deepEqual(played, pcm);

  const after = leg.sent.filter((s) => s.at >= blockEnd);
  assert.ok(after.length >= 40, `chunks sent after the block: ${after.length}`);
  const first = after[0].at;
  // What fell due during the block goes out on the first tick after it (the clock's 10 ms,
  // with room for a shared machine), not a tick later per chunk.
  assert.ok(first - blockEnd < 60, `first chunk ${(first - blockEnd).toFixed(1)} ms after`);
  // The far end is never more than the lead ahead of real time since the restart: at every send,
  // the audio sent since the block is at most the time elapsed plus the lead (and the chunk
  // that fits under it). A catch-up burst would send the ten overdue chunks at once.
  for (let i = 0; i < after.length; i++) {
    const sentMs = (i + 1) * CHUNK;
    const allowed = after[i].at - first + LEAD + CHUNK;
    assert.ok(
      sentMs <= allowed + 0.5,
      `chunk ${i} after the block: ${sentMs} ms sent ${(after[i].at - first).toFixed(1)} ms in`,
    );
  }
  const burst = after.filter((s) => s.at - first < 1).length;
  assert.ok(burst <= LEAD / CHUNK + 1, `${burst} chunks in the first pass after the block`);
  // And the rest follows at real time: the last chunk is due (sent ms - lead) after the first.
  const span = after[after.length - 1].at - first;
  const due = after.length * CHUNK - LEAD - CHUNK;
  assert.ok(span >= due - 1, `after the block: ${span.toFixed(0)} ms for ${due} ms due`);
  assert.ok(span <= due + 300, `after the block: ${span.toFixed(0)} ms for ${due} ms due`);
});

Deno.test("the playout clock serves every output in one pass, also on a late tick", async () => {
  const seen: number[][] = [[], [], []];
  const services = seen.map((times) => (now: number) => {
    times.push(now);
    return true;
  });
  for (const s of services) joinPlayoutClock(s);
  try {
    await until(() => seen[0].length >= 2);
    const blockEnd = blockFor(100);
    await until(() => seen.every((t) => t.some((now) => now >= blockEnd)));
    // One tick reads the clock once and hands every member the same instant.
    const firstAfter = seen.map((t) => t.find((now) => now >= blockEnd)!);
    assert.equal(new Set(firstAfter).size, 1, `one pass: ${firstAfter.join(", ")}`);
    // A late tick is one tick: no member is called back to back to make up missed ones.
    const calls = seen[0].filter((now) => now >= blockEnd && now - firstAfter[0] < 1).length;
    assert.equal(calls, 1);
  } finally {
    for (const s of services) leavePlayoutClock(s);
  }
});

Deno.test("an output restarted after running dry sends at once and keeps its lead", async () => {
  // The echo case: each chunk arrives alone, the far end runs dry between them; after a stall
  // four arrive together. Three go out at once (while the far end holds less than the lead),
  // the fourth when the first has played; a catch-up from the stale schedule would send all.
  const LEAD = 40;
  const rig = outputRig(LEAD);
  const { leg, task } = rig;
  const chunk = () =>
    makeFrame("TtsAudio", {
      audio: { pcm: new Int16Array(160), sampleRate: 8000, numChannels: 1 },
    });
  let failure: unknown;
  task.onStarted(async () => {
    try {
      await echoCase();
    } catch (err) {
      failure = err;
    }
    await task.stopWhenDone();
  });
  const echoCase = async () => {
    rig.link.pushDown(chunk());
    await until(() => leg.sent.length === 1);
    blockFor(60);
    const t0 = performance.now();
    for (let i = 0; i < 4; i++) rig.link.pushDown(chunk());
    for (let i = 0; i < 50; i++) await Promise.resolve();
    assert.equal(leg.sent.length, 4, "three of the four at once: the far end had run dry");
    await until(() => leg.sent.length === 5);
    const wait = leg.sent[4].at - t0;
    assert.ok(wait >= 19, `the fourth waited ${wait.toFixed(1)} ms for the far end`);
  };
  await task.run();
  if (failure !== undefined) throw failure;
});
