/**
 * GraphBrain: an {@link AgentBrain} that walks a validated {@link GraphSpec}.
 *
 * Decisions (docs/graph-spec.md, "Runtime behaviour"):
 * - Tools at a non-terminal node: its transitions, then the workflow tools offered there, then
 *   `end_call` (optional string params `disposition` and `reason`). A terminal node offers none.
 * - A transition into a non-terminal node returns `transition` (interpolated prompt, the new
 *   node's tools, the interpolated `say` of the transition, the node id).
 * - A transition into a terminal node returns `end` with the terminal node's `disposition` and a
 *   `say` (the transition's, else the terminal node's): the goodbye to speak before hanging up.
 * - `end_call` returns `end` with the `disposition` argument, if the model gave one.
 * - A workflow tool returns `stay` with no result: the embedder (session source) answers it.
 * - An unknown tool, bad collected arguments, or any call after the end return `stay` with
 *   `{error}` telling the model what went wrong; the node does not change.
 *
 * The whole state is `(nodeId, collectedVars)`, so a stateless server can rebuild a brain per
 * request with {@link GraphBrain.at}.
 *
 * @example
 * ```ts
 * import { GraphBrain, parseGraphSpec } from "@flowcat/flowcat/agent";
 * const res = parseGraphSpec(await Deno.readTextFile("examples/graph.yaml"));
 * if (!res.ok) throw new Error("bad graph");
 * const brain = new GraphBrain(res.spec, { vars: { caller_name: "Ada" } });
 * const action = brain.onToolCall("wants_booking", {});
 * ```
 * @module
 */

import type { AgentBrain, BrainAction, ToolDecl } from "../seams.ts";
import { FlowcatError } from "../errors.ts";
import { interpolate } from "./interpolate.ts";
import {
  END_CALL_TOOL,
  type GraphCollect,
  type GraphNode,
  type GraphSpec,
  type GraphTransition,
  validateGraphSpec,
} from "./graph_spec.ts";
import { formatProblems } from "./problems.ts";

/** `end` with the text to say before hanging up (a superset of the seam's end action). */
export type EndAction = { type: "end"; disposition?: string; say?: string };

/** What {@link GraphBrain.onToolCall} returns: a {@link BrainAction} whose `end` may carry `say`. */
export type GraphBrainAction = Exclude<BrainAction, { type: "end" }> | EndAction;

/** Declaration of the `end_call` tool offered at every non-terminal node. */
export const END_CALL_DECL: ToolDecl = Object.freeze({
  name: END_CALL_TOOL,
  description: "End the call. Use it when the conversation is over or the caller wants to hang up.",
  params: Object.freeze({
    type: "object",
    properties: {
      disposition: {
        type: "string",
        description: "Outcome of the call, e.g. completed or not_interested.",
      },
      reason: { type: "string", description: "Short reason for ending the call." },
    },
  }),
}) as ToolDecl;

/** Options of a {@link GraphBrain}. */
export interface GraphBrainOptions {
  /** Seed or already collected variables; they override the spec's defaults. */
  vars?: Record<string, unknown>;
  /** Node to start at; defaults to the spec's `start`. */
  nodeId?: string;
}

interface NodeIndex {
  node: GraphNode;
  tools: readonly ToolDecl[];
  transitions: ReadonlyMap<string, GraphTransition>;
  workflow: ReadonlySet<string>;
}

interface GraphIndex {
  nodes: ReadonlyMap<string, NodeIndex>;
  defaults: Readonly<Record<string, unknown>>;
}

// A stateless server builds a brain per request; index each spec once.
const indexCache = new WeakMap<GraphSpec, GraphIndex>();

function transitionParams(collect: readonly GraphCollect[]): Record<string, unknown> {
  if (collect.length === 0) return { type: "object", properties: {} };
  const properties: Record<string, unknown> = {};
  for (const c of collect) {
    properties[c.name] = c.description
      ? { type: c.type, description: c.description }
      : { type: c.type };
  }
  const required = collect.filter((c) => c.required).map((c) => c.name);
  return { type: "object", properties, required, additionalProperties: false };
}

function indexSpec(spec: GraphSpec): GraphIndex {
  const cached = indexCache.get(spec);
  if (cached) return cached;
  const defaults: Record<string, unknown> = {};
  for (const [name, decl] of Object.entries(spec.variables)) {
    if (decl.default !== undefined) defaults[name] = decl.default;
  }
  const nodes = new Map<string, NodeIndex>();
  for (const node of spec.nodes) {
    if (nodes.has(node.id)) continue;
    const transitions = new Map<string, GraphTransition>();
    const workflow = new Set<string>();
    const tools: ToolDecl[] = [];
    if (!node.terminal) {
      for (const t of node.transitions) {
        transitions.set(t.name, t);
        tools.push({
          name: t.name,
          description: t.description,
          params: transitionParams(t.collect),
        });
      }
      for (const w of spec.workflow_tools) {
        if (w.nodes !== undefined && !w.nodes.includes(node.id)) continue;
        workflow.add(w.name);
        tools.push({ name: w.name, description: w.description, params: w.params });
      }
      tools.push(END_CALL_DECL);
    }
    nodes.set(node.id, { node, tools, transitions, workflow });
  }
  const index = { nodes, defaults };
  indexCache.set(spec, index);
  return index;
}

