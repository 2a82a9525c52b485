import assert from "node:assert/strict";
import { cancelDeadline, pendingDeadlines, scheduleDeadline } from "../core/deadlines.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

Deno.test("deadlines: fire in due order, never early, and leave no timer behind", async () => {
  const fired: [string, number][] = [];
  const t0 = performance.now();
  const at = (name: string) => () => fired.push([name, performance.now() - t0]);
  scheduleDeadline(60, at("c"));
  scheduleDeadline(20, at("a"));
  scheduleDeadline(40, at("b"));
  scheduleDeadline(40.5, at("b2"));
  assert.equal(pendingDeadlines(), 4);
  while (fired.length < 4) await sleep(10);
  assert.deepEqual(fired.map(([n]) => n), ["a", "b", "b2", "c"]);
  for (const [name, t] of fired) {
    const due = { a: 20, b: 40, b2: 40.5, c: 60 }[name]!;
    assert.ok(t >= due, `${name} fired at ${t.toFixed(2)} ms, due at ${due} ms`);
  }
  assert.equal(pendingDeadlines(), 0);
  // The test's op sanitizer fails it if the shared timer were still armed here.
});

Deno.test("deadlines: a cancelled deadline never fires; cancelling twice is harmless", async () => {
  const fired: string[] = [];
  const first = scheduleDeadline(10, () => fired.push("first"));
  const kept = scheduleDeadline(30, () => fired.push("kept"));
  const dropped = scheduleDeadline(20, () => fired.push("dropped"));
  cancelDeadline(dropped);
  cancelDeadline(dropped);
  cancelDeadline(first);
  assert.equal(pendingDeadlines(), 1);
  while (kept.at >= 0) await sleep(10);
  assert.deepEqual(fired, ["kept"]);
  cancelDeadline(kept); // already fired
  cancelDeadline(undefined);
  assert.equal(pendingDeadlines(), 0);
});

Deno.test("deadlines: cancelling the last one stops the shared timer at once", () => {
  const d = scheduleDeadline(3_600_000, () => assert.fail("must not fire"));
  assert.equal(pendingDeadlines(), 1);
  cancelDeadline(d);
  assert.equal(pendingDeadlines(), 0);
  // No await: the op sanitizer sees a cleared timer, or it fails the test.
});

Deno.test("deadlines: many deadlines keep heap order through random cancels", async () => {
  const fired: number[] = [];
  const ds = Array.from({ length: 200 }, (_, i) => {
    const d = scheduleDeadline((i * 37) % 50, () => fired.push(d.due));
    return { d };
  });
  const cancelled = new Set<number>();
  for (let i = 0; i < 200; i += 3) {
    cancelDeadline(ds[i].d);
    cancelled.add(i);
  }
  while (pendingDeadlines() > 0) await sleep(10);
  assert.equal(fired.length, 200 - cancelled.size);
  assert.deepEqual(fired, [...fired].sort((a, b) => a - b), "fired in due order");
});
