/**
 * The adaptive playout jitter buffer: order, duplicates, loss, late packets, wrap-around, the
 * depth following the jitter estimate, the delay bound, and resets. Time is simulated: packets
 * carry an arrival time, and the receiver pulls on a 20 ms tick.
 */

import assert from "node:assert/strict";
import { JitterBuffer, type JitterBufferOptions, LOST } from "../core/audio/jitter_buffer.ts";

const FRAME = 960; // timestamp units per 20 ms at 48 kHz

/** A buffer of sequence numbers (the payload is the sequence number itself). */
function buffer(opts: Partial<JitterBufferOptions> = {}): JitterBuffer<number> {
  return new JitterBuffer<number>({ clockRate: 48000, ...opts });
}

/** Push `seq` as sent at frame index `seq - first` and arriving at `at` ms. */
function push(jb: JitterBuffer<number>, seq: number, at: number, ssrc = 1, first = 0): string {
  const s = seq & 0xffff;
  return jb.push(s, ((seq - first) * FRAME) >>> 0, s, at, ssrc);
}

/** Pull `n` times; `LOST` shows as "L", nothing as "-". */
function pulls(jb: JitterBuffer<number>, n: number): (number | string)[] {
  const out: (number | string)[] = [];
  for (let i = 0; i < n; i++) {
    const p = jb.pull();
    out.push(p === LOST ? "L" : p === undefined ? "-" : p);
  }
  return out;
}

/**
 * Simulate a call: packet `i` (sequence `first + i`) arrives at `arrivals[i]` ms (undefined:
 * lost on the way), the receiver pulls every 20 ms from `tick0` on, until `endMs`.
 */
function simulate(
  jb: JitterBuffer<number>,
  arrivals: (number | undefined)[],
  opts: { first?: number; tick0?: number; endMs?: number } = {},
): (number | string)[] {
  const first = opts.first ?? 0;
  const events = arrivals
    .map((at, i) => ({ at, seq: first + i }))
    .filter((e): e is { at: number; seq: number } => e.at !== undefined)
    .sort((a, b) => a.at - b.at);
  const end = opts.endMs ?? Math.max(...events.map((e) => e.at)) + 400;
  const out: (number | string)[] = [];
  let k = 0;
  for (let t = opts.tick0 ?? 5; t <= end; t += 20) {
    while (k < events.length && events[k].at <= t) {
      push(jb, events[k].seq, events[k].at, 1, first), k++;
    }
    const p = jb.pull();
    out.push(p === LOST ? "L" : p === undefined ? "-" : p);
  }
  return out;
}

/** The played sequence numbers and markers, without the idle "-" pulls. */
const played = (xs: (number | string)[]) => xs.filter((x) => x !== "-");

Deno.test("jitter buffer: in order, each packet once, one frame of delay on a clean stream", () => {
  const jb = buffer();
  assert.equal(jb.pull(), undefined, "nothing before the first packet");
  const out = simulate(jb, Array.from({ length: 50 }, (_, i) => i * 20));
  assert.deepEqual(played(out), Array.from({ length: 50 }, (_, i) => i));
  // The first packet (at 0 ms) is played at the first tick (5 ms): no more than a frame waits.
  assert.equal(out[0], 0);
  assert.deepEqual(
    { ...jb.stats },
    {
      received: 50,
      duplicates: 0,
      late: 0,
      lost: 0,
      concealed: 0,
      discarded: 0,
      underruns: 1, // the stream ended
      outOfRange: 0,
      resets: 0,
    },
  );
  assert.equal(jb.targetDepth, 1);
  assert.equal(jb.depth, 0);
});

Deno.test("jitter buffer: packets reordered within the depth come out in order", () => {
  const jb = buffer({ minDelayMs: 60 }); // three frames
  for (const seq of [10, 12, 11, 14, 13, 15]) push(jb, seq, 0);
  assert.equal(jb.depth, 6);
  assert.deepEqual(pulls(jb, 7), [10, 11, 12, 13, 14, 15, "-"]);
  assert.equal(jb.stats.lost, 0);
  assert.equal(jb.stats.late, 0);
});

Deno.test("jitter buffer: reordered at the very start, the earlier packet still plays first", () => {
  const jb = buffer({ minDelayMs: 40 });
  push(jb, 101, 0);
  assert.deepEqual(pulls(jb, 1), ["-"], "waits for two frames");
  push(jb, 100, 3);
  assert.deepEqual(pulls(jb, 3), [100, 101, "-"]);
});

Deno.test("jitter buffer: duplicates are dropped and counted, buffered or already played", () => {
  const jb = buffer({ minDelayMs: 40 });
  assert.equal(push(jb, 1, 0), "queued");
  assert.equal(push(jb, 1, 1), "duplicate");
  assert.equal(push(jb, 2, 20), "queued");
  assert.deepEqual(pulls(jb, 1), [1]);
  assert.equal(push(jb, 1, 25), "duplicate", "a copy of a played packet");
  assert.equal(push(jb, 2, 26), "duplicate");
  assert.deepEqual(pulls(jb, 2), [2, "-"]);
  assert.equal(jb.stats.duplicates, 3);
  assert.equal(jb.stats.received, 2);
  assert.equal(jb.stats.late, 0);
});