function argProblem(c: GraphCollect, value: unknown): string | undefined {
  if (value === undefined || value === null) return c.required ? `${c.name}: required` : undefined;
  const ok = c.type === "string"
    ? typeof value === "string"
    : c.type === "boolean"
    ? typeof value === "boolean"
    : c.type === "integer"
    ? Number.isInteger(value)
    : typeof value === "number" && Number.isFinite(value);
  return ok ? undefined : `${c.name}: expected ${c.type}`;
}

/** An {@link AgentBrain} driven by a graph spec. Synchronous and pure: no I/O. */
export class GraphBrain implements AgentBrain {
  readonly #index: GraphIndex;
  #node: NodeIndex;
  #vars: Record<string, unknown>;
  #finished: boolean;
  #disposition: string | undefined;

  /**
   * Start a brain on a validated spec (at `options.nodeId`, else the spec's start node). The
   * spec is indexed once and cached, so treat it as immutable.
   */
  constructor(spec: GraphSpec, options: GraphBrainOptions = {}) {
    this.#index = indexSpec(spec);
    const id = options.nodeId ?? spec.start;
    const node = id === undefined ? undefined : this.#index.nodes.get(id);
    if (!node) throw new FlowcatError("config", `graph: unknown node "${id ?? "(no start)"}"`);
    this.#node = node;
    this.#vars = { ...options.vars };
    this.#finished = node.node.terminal;
    this.#disposition = node.node.terminal ? node.node.disposition : undefined;
  }

  /**
   * Rebuild a brain at `nodeId` with `vars` already collected (stateless servers).
   *
   * @example
   * ```ts
   * import { GraphBrain, type GraphSpec } from "@flowcat/flowcat/agent";
   * declare const spec: GraphSpec;
   * const brain = GraphBrain.at(spec, "collect_details", { caller_name: "Ada" });
   * ```
   */
  static at(spec: GraphSpec, nodeId: string, vars: Record<string, unknown> = {}): GraphBrain {
    return new GraphBrain(spec, { nodeId, vars });
  }

  /** Validate an unparsed spec object and start a brain; throws every problem in one error. */
  static fromInput(input: unknown, options: GraphBrainOptions = {}): GraphBrain {
    const res = validateGraphSpec(input);
    if (!res.ok) {
      throw new FlowcatError("config", `graph spec is invalid:\n${formatProblems(res.problems)}`);
    }
    return new GraphBrain(res.spec, options);
  }

  /** The current node's prompt with variables interpolated ("" at a terminal node without one). */
  systemPrompt(): string {
    return interpolate(this.#node.node.prompt ?? "", this.#scope());
  }

  /** Tools the model may call at the current node (a fresh array). */
  tools(): ToolDecl[] {
    return [...this.#node.tools];
  }

  /** Id of the current node. */
  currentNodeId(): string {
    return this.#node.node.id;
  }

  /** True once an `end` was returned (or the brain was built at a terminal node). */
  isFinished(): boolean {
    return this.#finished;
  }

  /** Seed and collected variables (not the spec's defaults), as a copy. */
  collectedVars(): Record<string, unknown> {
    return { ...this.#vars };
  }

  /** The disposition recorded by the end, if any. */
  disposition(): string | undefined {
    return this.#disposition;
  }

  /** Decide on a model tool call; see the module doc for the rules. */
  onToolCall(name: string, args: Record<string, unknown>): GraphBrainAction {
    if (this.#finished) return { type: "stay", result: { error: "the call has ended" } };
    if (name === END_CALL_TOOL) {
      const d = args?.disposition;
      this.#finished = true;
      this.#disposition = typeof d === "string" && d !== "" ? d : undefined;
      return this.#disposition === undefined
        ? { type: "end" }
        : { type: "end", disposition: this.#disposition };
    }
    const transition = this.#node.transitions.get(name);
    if (transition) return this.#move(transition, args ?? {});
    if (this.#node.workflow.has(name)) return { type: "stay" };
    const available = this.#node.tools.map((t) => t.name).join(", ");
    return {
      type: "stay",
      result: {
        error:
          `unknown tool "${name}" at node "${this.currentNodeId()}"; available tools: ${available}`,
      },
    };
  }

  #move(t: GraphTransition, args: Record<string, unknown>): GraphBrainAction {
    const bad = t.collect.map((c) => argProblem(c, args[c.name])).filter((p) => p !== undefined);
    if (bad.length > 0) {
      return {
        type: "stay",
        result: { error: `invalid arguments for ${t.name}: ${bad.join("; ")}` },
      };
    }
    for (const c of t.collect) {
      const v = args[c.name];
      if (v !== undefined && v !== null) this.#vars[c.name] = v;
    }
    // Validation guarantees the target exists.
    this.#node = this.#index.nodes.get(t.target)!;
    const target = this.#node.node;
    const scope = this.#scope();
    if (target.terminal) {
      this.#finished = true;
      this.#disposition = target.disposition;
      const sayText = t.say ?? target.say;
      const end: EndAction = { type: "end" };
      if (target.disposition !== undefined) end.disposition = target.disposition;
      if (sayText !== undefined) end.say = interpolate(sayText, scope);
      return end;
    }
    const action: GraphBrainAction = {
      type: "transition",
      systemPrompt: interpolate(target.prompt ?? "", scope),
      tools: this.tools(),
      nodeId: target.id,
    };
    if (t.say !== undefined) action.say = interpolate(t.say, scope);
    return action;
  }

  #scope(): Record<string, unknown> {
    return { ...this.#index.defaults, ...this.#vars };
  }
}
