/**
 * The graph spec (`graph_spec`): an agent as nodes joined by transitions. This module holds the
 * zod schema, the parsed types, and {@link validateGraphSpec} / {@link parseGraphSpec}, which
 * report every problem at once before a call starts. Field reference: docs/graph-spec.md.
 *
 * @example
 * ```ts
 * import { parseGraphSpec } from "@flowcat/flowcat/agent";
 * const res = parseGraphSpec(await Deno.readTextFile("examples/graph.yaml"));
 * if (!res.ok) console.error(res.problems);
 * ```
 * @module
 */

import { z } from "npm:zod@^4.6.7";
import { parse as parseYaml } from "npm:yaml@^2.9.1";
import { type Problem, type Validator, zodProblems } from "./problems.ts";
import { semanticProblems } from "./graph_checks.ts";
import { VARIABLE_NAME_RE } from "./interpolate.ts";

// Defined beside the checks (which need it) so the two modules do not import each other.
export { END_CALL_TOOL } from "./graph_checks.ts";

/** Pattern a tool name must match (the strictest common model-API rule). */
export const TOOL_NAME_RE: RegExp = /^[A-Za-z0-9_-]{1,64}$/;

/** Pattern a node id must match. */
export const NODE_ID_RE: RegExp = /^[A-Za-z0-9_.:-]{1,128}$/;

const toolName = z.string().regex(TOOL_NAME_RE, "tool name must be 1-64 of A-Z a-z 0-9 _ -");
const nodeId = z.string().regex(NODE_ID_RE, "node id must be 1-128 of A-Z a-z 0-9 _ . : -");
const variableName = z.string().regex(
  VARIABLE_NAME_RE,
  "variable name must match [A-Za-z_][A-Za-z0-9_]*",
);

const scalar = z.union([z.string(), z.number(), z.boolean(), z.null()]);

/** A declared variable: a bare scalar is shorthand for `{default: <scalar>}`. */
const variableSchema = z.union([
  scalar.transform((value) => ({
    default: value as unknown,
    description: undefined as string | undefined,
  })),
  z.strictObject({ default: z.json().optional(), description: z.string().optional() }),
]);

/** A value a transition collects from the model's tool arguments. */
const collectSchema = z.strictObject({
  name: variableName,
  type: z.enum(["string", "number", "integer", "boolean"]).default("string"),
  description: z.string().optional(),
  required: z.boolean().default(true),
});

/** An edge out of a node; offered to the model as a tool. */
const transitionSchema = z.strictObject({
  name: toolName,
  description: z.string().min(1, "description must not be empty"),
  target: nodeId,
  say: z.string().optional(),
  collect: z.array(collectSchema).default([]),
});

const nodeSchema = z.strictObject({
  id: nodeId,
  prompt: z.string().optional(),
  transitions: z.array(transitionSchema).default([]),
  terminal: z.boolean().default(false),
  disposition: z.string().min(1).optional(),
  say: z.string().optional(),
});

/** JSON-schema `object` parameters of a workflow tool. */
const paramsSchema = z.looseObject({ type: z.literal("object") });

const workflowToolSchema = z.strictObject({
  name: toolName,
  description: z.string().min(1, "description must not be empty"),
  params: paramsSchema.default({ type: "object", properties: {} }),
  nodes: z.array(nodeId).optional(),
});

const graphSpecZod = z.strictObject({
  version: z.literal(1).optional(),
  start: nodeId.optional(),
  variables: z.record(variableName, variableSchema).default({}),
  nodes: z.array(nodeSchema).min(1, "a graph needs at least one node"),
  workflow_tools: z.array(workflowToolSchema).default([]),
});

/** One collected value of a {@link GraphTransition}: a tool argument stored as a variable. */
export interface GraphCollect {
  /** Variable the value is stored in (and the tool argument's name). */
  name: string;
  /** JSON type the model must give; `string` when left out. */
  type: "string" | "number" | "integer" | "boolean";
  /** What the value means, shown to the model in the tool's parameters. */
  description?: string;
  /** Whether the model must give the value; true when left out. */
  required: boolean;
}

/** One transition of a {@link GraphNode}: an edge offered to the model as a tool. */
export interface GraphTransition {
  /** Tool name the model calls to take this edge. */
  name: string;
  /** When to take the edge, shown to the model as the tool's description. */
  description: string;
  /** Id of the node the edge leads to. */
  target: string;
  /** Text spoken when the edge is taken, before the next node's prompt applies. */
  say?: string;
  /** Values the model must give as tool arguments when it takes the edge. */
  collect: GraphCollect[];
}

/** One node of a {@link GraphSpec}: a prompt and the transitions out of it. */
export interface GraphNode {
  /** Unique id of the node, used by transition targets and `start`. */
  id: string;
  /** System prompt while the call is on this node (may use `{{variables}}`). */
  prompt?: string;
  /** Edges out of the node. */
  transitions: GraphTransition[];
  /** Whether reaching the node ends the call. */
  terminal: boolean;
  /** Call outcome recorded when the call ends on this node. */
  disposition?: string;
  /** Text spoken when the call reaches this node. */
  say?: string;
}

