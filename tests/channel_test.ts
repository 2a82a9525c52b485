import assert from "node:assert/strict";
import { customFrame, makeFrame } from "../mod.ts";
import { FrameQueue } from "../core/channel.ts";

Deno.test("FrameQueue is FIFO across growth and wrap-around", () => {
  const q = new FrameQueue(4);
  const out: number[] = [];
  let next = 0;
  for (let round = 0; round < 50; round++) {
    for (let i = 0; i < (round % 7) + 1; i++) {
      q.push(makeFrame("Text", { text: String(next++) }), "downstream");
    }
    for (let i = 0; i < (round % 5) + 1 && q.size > 0; i++) {
      out.push(Number((q.shift() as { text: string }).text));
    }
  }
  while (q.size > 0) out.push(Number((q.shift() as { text: string }).text));
  assert.deepEqual(out, Array.from({ length: next }, (_, i) => i));
  assert.equal(q.shift(), undefined);
});

Deno.test("FrameQueue keeps the direction of each frame", () => {
  const q = new FrameQueue();
  q.push(makeFrame("Text", { text: "a" }), "upstream");
  q.push(makeFrame("Text", { text: "b" }), "downstream");
  q.shift();
  assert.equal(q.lastDirection, "upstream");
  q.shift();
  assert.equal(q.lastDirection, "downstream");
});

Deno.test("dropInterruptible keeps uninterruptible frames in order", () => {
  const q = new FrameQueue(2);
  const keep = [
    makeFrame("End", {}),
    makeFrame("UpdateSettings", { target: "llm", settings: {} }),
    makeFrame("FunctionCallResult", { result: { toolCallId: "1", functionName: "f", result: 1 } }),
    customFrame({ type: "Keep", frameClass: "data", uninterruptible: true }),
  ];
  q.push(makeFrame("Text", { text: "x" }), "downstream");
  q.push(keep[0], "downstream");
  q.push(makeFrame("TtsSpeak", { text: "y" }), "upstream");
  q.push(keep[1], "upstream");
  q.push(keep[2], "downstream");
  q.push(customFrame({ type: "Drop", frameClass: "data" }), "downstream");
  q.push(keep[3], "downstream");
  assert.equal(q.dropInterruptible(), 3);
  assert.deepEqual([q.shift(), q.shift(), q.shift(), q.shift()], keep);
  assert.equal(q.size, 0);
});
