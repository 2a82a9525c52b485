/**
 * Outbound pacing under a deliberately blocked event loop: the shared playout clock serves every
 * playing output in one pass; after a stall an output sends what fell due at once and never more
 * than its lead beyond the call's timeline; a few late chunks keep the timeline, so the chunks
 * after them are not held back; nothing is lost or reordered.
 */
import assert from "node:assert/strict";
import { makeFrame } from "../core/frames.ts";
import { FrameProcessor, type Link } from "../core/processor.ts";
import { Pipeline } from "../core/pipeline.ts";
import { PipelineTask } from "../core/task.ts";
import { TransportOutput, type TransportOutputOptions } from "../core/processors/transport.ts";
import { joinPlayoutClock, leavePlayoutClock } from "../core/playout_clock.ts";
import { silentLogger } from "../core/log.ts";
import { until } from "./_core_helpers.ts";
import { FakeLeg } from "./_fake_leg.ts";

const LEAD = 40;
const CHUNK = 20;

/** Keep the thread busy for `ms`, as a long synchronous job or a GC pause would. */
function blockFor(ms: number): number {
  const end = performance.now() + ms;
  while (performance.now() < end) { /* busy */ }
  return performance.now();
}

/** A TransportOutput on a fake leg, fed through a driver's link; `body` runs once started. */
async function withOutput(
  options: TransportOutputOptions,
  body: (leg: FakeLeg, push: (pcm: Int16Array) => void) => Promise<void>,
): Promise<FakeLeg> {
  const leg = new FakeLeg();
  let link: Link | undefined;
  class Driver extends FrameProcessor {
    override start(_s: unknown, _p: unknown, l: Link) {
      link = l;
    }
  }
  const task = new PipelineTask(
    new Pipeline([new Driver(), new TransportOutput(leg, options)]),
    { idleTimeoutMs: null, logger: silentLogger },
  );
  const push = (pcm: Int16Array) =>
    link!.pushDown(makeFrame("TtsAudio", { audio: { pcm, sampleRate: 8000, numChannels: 1 } }));
  let failure: unknown;
  task.onStarted(async () => {
    try {
      await body(leg, push);
    } catch (err) {
      failure = err;
    }
    await task.stopWhenDone();
  });
  await task.run();
  if (failure !== undefined) throw failure;
  return leg;
}

/** Every sample sent, in order. */
function played(leg: FakeLeg): Int16Array {
  const n = leg.sent.reduce((a, s) => a + s.audio.pcm.length, 0);
  const out = new Int16Array(n);
  let at = 0;
  for (const s of leg.sent) {
    out.set(s.audio.pcm, at);
    at += s.audio.pcm.length;
  }
  return out;
}

Deno.test("after a blocked event loop, what fell due goes out at once, never past the lead", async () => {
  // One second of audio with a ramp in it (order and completeness checked sample by sample):
  // 50 chunks of 20 ms, queued at once as a model's reply would be.
  const pcm = new Int16Array(8000);
  for (let i = 0; i < pcm.length; i++) pcm[i] = i;
  let blockEnd = 0;
  const leg = await withOutput({ leadMs: LEAD }, async (leg, push) => {
    push(pcm);
    await until(() => leg.sent.length >= 5);
    blockEnd = blockFor(200); // ten chunks fall due while the thread is blocked
    await until(() => leg.sent.length === 50, 5000);
  });
  assert.deepEqual(played(leg), pcm, "nothing lost or reordered");

  const t0 = leg.sent[0].at; // the call's timeline: chunk i is due at t0 + 20 i
  // Never more than the lead (and the chunk that fits under it) beyond the timeline.
  leg.sent.forEach((s, i) => {
    assert.ok(
      i * CHUNK <= s.at - t0 + LEAD + 0.5,
      `chunk ${i} sent ${(s.at - t0).toFixed(1)} ms into the timeline`,
    );
  });
  // What fell due during the block goes out on the first tick after it, all of it at once:
  // after that pass nothing overdue is left, and the rest keeps the timeline.
  const after = leg.sent.findIndex((s) => s.at >= blockEnd);
  const pass = leg.sent[after].at;
  assert.ok(pass - blockEnd < 60, `first pass ${(pass - blockEnd).toFixed(1)} ms after the block`);
  const inPass = leg.sent.filter((s) => s.at >= pass && s.at < pass + 1).length;
  assert.ok(
    (after + inPass) * CHUNK >= pass - t0,
    `after the first pass ${(after + inPass) * CHUNK} ms sent, ${(pass - t0).toFixed(0)} ms due`,
  );
  const last = leg.sent[49].at - t0;
  assert.ok(last >= 49 * CHUNK - LEAD - 1, `last chunk at ${last.toFixed(0)} ms: not early`);
  assert.ok(last <= 49 * CHUNK + 150, `last chunk at ${last.toFixed(0)} ms: the block not kept`);
});

Deno.test("a longer stall than catchUpMs is given up: one pass sends that much and the lead", async () => {
  await withOutput({ leadMs: LEAD, catchUpMs: 100 }, async (leg, push) => {
    push(new Int16Array(8000));
    await until(() => leg.sent.length >= 3);
    const n = leg.sent.length;
    blockFor(300);
    await until(() => leg.sent.length > n);
    await new Promise((r) => setTimeout(r, 0));
    const pass = leg.sent[n].at;
    const burst = leg.sent.filter((s) => s.at >= pass && s.at < pass + 1).length;
    // 100 ms of the 300 caught up, plus the lead (and the chunk under it): at most 8 chunks.
    assert.ok(burst <= (100 + LEAD) / CHUNK + 1, `${burst} chunks in one pass`);
    assert.ok(burst >= 100 / CHUNK, `${burst} chunks in one pass`);
  });
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

Deno.test("late chunks keep the timeline: the chunks after them go out as they arrive", async () => {
  // An echo: one chunk every 20 ms, as the caller's audio comes in. Chunks 10 to 12 come 70 ms
  // late and together (a hiccup upstream); the far end ran dry meanwhile. The chunks after them
  // are on schedule again and must not queue behind the hiccup for the rest of the call.
  const sentAt: number[] = [];
  const pushedAt: number[] = [];
  await withOutput({ leadMs: LEAD }, async (leg, push) => {
    const t0 = performance.now();
    const at = (k: number) => t0 + k * CHUNK + (k >= 10 && k <= 12 ? 70 - (k - 10) * CHUNK : 0);
    for (let k = 0; k < 30; k++) {
      const wait = at(k) - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      pushedAt[k] = performance.now();
      push(new Int16Array(160).fill(k));
      sentAt[k] = leg.sent.length;
    }
    await until(() => leg.sent.length === 30);
  });
  for (let k = 13; k < 30; k++) {
    // Within the lead a chunk is sent inside its own push (synchronously), so this holds on a
    // busy machine too: `sentAt` counts the chunks out when the push returned.
    assert.ok(sentAt[k] >= k + 1, `chunk ${k} held back (${sentAt[k]} out after its push)`);
  }
});
