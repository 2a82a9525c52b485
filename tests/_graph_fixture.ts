/** A three-node graph shared by the call tests: hello -(go_on, says "Moving on.")-> second -> done. */

import { GraphBrain } from "../core/agent/graph_brain.ts";
import { parseGraphSpec } from "../core/agent/graph_spec.ts";

/** The graph spec text. */
export const MOVING_ON_GRAPH = `
version: 1
start: hello
nodes:
  - id: hello
    prompt: Greet the caller.
    transitions:
      - name: go_on
        description: Move on.
        target: second
        say: Moving on.
  - id: second
    prompt: Second step, talk to {{who}}.
    transitions:
      - name: finish
        description: Wrap up.
        target: done
  - id: done
    prompt: Say goodbye.
    terminal: true
variables:
  who: "Sam"
`;

/** A fresh brain on {@link MOVING_ON_GRAPH}. */
export function movingOnBrain(): GraphBrain {
  const r = parseGraphSpec(MOVING_ON_GRAPH);
  if (!r.ok) throw new Error(JSON.stringify(r.problems));
  return new GraphBrain(r.spec);
}

/** The smallest graph a server config can carry: hello -(bye)-> end, as a config object. */
export const HELLO_BYE_GRAPH = {
  version: 1,
  start: "hello",
  nodes: [
    {
      id: "hello",
      prompt: "Say hi.",
      transitions: [{ name: "bye", description: "Done.", target: "end" }],
    },
    { id: "end", prompt: "Say bye.", terminal: true },
  ],
};

/**
 * A graph whose node `a` offers a `done` transition (the echo model's key 1) and a
 * `transfer_call` pinned to `target` (key 2).
 */
export function pinnedTransferGraph(target: string): Record<string, unknown> {
  return {
    version: 1,
    start: "a",
    nodes: [
      {
        id: "a",
        prompt: "Help, or transfer to the desk.",
        transitions: [{ name: "done", description: "Done.", target: "c" }],
      },
      { id: "c", prompt: "Bye.", terminal: true },
    ],
    workflow_tools: [{
      name: "transfer_call",
      description: "Transfer the caller to the front desk.",
      params: {
        type: "object",
        properties: { target: { type: "string", enum: [target], default: target } },
      },
      nodes: ["a"],
    }],
  };
}

/** A graph that waits at `dial` for the answering-machine decision: `voicemail` or `talk`. */
export const AMD_GRAPH: Record<string, unknown> = {
  version: 1,
  start: "dial",
  nodes: [
    {
      id: "dial",
      prompt: "Wait for the callee.",
      transitions: [
        { name: "answered_by_machine", description: "A machine answered.", target: "voicemail" },
        { name: "answered_by_human", description: "A person answered.", target: "talk" },
      ],
    },
    {
      id: "voicemail",
      prompt: "Leave the message.",
      transitions: [{ name: "done", description: "Left.", target: "bye" }],
    },
    {
      id: "talk",
      prompt: "Talk.",
      transitions: [{ name: "done", description: "Done.", target: "bye" }],
    },
    { id: "bye", prompt: "Bye.", terminal: true },
  ],
};