/** One workflow tool of a {@link GraphSpec}: a tool that runs without changing node. */
export interface GraphWorkflowTool {
  /** Tool name the model calls. */
  name: string;
  /** What the tool does, shown to the model. */
  description: string;
  /** JSON-schema `object` of the tool's parameters. */
  params: { type: "object"; [key: string]: unknown };
  /** Ids of the nodes that offer the tool; every node when left out. */
  nodes?: string[];
}

/** A validated graph spec, defaults filled in. Make one with {@link validateGraphSpec}. */
export interface GraphSpec {
  /** Spec format version; only 1 exists. */
  version?: 1;
  /** Id of the first node; the first listed node when left out. */
  start?: string;
  /** Declared variables with their default values and descriptions. */
  variables: Record<string, { default?: unknown; description?: string }>;
  /** The nodes of the graph (at least one). */
  nodes: GraphNode[];
  /** Tools offered on nodes without leaving them. */
  workflow_tools: GraphWorkflowTool[];
}

/** What a graph spec document may look like before defaults are applied. */
export interface GraphSpecInput {
  /** Spec format version; only 1 exists. */
  version?: 1;
  /** Id of the first node; the first listed node when left out. */
  start?: string;
  /** Declared variables: a bare scalar is shorthand for `{default: <scalar>}`. */
  variables?: Record<
    string,
    string | number | boolean | null | { default?: unknown; description?: string }
  >;
  /** The nodes of the graph (at least one); see {@link GraphNode} for the fields. */
  nodes: (Omit<GraphNode, "transitions" | "terminal"> & {
    transitions?: (Omit<GraphTransition, "collect"> & {
      collect?: (Omit<GraphCollect, "type" | "required"> & Partial<GraphCollect>)[];
    })[];
    terminal?: boolean;
  })[];
  /** Tools offered on nodes without leaving them; see {@link GraphWorkflowTool}. */
  workflow_tools?: (Omit<GraphWorkflowTool, "params"> & Partial<GraphWorkflowTool>)[];
}

/**
 * Schema of a graph spec (structure only; cross-references are checked separately). A zod
 * schema underneath; typed as a {@link Validator} so zod stays out of the public API.
 */
export const graphSpecSchema: Validator<GraphSpec> = graphSpecZod satisfies z.ZodType<
  GraphSpec,
  GraphSpecInput
>;

/** Outcome of validation: the spec, or every problem found. */
export type GraphSpecResult =
  | { ok: true; spec: GraphSpec }
  | { ok: false; problems: Problem[] };

/**
 * Validate a graph spec object (already parsed from YAML or JSON). Reports every problem at
 * once: schema errors, then unknown targets, duplicate ids, missing or unknown start node,
 * unreachable nodes, unknown `{{variables}}`, tool-name clashes (with `end_call` too) and
 * non-terminal nodes with no transition.
 *
 * @example
 * ```ts
 * const res = validateGraphSpec({ start: "a", nodes: [{ id: "a", prompt: "Hi", transitions: [] }] });
 * // res.ok === false: nodes[0].transitions: node "a" is not terminal and has no transition
 * ```
 */
export function validateGraphSpec(input: unknown): GraphSpecResult {
  const parsed = graphSpecSchema.safeParse(input);
  const problems = parsed.success ? [] : zodProblems(parsed.error);
  // Cross-reference checks read the raw input defensively, so they run even when the schema
  // failed and the user sees everything in one pass.
  problems.push(...semanticProblems(input));
  if (problems.length > 0 || !parsed.success) return { ok: false, problems };
  return { ok: true, spec: parsed.data };
}

/** Text format of a graph spec document. */
export type GraphSpecFormat = "yaml" | "json";

/**
 * Parse YAML or JSON text and validate it. Without `format`, text whose first non-blank
 * character is `{` is read as JSON (for its sharper error messages), anything else as YAML.
 */
export function parseGraphSpec(text: string, format?: GraphSpecFormat): GraphSpecResult {
  const fmt = format ?? (text.trimStart().startsWith("{") ? "json" : "yaml");
  let doc: unknown;
  try {
    doc = fmt === "json" ? JSON.parse(text) : parseYaml(text);
  } catch (err) {
    const msg = err instanceof Error ? err.message : String(err);
    if (/LOG_TOKENS|LOG_STREAM/.test(msg)) {
      // npm:yaml reads these two debug variables while parsing; without env permission Deno throws.
      const hint =
        "YAML parsing needs `--ignore-env=LOG_TOKENS,LOG_STREAM` (npm:yaml reads them); " +
        "or write the graph as JSON";
      return { ok: false, problems: [{ path: "", message: hint, code: "permission" }] };
    }
    return {
      ok: false,
      problems: [{ path: "", message: `${fmt} syntax error: ${msg}`, code: "syntax" }],
    };
  }
  return validateGraphSpec(doc);
}
