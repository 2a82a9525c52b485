/**
 * withExtraTools: tools from beside the brain on every node and transition, their calls answered
 * without a move, the brain's own tools winning a name clash.
 */
import assert from "node:assert/strict";
import { withExtraTools } from "../core/agent/extra_tools.ts";
import type { AgentBrain, BrainAction, ToolDecl } from "../core/seams.ts";

const decl = (name: string): ToolDecl => ({ name, description: name, params: { type: "object" } });

function fakeBrain(): AgentBrain & { calls: string[] } {
  const calls: string[] = [];
  let tools = [decl("go"), decl("lookup")];
  return {
    calls,
    systemPrompt: () => "p",
    tools: () => tools,
    currentNodeId: () => "a",
    isFinished: () => false,
    collectedVars: () => ({ x: 1 }),
    onToolCall(name): BrainAction {
      calls.push(name);
      if (name !== "go") return { type: "stay", result: `brain:${name}` };
      tools = [decl("end_call")];
      return { type: "transition", systemPrompt: "q", tools: [decl("end_call")] };
    },
  };
}

Deno.test("extra tools: offered after the brain's, routed, and kept across transitions", async () => {
  const brain = fakeBrain();
  const asked: string[] = [];
  const both = withExtraTools(brain, {
    tools: () => [decl("lookup"), decl("weather")],
    call: (name, args) => {
      asked.push(name);
      return Promise.resolve({ name, args });
    },
  });
  // The brain's `lookup` wins the clash.
  assert.deepEqual(both.tools().map((t) => t.name), ["go", "lookup", "weather"]);
  assert.deepEqual(await both.onToolCall("weather", { city: "Oslo" }), {
    type: "stay",
    result: { name: "weather", args: { city: "Oslo" } },
  });
  assert.deepEqual(await both.onToolCall("lookup", {}), { type: "stay", result: "brain:lookup" });
  const moved = await both.onToolCall("go", {});
  assert.equal(moved.type, "transition");
  assert.deepEqual(
    (moved as { tools: ToolDecl[] }).tools.map((t) => t.name),
    ["end_call", "lookup", "weather"],
  );
  // On the new node `lookup` is no longer the brain's: the extra tool answers it.
  assert.deepEqual(await both.onToolCall("lookup", {}), {
    type: "stay",
    result: { name: "lookup", args: {} },
  });
  assert.deepEqual(asked, ["weather", "lookup"]);
  assert.deepEqual(brain.calls, ["lookup", "go"]);
  assert.deepEqual(both.collectedVars(), { x: 1 });
  // An unknown name goes to the brain, which says what it says.
  assert.deepEqual(await both.onToolCall("nope", {}), { type: "stay", result: "brain:nope" });
});
