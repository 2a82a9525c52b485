/**
 * Cross-reference checks of a graph spec: the problems a schema cannot see. They read the raw
 * document defensively (skipping parts of the wrong shape, which the schema reports), so one
 * validation pass reports everything.
 * @module
 */

import type { Problem } from "./problems.ts";
import { templatePlaceholders, VARIABLE_NAME_RE } from "./interpolate.ts";

/** Name of the tool every non-terminal node offers to end the call. */
export const END_CALL_TOOL = "end_call";
const END_CALL = END_CALL_TOOL;

type Rec = Record<string, unknown>;

function rec(v: unknown): Rec | undefined {
  return typeof v === "object" && v !== null && !Array.isArray(v) ? v as Rec : undefined;
}

function list(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

function str(v: unknown): string | undefined {
  return typeof v === "string" ? v : undefined;
}

function quoteList(names: Iterable<string>): string {
  const all = [...names].map((n) => `"${n}"`);
  return all.length === 0 ? "(none)" : all.join(", ");
}

interface NodeInfo {
  index: number;
  id: string;
  terminal: boolean;
  targets: string[];
}

/** Every cross-reference problem in a raw graph spec document. */
export function semanticProblems(input: unknown): Problem[] {
  const doc = rec(input);
  if (!doc) return [];
  const problems: Problem[] = [];
  const add = (path: string, code: string, message: string) =>
    problems.push({ path, message, code });

  const variables = new Set(
    Object.keys(rec(doc.variables) ?? {}).filter((k) => VARIABLE_NAME_RE.test(k)),
  );
  const checkTemplate = (path: string, text: unknown) => {
    const t = str(text);
    if (t === undefined) return;
    for (const ph of templatePlaceholders(t)) {
      if (!ph.valid) {
        add(path, "bad_placeholder", `malformed placeholder "{{${ph.name}}}"`);
      } else if (!variables.has(ph.name)) {
        add(
          path,
          "unknown_variable",
          `unknown variable "{{${ph.name}}}" (declared: ${quoteList(variables)})`,
        );
      }
    }
  };

  // Pass 1: node ids, duplicates.
  const nodes: NodeInfo[] = [];
  const byId = new Map<string, NodeInfo>();
  list(doc.nodes).forEach((raw, index) => {
    const n = rec(raw);
    const id = str(n?.id);
    if (!n || id === undefined) return;
    const info: NodeInfo = { index, id, terminal: n.terminal === true, targets: [] };
    nodes.push(info);
    const first = byId.get(id);
    if (first) {
      add(
        `nodes[${index}].id`,
        "duplicate_id",
        `duplicate node id "${id}" (first at nodes[${first.index}])`,
      );
    } else byId.set(id, info);
  });

  // Workflow tools: where each is offered, duplicates, clashes with end_call, unknown nodes.
  const workflowAt = new Map<string, string[]>(); // tool name -> node ids ("*" = every node)
  list(doc.workflow_tools).forEach((raw, i) => {
    const t = rec(raw);
    const name = str(t?.name);
    if (!t || name === undefined) return;
    const path = `workflow_tools[${i}]`;
    if (name === END_CALL) {
      add(`${path}.name`, "tool_clash", `tool name "${name}" is reserved for ending the call`);
    }
    if (workflowAt.has(name)) {
      add(`${path}.name`, "tool_clash", `duplicate workflow tool "${name}"`);
    }
    const at: string[] = [];
    if (Array.isArray(t.nodes)) {
      t.nodes.forEach((nid, j) => {
        if (typeof nid !== "string") return;
        if (!byId.has(nid)) add(`${path}.nodes[${j}]`, "unknown_node", `unknown node "${nid}"`);
        at.push(nid);
      });
    } else at.push("*");
    if (!workflowAt.has(name)) workflowAt.set(name, at);
  });
  const workflowNamesAt = (id: string) =>
    [...workflowAt].filter(([, at]) => at.includes("*") || at.includes(id)).map(([n]) => n);

  // Pass 2: each node's own fields and its transitions.
  for (const info of nodes) {
    const n = rec(list(doc.nodes)[info.index])!;
    const path = `nodes[${info.index}]`;
    checkTemplate(`${path}.prompt`, n.prompt);
    checkTemplate(`${path}.say`, n.say);
    const transitions = list(n.transitions);
    if (info.terminal) {
      if (transitions.length > 0) {
        add(
          `${path}.transitions`,
          "terminal_transitions",
          `terminal node "${info.id}" cannot have transitions`,
        );
      }
    } else {
      if (str(n.prompt) === undefined) {
        add(`${path}.prompt`, "missing_prompt", `node "${info.id}" needs a prompt`);
      }
      if (n.disposition !== undefined) {
        add(
          `${path}.disposition`,
          "terminal_only",
          "disposition is only allowed on terminal nodes",
        );
      }
      if (n.say !== undefined) {
        add(
          `${path}.say`,
          "terminal_only",
          "say on a node is only allowed on terminal nodes; put it on the transition",
        );
      }
      if (
        (n.transitions === undefined || Array.isArray(n.transitions)) && transitions.length === 0
      ) {
        add(
          `${path}.transitions`,
          "dead_end",
          `node "${info.id}" is not terminal and has no transition (add one, or set terminal: true)`,
        );
      }
    }
    const seen = new Map<string, number>();
    const workflowHere = new Set(info.terminal ? [] : workflowNamesAt(info.id));
    transitions.forEach((raw, ti) => {
      const t = rec(raw);
      if (!t) return;
      const tpath = `${path}.transitions[${ti}]`;
      const name = str(t.name);
      if (name !== undefined) {
        if (name === END_CALL) {
          add(`${tpath}.name`, "tool_clash", `tool name "${name}" is reserved for ending the call`);
        } else if (seen.has(name)) {
          add(
            `${tpath}.name`,
            "tool_clash",
            `duplicate tool "${name}" in node "${info.id}" (first at transitions[${
              seen.get(name)
            }])`,
          );
        } else if (workflowHere.has(name)) {
          add(
            `${tpath}.name`,
            "tool_clash",
            `tool "${name}" clashes with the workflow tool of the same name`,
          );
        }
        if (!seen.has(name)) seen.set(name, ti);
      }
      const target = str(t.target);
      if (target !== undefined) {
        if (byId.has(target)) info.targets.push(target);
        else {add(
            `${tpath}.target`,
            "unknown_target",
            `unknown target node "${target}" (nodes: ${quoteList(byId.keys())})`,
          );}
      }
      checkTemplate(`${tpath}.say`, t.say);
      const collected = new Set<string>();
      list(t.collect).forEach((rawC, ci) => {
        const cname = str(rec(rawC)?.name);
        if (cname === undefined) return;
        const cpath = `${tpath}.collect[${ci}].name`;
        if (collected.has(cname)) {
          add(cpath, "duplicate_collect", `variable "${cname}" is collected twice`);
        }
        collected.add(cname);
        if (VARIABLE_NAME_RE.test(cname) && !variables.has(cname)) {
          add(
            cpath,
            "unknown_variable",
            `unknown variable "${cname}" (declare it under variables)`,
          );
        }
      });
    });
  }

  // Start node and reachability.
  const start = str(doc.start);
  if (doc.start === undefined) {
    add("start", "no_start", `no start node: set start to one of ${quoteList(byId.keys())}`);
  } else if (start !== undefined && !byId.has(start)) {
    add(
      "start",
      "unknown_start",
      `unknown start node "${start}" (nodes: ${quoteList(byId.keys())})`,
    );
  } else if (start !== undefined) {
    if (byId.get(start)!.terminal) {
      add("start", "start_terminal", `start node "${start}" is terminal`);
    }
    const reached = new Set([start]);
    const queue = [start];
    while (queue.length > 0) {
      for (const next of byId.get(queue.pop()!)!.targets) {
        if (!reached.has(next)) {
          reached.add(next);
          queue.push(next);
        }
      }
    }
    for (const info of byId.values()) {
      if (!reached.has(info.id)) {
        add(
          `nodes[${info.index}]`,
          "unreachable",
          `node "${info.id}" cannot be reached from start node "${start}"`,
        );
      }
    }
  }
  return problems;
}
