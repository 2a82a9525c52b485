import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import {
  END_CALL_TOOL,
  GraphBrain,
  type GraphSpec,
  parseGraphSpec,
  validateGraphSpec,
} from "../core/agent/mod.ts";

const example: GraphSpec = (() => {
  const res = parseGraphSpec(Deno.readTextFileSync("examples/graph.yaml"));
  if (!res.ok) throw new Error(JSON.stringify(res.problems));
  return res.spec;
})();

function spec(input: unknown): GraphSpec {
  const res = validateGraphSpec(input);
  if (!res.ok) throw new Error(JSON.stringify(res.problems));
  return res.spec;
}

/** Small graph: collect an optional number, a terminal node with its own say. */
const small = spec({
  start: "ask",
  variables: { who: "friend", amount: {}, note: {} },
  nodes: [
    {
      id: "ask",
      prompt: "Ask {{who}} for an amount.",
      transitions: [
        {
          name: "got_amount",
          description: "amount known",
          target: "thanks",
          collect: [{ name: "amount", type: "number" }, { name: "note", required: false }],
        },
        { name: "quit", description: "leave", target: "bye", say: "Leaving, {{who}}." },
      ],
    },
    {
      id: "thanks",
      prompt: "Thank {{who}} for {{amount}} ({{note}}).",
      transitions: [{ name: "done", description: "d", target: "bye" }],
    },
    { id: "bye", terminal: true, disposition: "finished", say: "Bye {{who}}, amount {{amount}}." },
  ],
});

const names = (b: GraphBrain) => b.tools().map((t) => t.name);

Deno.test("tools at each node: transitions, workflow tools where offered, end_call last", () => {
  const b = new GraphBrain(example);
  assert.deepEqual(names(b), ["wants_booking", "not_interested", END_CALL_TOOL]);
  assert.deepEqual(names(GraphBrain.at(example, "collect_details")), [
    "details_collected",
    "check_availability",
    END_CALL_TOOL,
  ]);
  assert.deepEqual(names(GraphBrain.at(example, "confirm")), [
    "confirmed",
    "change_details",
    END_CALL_TOOL,
  ]);
  assert.deepEqual(names(GraphBrain.at(example, "booked")), []);
  // A transition without collect is a no-argument tool; with collect it declares the values.
  const wants = b.tools()[0];
  assert.deepEqual(wants.params, { type: "object", properties: {} });
  const details = GraphBrain.at(example, "collect_details").tools()[0].params as {
    required: string[];
    properties: Record<string, { type: string }>;
  };
  assert.deepEqual(details.required, ["party_size", "date", "time"]);
  assert.equal(details.properties.party_size.type, "integer");
  // tools() hands out a copy.
  b.tools().pop();
  assert.equal(b.tools().length, 3);
});

Deno.test("transition: interpolated prompt, new tools, say and node id", () => {
  const b = new GraphBrain(example, { vars: { caller_name: "Ada" } });
  assert.match(b.systemPrompt(), /host of Chez Flowcat\. Greet the caller \("Hi Ada"\)/);
  const a = b.onToolCall("wants_booking", {});
  assert.equal(a.type, "transition");
  if (a.type !== "transition") return;
  assert.equal(a.nodeId, "collect_details");
  assert.equal(a.say, "Lovely, let's find you a table.");
  assert.deepEqual(a.tools.map((t) => t.name), [
    "details_collected",
    "check_availability",
    END_CALL_TOOL,
  ]);
  assert.equal(a.systemPrompt, b.systemPrompt());
  assert.equal(b.currentNodeId(), "collect_details");
  assert.equal(b.isFinished(), false);
});

Deno.test("stay: unknown tool reports the tools available; node unchanged", () => {
  const b = new GraphBrain(example);
  const a = b.onToolCall("confirmed", {}); // exists, but at another node
  assert.equal(a.type, "stay");
  assert.match(
    JSON.stringify(a),
    /unknown tool \\"confirmed\\" at node \\"greeting\\".*wants_booking, not_interested, end_call/,
  );
  assert.equal(b.currentNodeId(), "greeting");
});

Deno.test("stay: workflow tool is left to the embedder (no result)", () => {
  const b = GraphBrain.at(example, "collect_details");
  assert.deepEqual(b.onToolCall("check_availability", { party_size: 2 }), { type: "stay" });
  assert.equal(b.currentNodeId(), "collect_details");
  // Not offered at the greeting node, so unknown there.
  const g = new GraphBrain(example);
  const a = g.onToolCall("check_availability", {});
  assert.ok(a.type === "stay" && a.result !== undefined);
});

