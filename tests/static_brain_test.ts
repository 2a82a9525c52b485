/** staticBrain: one node, `end_call` ends the call, extra tools answered by `onTool`. */

import assert from "node:assert/strict";
import { staticBrain } from "../mod.ts";

Deno.test("staticBrain: end_call ends with the model's disposition, then offers nothing", async () => {
  const brain = staticBrain("Be brief.");
  assert.equal(brain.systemPrompt(), "Be brief.");
  assert.equal(brain.currentNodeId(), "main");
  assert.deepEqual(brain.tools().map((t) => t.name), ["end_call"]);
  assert.deepEqual(await brain.onToolCall("lookup", {}), {
    type: "stay",
    result: { error: "no tool lookup" },
  });
  assert.equal(brain.isFinished(), false);
  assert.deepEqual(await brain.onToolCall("end_call", { disposition: "booked" }), {
    type: "end",
    disposition: "booked",
  });
  assert.equal(brain.isFinished(), true);
  assert.deepEqual(brain.tools(), []);
  assert.deepEqual(brain.collectedVars(), { disposition: "booked" });
  assert.equal((await brain.onToolCall("end_call", {})).type, "stay", "ends once");
});

Deno.test("staticBrain: extra tools are offered and answered by onTool", async () => {
  const seen: unknown[] = [];
  const brain = staticBrain("Desk.", {
    nodeId: "desk",
    tools: [{ name: "hours", description: "Opening hours.", params: { type: "object" } }],
    onTool: (name, args) => {
      seen.push([name, args]);
      return { open: "9-17" };
    },
  });
  assert.deepEqual(brain.tools().map((t) => t.name), ["end_call", "hours"]);
  assert.deepEqual(await brain.onToolCall("hours", { day: "mon" }), {
    type: "stay",
    result: { open: "9-17" },
  });
  assert.deepEqual(seen, [["hours", { day: "mon" }]]);
  assert.equal((await brain.onToolCall("end_call", {})).type, "end");
  assert.deepEqual(brain.collectedVars(), { disposition: "completed" });
});