Deno.test("jitter buffer: a lost packet is a LOST marker at its turn; arriving later it is late", () => {
  const jb = buffer();
  push(jb, 1, 0);
  push(jb, 2, 20);
  push(jb, 4, 60);
  push(jb, 5, 80);
  assert.deepEqual(pulls(jb, 5), [1, 2, "L", 4, 5]);
  assert.equal(push(jb, 3, 90), "late");
  assert.deepEqual(pulls(jb, 1), ["-"], "the late packet is not played");
  assert.equal(jb.stats.lost, 1);
  assert.equal(jb.stats.concealed, 1);
  assert.equal(jb.stats.late, 1);
});

Deno.test("jitter buffer: a stream with losses on a 20 ms tick conceals exactly the lost ones", () => {
  const jb = buffer();
  const lostSeqs = new Set([7, 20, 21, 33]);
  const arrivals = Array.from({ length: 50 }, (_, i) => lostSeqs.has(i) ? undefined : i * 20 + 2);
  const out = played(simulate(jb, arrivals));
  assert.deepEqual(out, Array.from({ length: 50 }, (_, i) => lostSeqs.has(i) ? "L" : i));
  assert.equal(jb.stats.lost, 4);
  assert.equal(jb.stats.concealed, 4);
});

Deno.test("jitter buffer: sequence numbers wrap from 65535 to 0, reordered across the wrap", () => {
  const jb = buffer({ minDelayMs: 40 });
  const first = 65533;
  const order = [65533, 65534, 65536, 65535, 65537, 65538]; // 65536 is 0, 65537 is 1
  order.forEach((seq, i) => push(jb, seq, i * 20, 1, first));
  assert.deepEqual(pulls(jb, 7), [65533, 65534, 65535, 0, 1, 2, "-"]);
  assert.equal(jb.stats.lost, 0);
  // And a long run across the wrap, as a clean stream.
  const jb2 = buffer();
  const out = played(simulate(jb2, Array.from({ length: 20 }, (_, i) => i * 20), { first: 65530 }));
  assert.deepEqual(out, Array.from({ length: 20 }, (_, i) => (65530 + i) & 0xffff));
});

Deno.test("jitter buffer: the depth grows with measured jitter and shrinks back when it calms", () => {
  const jb = buffer();
  // Packets arrive in pairs every 40 ms (0 or 20 ms late each): heavy jitter.
  const jittery = Array.from({ length: 150 }, (_, i) => i * 20 + (i % 2 === 0 ? 20 : 0));
  const out = simulate(jb, jittery, { endMs: 150 * 20 });
  assert.ok(jb.jitterMs > 10, `jitter estimate ${jb.jitterMs}`);
  assert.ok(jb.targetDepth >= 3 && jb.targetDepth <= 10, `target ${jb.targetDepth}`);
  // Once adapted, nothing is lost: the second half plays every packet in order.
  const second = played(out).slice(-60);
  assert.ok(second.every((x, i) => i === 0 || x === (second[i - 1] as number) + 1), `${second}`);
  const lostAfterAdapting = jb.stats.lost;

  // Then the network calms down: the estimate decays and the target comes back to one frame.
  const calm = Array.from({ length: 300 }, (_, i) => (150 + i) * 20 + 1);
  const jb2 = jb;
  for (let i = 0; i < calm.length; i++) {
    push(jb2, 150 + i, calm[i]);
    jb2.pull();
  }
  assert.ok(jb2.jitterMs < 1, `calm jitter ${jb2.jitterMs}`);
  assert.equal(jb2.targetDepth, 1);
  assert.ok(jb2.depth <= 3, `depth after calming ${jb2.depth}`);
  assert.equal(jb2.stats.lost, lostAfterAdapting, "no loss on the calm stream");
});

Deno.test("jitter buffer: the target never passes maxDelayMs, and a burst cannot exceed it", () => {
  const jb = buffer({ maxDelayMs: 100 }); // five frames
  // Wild jitter: 0..400 ms late, so the estimate alone would ask for far more than 100 ms.
  let seed = 7;
  const rnd = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
  for (let i = 0; i < 100; i++) push(jb, i, i * 20 + rnd() * 400);
  assert.ok(jb.jitterMs > 50, `jitter ${jb.jitterMs}`);
  assert.equal(jb.targetDepth, 5);
  assert.ok(jb.depth <= 5, `depth ${jb.depth}`);

  // A stall then a burst of 30 packets at once: playout jumps to the newest, delay stays bounded.
  const jb2 = buffer({ maxDelayMs: 100 });
  for (let i = 0; i < 3; i++) push(jb2, i, i * 20);
  assert.deepEqual(pulls(jb2, 3), [0, 1, 2]);
  for (let i = 3; i < 33; i++) push(jb2, i, 600);
  assert.ok(jb2.depth <= 5, `depth ${jb2.depth}`);
  assert.equal(jb2.stats.discarded + jb2.stats.lost, 33 - 3 - jb2.depth);
  const rest = pulls(jb2, jb2.depth + 1);
  assert.deepEqual(
    rest.slice(0, -1),
    Array.from({ length: rest.length - 1 }, (_, i) => 33 - rest.length + 1 + i),
  );
});