Deno.test("end_call ends with the model's disposition; later calls stay", () => {
  const b = new GraphBrain(example);
  assert.deepEqual(b.onToolCall(END_CALL_TOOL, { disposition: "hung_up", reason: "caller left" }), {
    type: "end",
    disposition: "hung_up",
  });
  assert.equal(b.isFinished(), true);
  assert.equal(b.disposition(), "hung_up");
  const after = b.onToolCall("wants_booking", {});
  assert.equal(after.type, "stay");
  assert.equal(b.currentNodeId(), "greeting");
  const c = new GraphBrain(example);
  assert.deepEqual(c.onToolCall(END_CALL_TOOL, {}), { type: "end" });
});

Deno.test("transition into a terminal node ends with its disposition and a say", () => {
  const b = new GraphBrain(small, { vars: { who: "Bo" } });
  // The transition's say wins over the terminal node's.
  assert.deepEqual(b.onToolCall("quit", {}), {
    type: "end",
    disposition: "finished",
    say: "Leaving, Bo.",
  });
  assert.equal(b.currentNodeId(), "bye");
  assert.equal(b.isFinished(), true);
  // Without a transition say, the terminal node's say is used, interpolated after collecting.
  const c = new GraphBrain(small);
  c.onToolCall("got_amount", { amount: 12.5 });
  assert.deepEqual(c.onToolCall("done", {}), {
    type: "end",
    disposition: "finished",
    say: "Bye friend, amount 12.5.",
  });
});

Deno.test("variables: collected from args, type-checked, optional ones skipped, defaults not reported", () => {
  const b = new GraphBrain(small);
  const bad = b.onToolCall("got_amount", { amount: "ten" });
  assert.equal(bad.type, "stay");
  assert.match(JSON.stringify(bad), /amount: expected number/);
  const missing = b.onToolCall("got_amount", {});
  assert.match(JSON.stringify(missing), /amount: required/);
  assert.equal(b.currentNodeId(), "ask");
  assert.deepEqual(b.collectedVars(), {});
  const ok = b.onToolCall("got_amount", { amount: 3, extra: "ignored" });
  assert.equal(ok.type, "transition");
  assert.deepEqual(b.collectedVars(), { amount: 3 });
  assert.equal(b.systemPrompt(), "Thank friend for 3 ().");
  // Integer collect rejects fractions.
  const d = GraphBrain.at(example, "collect_details");
  assert.equal(
    d.onToolCall("details_collected", { party_size: 2.5, date: "Fri", time: "8" }).type,
    "stay",
  );
  assert.equal(
    d.onToolCall("details_collected", { party_size: 2, date: "Fri", time: "8" }).type,
    "transition",
  );
  assert.deepEqual(d.collectedVars(), { party_size: 2, date: "Fri", time: "8" });
});

Deno.test("seed variables override defaults and are reported as collected", () => {
  const b = new GraphBrain(small, { vars: { who: "Cy" } });
  assert.equal(b.systemPrompt(), "Ask Cy for an amount.");
  assert.deepEqual(b.collectedVars(), { who: "Cy" });
});

Deno.test("GraphBrain.at rebuilds the same state from node id and variables", () => {
  const live = new GraphBrain(example, { vars: { caller_name: "Ada" } });
  live.onToolCall("wants_booking", {});
  live.onToolCall("details_collected", { party_size: 4, date: "Friday", time: "8pm" });
  const rebuilt = GraphBrain.at(example, live.currentNodeId(), live.collectedVars());
  assert.equal(rebuilt.systemPrompt(), live.systemPrompt());
  assert.deepEqual(rebuilt.tools(), live.tools());
  assert.match(rebuilt.systemPrompt(), /table for 4 on Friday at\s+8pm/);
  assert.deepEqual(rebuilt.onToolCall("confirmed", {}), live.onToolCall("confirmed", {}));
  assert.ok(GraphBrain.at(example, "booked").isFinished());
  assert.throws(
    () => GraphBrain.at(example, "nowhere"),
    (e) => e instanceof FlowcatError && /nowhere/.test(e.message),
  );
});

Deno.test("fromInput validates and throws every problem in one FlowcatError", () => {
  assert.throws(
    () => GraphBrain.fromInput({ start: "x", nodes: [{ id: "a", prompt: "{{q}}" }] }),
    (e) =>
      e instanceof FlowcatError && e.kind === "config" && /unknown start node/.test(e.message) &&
      /unknown variable/.test(e.message) && /no transition/.test(e.message),
  );
  assert.equal(
    GraphBrain.fromInput(JSON.parse(JSON.stringify(example))).currentNodeId(),
    "greeting",
  );
});
