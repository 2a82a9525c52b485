/** Shared fixtures of the server config tests: a fake config directory `cfg` and asserts. */
import assert from "node:assert/strict";
import {
  type ConfigResult,
  formatConfigProblems,
  parseConfigText,
  type Problem,
} from "../server/config.ts";

/** A valid two-node graph file, as `graph.yaml` in the fake directory `cfg`. */
export const GRAPH = `
start: a
variables: { caller_name: there }
nodes:
  - id: a
    prompt: Hi {{caller_name}}
    transitions: [{ name: go, description: go on, target: b }]
  - id: b
    terminal: true
`;

/** The same graph with a transition to a node that does not exist (nodes[0]...target). */
export const BAD_GRAPH = GRAPH.replace("target: b", "target: nowhere");

/** The fake directory: path -> text. */
export const FILES: Record<string, string> = {
  "cfg/graph.yaml": GRAPH,
  "cfg/bad_graph.yaml": BAD_GRAPH,
};

/** `readFile` over {@link FILES}; anything else is NotFound. */
export async function fakeRead(path: string): Promise<string> {
  await Promise.resolve();
  if (Object.hasOwn(FILES, path)) return FILES[path];
  throw new Deno.errors.NotFound(`No such file: ${path}`);
}

/** A minimal valid config; `extra` is appended as more YAML. */
export function yaml(
  extra = "",
  head = "agent: { graph: graph.yaml }\nproviders: { realtime: { name: echo } }",
): string {
  return `${head}\n${extra}`;
}

/** Validate config text as if it were a file in `cfg`. */
export async function parse(text: string, format: "yaml" | "json" = "yaml"): Promise<ConfigResult> {
  return await parseConfigText(text, format, "cfg", { readFile: fakeRead });
}

/** The problems of a config that must be refused. */
export async function problems(text: string, format: "yaml" | "json" = "yaml"): Promise<Problem[]> {
  const res = await parse(text, format);
  assert.equal(res.ok, false, "expected the config to be refused");
  return res.ok ? [] : res.problems;
}

/** The problem at `path`; fails listing every problem when there is none. */
export function at(ps: readonly Problem[], path: string, includes?: string): Problem {
  const p = ps.find((x) =>
    x.path === path && (includes === undefined || x.message.includes(includes))
  );
  assert.ok(p, `no problem at ${path} (${includes ?? ""}); got:\n${formatConfigProblems(ps)}`);
  return p;
}

/** The fields of a valid SIP trunk, as one line of YAML flow mapping. */
export const SIP_OK =
  'server: sip:trunk.example.com, login: bob, password_env: SIP_PASSWORD, caller_id: "+15551230000"';