Deno.test("jitter buffer: a delay that stays above the target is cut one frame at a time", () => {
  const jb = buffer();
  // Six frames arrive at once, then the stream runs on time: five frames too many.
  for (let i = 0; i < 6; i++) push(jb, i, 0);
  let seq = 6;
  const out: (number | string)[] = [];
  for (let t = 20; t <= 20 * 200; t += 20) {
    push(jb, seq++, t - 1);
    const p = jb.pull();
    out.push(p === LOST ? "L" : p === undefined ? "-" : p);
  }
  assert.ok(jb.stats.discarded >= 3, `discarded ${jb.stats.discarded}`);
  assert.ok(jb.depth <= jb.targetDepth + 2, `depth ${jb.depth}`);
  assert.equal(jb.stats.lost, 0);
  assert.ok(!out.includes("L") && !out.includes("-"), "no concealment and no gap");
});

Deno.test("jitter buffer: an underrun waits for the target depth again instead of concealing", () => {
  const jb = buffer({ minDelayMs: 40 });
  push(jb, 0, 0);
  push(jb, 1, 20);
  assert.deepEqual(pulls(jb, 3), [0, 1, "-"]);
  assert.equal(jb.stats.underruns, 1);
  assert.equal(jb.playing, false);
  push(jb, 2, 200);
  assert.deepEqual(pulls(jb, 1), ["-"], "one frame is not the target of two");
  push(jb, 3, 210);
  assert.deepEqual(pulls(jb, 3), [2, 3, "-"]);
  assert.equal(jb.stats.lost, 0);
  assert.equal(jb.stats.concealed, 0);
});

Deno.test("jitter buffer: the last frames of a stream that stops while refilling still play", () => {
  const jb = buffer({ minDelayMs: 60 }); // three frames
  push(jb, 0, 0);
  push(jb, 1, 20);
  // Two frames and no more: after three pulls' wait they play rather than stay forever.
  assert.deepEqual(pulls(jb, 6), ["-", "-", 0, 1, "-", "-"]);
  assert.equal(jb.stats.lost, 0);
});

Deno.test("jitter buffer: a new SSRC starts over at once", () => {
  const jb = buffer();
  push(jb, 500, 0, 0xaaaa);
  push(jb, 501, 20, 0xaaaa);
  assert.deepEqual(pulls(jb, 1), [500]);
  assert.equal(push(jb, 9, 40, 0xbbbb), "reset");
  assert.equal(push(jb, 10, 60, 0xbbbb), "queued");
  assert.deepEqual(pulls(jb, 3), [9, 10, "-"]);
  assert.equal(jb.stats.resets, 1);
  assert.equal(jb.stats.late, 0);
});

Deno.test("jitter buffer: a wild sequence jump is dropped once and believed when it continues", () => {
  const jb = buffer();
  push(jb, 100, 0);
  push(jb, 101, 20);
  assert.equal(push(jb, 40000, 40), "out-of-range");
  assert.equal(push(jb, 102, 41), "queued", "the stream goes on");
  assert.equal(push(jb, 30000, 60), "out-of-range");
  assert.equal(push(jb, 30001, 80), "reset", "two in a row: the sender restarted");
  push(jb, 30002, 100);
  assert.deepEqual(pulls(jb, 3), [30001, 30002, "-"]);
  assert.equal(jb.stats.outOfRange, 2);
  assert.equal(jb.stats.resets, 1);
  // A large backward jump is wild too.
  assert.equal(push(jb, 29000, 120), "out-of-range");
});

Deno.test("jitter buffer: RFC 3550 jitter estimate on a known pattern", () => {
  const jb = buffer();
  // Transit alternates 0 / +8 ms: |D| is 8 ms every packet, so J converges to 8.
  for (let i = 0; i < 400; i++) push(jb, i, i * 20 + (i % 2) * 8);
  assert.ok(Math.abs(jb.jitterMs - 8) < 0.01, `J = ${jb.jitterMs}`);
  assert.equal(jb.targetDepth, 2, "4 x 8 ms = 32 ms: two frames");
  // Timestamps wrapping at 2^32 do not disturb it.
  const jb2 = buffer();
  const start = 0x100000000 - 5 * FRAME;
  for (let i = 0; i < 20; i++) jb2.push(i, (start + i * FRAME) >>> 0, i, i * 20, 1);
  assert.ok(jb2.jitterMs < 1e-6, `J across the wrap ${jb2.jitterMs}`);
});

Deno.test("jitter buffer: options are checked", () => {
  assert.throws(() => new JitterBuffer({ clockRate: 0 }), RangeError);
});
