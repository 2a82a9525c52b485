import assert from "node:assert/strict";
import {
  END_CALL_TOOL,
  formatPath,
  formatValue,
  interpolate,
  parseGraphSpec,
  type Problem,
  templatePlaceholders,
  validateGraphSpec,
} from "../core/agent/mod.ts";

/** A valid two-node graph; tests break one thing at a time. */
function base(): Record<string, unknown> {
  return {
    start: "a",
    variables: { name: "there", size: { description: "party size" } },
    nodes: [
      {
        id: "a",
        prompt: "Hi {{name}}",
        transitions: [{ name: "go", description: "go on", target: "b", say: "ok {{name}}" }],
      },
      { id: "b", terminal: true, disposition: "done", say: "bye {{name}}" },
    ],
  };
}

function problems(input: unknown): Problem[] {
  const res = validateGraphSpec(input);
  assert.equal(res.ok, false, "expected validation to fail");
  return res.ok ? [] : res.problems;
}

function has(ps: Problem[], code: string, path: string): Problem {
  const p = ps.find((x) => x.code === code && x.path === path);
  assert.ok(p, `no ${code} at ${path}; got ${JSON.stringify(ps)}`);
  return p;
}

// deno-lint-ignore no-explicit-any
type Any = any;

Deno.test("example graph loads and validates", async () => {
  const res = parseGraphSpec(await Deno.readTextFile("examples/graph.yaml"));
  assert.ok(res.ok, res.ok ? "" : JSON.stringify(res.problems));
  assert.equal(res.spec.start, "greeting");
  assert.deepEqual(res.spec.nodes.map((n) => n.id), [
    "greeting",
    "collect_details",
    "confirm",
    "booked",
    "declined",
  ]);
  // Shorthand scalar variable becomes {default}.
  assert.equal(res.spec.variables.restaurant.default, "Chez Flowcat");
  assert.equal(res.spec.workflow_tools[0].name, "check_availability");
});

Deno.test("valid minimal graph gets defaults filled in", () => {
  const res = validateGraphSpec(base());
  assert.ok(res.ok);
  assert.deepEqual(res.spec.nodes[0].transitions[0].collect, []);
  assert.equal(res.spec.nodes[0].terminal, false);
  assert.deepEqual(res.spec.workflow_tools, []);
  assert.equal(res.spec.variables.name.default, "there");
});

Deno.test("unknown target node", () => {
  const g: Any = base();
  g.nodes[0].transitions[0].target = "nowhere";
  const p = has(problems(g), "unknown_target", "nodes[0].transitions[0].target");
  assert.match(p.message, /"nowhere"/);
});

Deno.test("duplicate node ids", () => {
  const g: Any = base();
  g.nodes.push({ id: "b", terminal: true });
  assert.match(has(problems(g), "duplicate_id", "nodes[2].id").message, /first at nodes\[1\]/);
});

Deno.test("missing and unknown start node", () => {
  const g: Any = base();
  delete g.start;
  has(problems(g), "no_start", "start");
  g.start = "zzz";
  assert.match(has(problems(g), "unknown_start", "start").message, /"zzz"/);
  g.start = "b";
  has(problems(g), "start_terminal", "start");
});

Deno.test("unreachable node", () => {
  const g: Any = base();
  g.nodes.push({
    id: "island",
    prompt: "x",
    transitions: [{ name: "t", description: "d", target: "b" }],
  });
  const ps = problems(g);
  has(ps, "unreachable", "nodes[2]");
  assert.equal(
    ps.filter((p) => p.code === "unreachable").length,
    1,
    "reachable nodes must not be flagged",
  );
});

Deno.test("unknown variables in every interpolated field and in collect", () => {
  const g: Any = base();
  g.nodes[0].prompt = "Hi {{who}}";
  g.nodes[0].transitions[0].say = "{{ what }}";
  g.nodes[0].transitions[0].collect = [{ name: "nope" }];
  g.nodes[1].say = "bye {{ghost}}";
  const ps = problems(g);
  assert.match(has(ps, "unknown_variable", "nodes[0].prompt").message, /who/);
  assert.match(has(ps, "unknown_variable", "nodes[0].transitions[0].say").message, /what/);
  assert.match(
    has(ps, "unknown_variable", "nodes[0].transitions[0].collect[0].name").message,
    /nope/,
  );
  assert.match(has(ps, "unknown_variable", "nodes[1].say").message, /ghost/);
});

Deno.test("malformed placeholder", () => {
  const g: Any = base();
  g.nodes[0].prompt = "Hi {{ two words }}";
  has(problems(g), "bad_placeholder", "nodes[0].prompt");
});

Deno.test("tool name clashes, end_call included", () => {
  const g: Any = base();
  g.nodes[0].transitions.push({ name: "go", description: "again", target: "b" });
  g.nodes[0].transitions.push({ name: END_CALL_TOOL, description: "mine", target: "b" });
  g.nodes[0].transitions.push({ name: "lookup", description: "x", target: "b" });
  g.workflow_tools = [
    { name: "lookup", description: "wf" },
    { name: "lookup", description: "wf again" },
    { name: END_CALL_TOOL, description: "wf end" },
  ];
  const ps = problems(g);
  assert.match(
    has(ps, "tool_clash", "nodes[0].transitions[1].name").message,
    /duplicate tool "go"/,
  );
  assert.match(has(ps, "tool_clash", "nodes[0].transitions[2].name").message, /reserved/);
  assert.match(has(ps, "tool_clash", "nodes[0].transitions[3].name").message, /workflow tool/);
  assert.match(has(ps, "tool_clash", "workflow_tools[1].name").message, /duplicate workflow tool/);
  has(ps, "tool_clash", "workflow_tools[2].name");
});

Deno.test("workflow tool restricted to other nodes does not clash; unknown node is reported", () => {
  const g: Any = base();
  g.nodes[0].transitions.push({ name: "lookup", description: "x", target: "b" });
  g.workflow_tools = [{ name: "lookup", description: "wf", nodes: ["b"] }];
  assert.ok(validateGraphSpec(g).ok);
  g.workflow_tools[0].nodes = ["b", "missing"];
  has(problems(g), "unknown_node", "workflow_tools[0].nodes[1]");
});

Deno.test("non-terminal node with no way out, and terminal-node rules", () => {
  const g: Any = base();
  g.nodes.push({ id: "stuck", prompt: "hmm", disposition: "x", say: "y" });
  g.nodes[0].transitions.push({ name: "to_stuck", description: "d", target: "stuck" });
  g.nodes[1].transitions = [{ name: "back", description: "d", target: "a" }];
  g.nodes.push({ id: "noprompt", transitions: [{ name: "t", description: "d", target: "b" }] });
  g.nodes[0].transitions.push({ name: "to_np", description: "d", target: "noprompt" });
  const ps = problems(g);
  has(ps, "dead_end", "nodes[2].transitions");
  has(ps, "terminal_only", "nodes[2].disposition");
  has(ps, "terminal_only", "nodes[2].say");
  has(ps, "terminal_transitions", "nodes[1].transitions");
  has(ps, "missing_prompt", "nodes[3].prompt");
});

Deno.test("schema problems carry paths: unknown keys, bad names, wrong types", () => {
  const g: Any = base();
  g.nodes[0].transitons = [];
  g.nodes[0].transitions[0].name = "has space";
  g.nodes[1].terminal = "yes";
  g.variables["bad-name"] = 1;
  const ps = problems(g);
  assert.match(has(ps, "schema", "nodes[0]").message, /transitons/);
  has(ps, "schema", "nodes[0].transitions[0].name");
  has(ps, "schema", "nodes[1].terminal");
  assert.match(has(ps, "schema", "variables.bad-name").message, /invalid key/);
  assert.ok(problems({}).some((p) => p.path === "nodes"), "missing nodes reported");
  assert.equal(problems("text")[0].path, "");
});

Deno.test("every problem is reported in one pass", () => {
  const g: Any = base();
  g.start = "nope";
  g.extra = true;
  g.nodes[0].transitions[0].target = "x";
  g.nodes[0].prompt = "{{zz}}";
  g.nodes.push({ id: "a", terminal: true });
  const codes = new Set(problems(g).map((p) => p.code));
  for (
    const c of ["schema", "unknown_start", "unknown_target", "unknown_variable", "duplicate_id"]
  ) {
    assert.ok(codes.has(c), `missing ${c} in ${[...codes]}`);
  }
});

Deno.test("YAML and JSON texts give the same spec; syntax errors are problems", () => {
  const json = JSON.stringify(base());
  const yaml = `start: a
variables:
  name: there
  size: { description: party size }
nodes:
  - id: a
    prompt: "Hi {{name}}"
    transitions:
      - { name: go, description: go on, target: b, say: "ok {{name}}" }
  - { id: b, terminal: true, disposition: done, say: "bye {{name}}" }
`;
  const a = parseGraphSpec(json);
  const b = parseGraphSpec(yaml);
  const c = parseGraphSpec(json, "yaml"); // YAML is a superset of JSON
  assert.ok(a.ok && b.ok && c.ok);
  assert.deepEqual(a.spec, b.spec);
  assert.deepEqual(a.spec, c.spec);
  const badJson = parseGraphSpec("{ nodes: [", "json");
  assert.ok(
    !badJson.ok && badJson.problems[0].code === "syntax" &&
      /json/.test(badJson.problems[0].message),
  );
  const badYaml = parseGraphSpec("nodes: [\n  - : :", "yaml");
  assert.ok(!badYaml.ok && badYaml.problems[0].code === "syntax");
  const auto = parseGraphSpec("{ nodes: [");
  assert.ok(!auto.ok && /json syntax/.test(auto.problems[0].message));
});

Deno.test("interpolate fills, formats and leaves malformed placeholders", () => {
  assert.equal(interpolate("Hi {{ name }}, {{name}}!", { name: "Ada" }), "Hi Ada, Ada!");
  assert.equal(
    interpolate("{{n}} / {{b}} / {{o}} / {{z}}", { n: 4, b: false, o: { a: 1 }, z: null }),
    '4 / false / {"a":1} / ',
  );
  assert.equal(interpolate("x{{missing}}y", {}), "xy");
  assert.equal(interpolate("x{{constructor}}y", {}), "xy");
  assert.equal(interpolate("{{ two words }} {{a}}", { a: "A" }), "{{ two words }} A");
  assert.equal(interpolate("no braces", { a: 1 }), "no braces");
  assert.equal(formatValue(undefined), "");
  assert.deepEqual(templatePlaceholders("{{a}} {{ b }} {{1x}}"), [
    { name: "a", valid: true },
    { name: "b", valid: true },
    { name: "1x", valid: false },
  ]);
  assert.equal(
    formatPath(["nodes", 2, "transitions", 0, "target"]),
    "nodes[2].transitions[0].target",
  );
});

Deno.test("docs/graph-spec.md shows examples/graph.yaml verbatim", async () => {
  const doc = await Deno.readTextFile("docs/graph-spec.md");
  const block = /```yaml\n([\s\S]*?)```/.exec(doc);
  assert.ok(block, "no yaml block in docs/graph-spec.md");
  assert.equal(block[1], await Deno.readTextFile("examples/graph.yaml"));
});
