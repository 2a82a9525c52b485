/**
 * {@link staticBrain}: a one-node {@link AgentBrain} with a fixed prompt that ends the call
 * when the model calls `end_call`, for an agent that needs no conversation graph.
 *
 * @example
 * ```ts
 * const brain = staticBrain("You are the front desk. Help briefly, then call end_call.");
 * brain.tools().map((t) => t.name); // ["end_call"]
 * ```
 * @module
 */

import type { AgentBrain, BrainAction, ToolDecl } from "./seams.ts";

/** The tool a {@link staticBrain} ends the call with. */
const END_CALL: ToolDecl = Object.freeze({
  name: "end_call",
  description: "End the call when the caller is done.",
  params: Object.freeze({
    type: "object",
    properties: { disposition: { type: "string", description: "Outcome of the call." } },
  }),
});

/** Options of {@link staticBrain}. */
export interface StaticBrainOptions {
  /** More tools offered beside `end_call` (answered by `onTool`). */
  tools?: readonly ToolDecl[];
  /**
   * Answers a call of one of `tools`; the result goes back to the model. Default: an error
   * saying there is no such tool.
   */
  onTool?: (name: string, args: Record<string, unknown>) => unknown | Promise<unknown>;
  /** The node id reported for the one node (default `"main"`). */
  nodeId?: string;
}

/**
 * A brain with one node: `prompt` is the system prompt, the tools are `end_call` plus
 * `opts.tools`. `end_call` ends the call with the disposition the model gives (default
 * `completed`), which is then the collected `disposition` variable.
 */
export function staticBrain(prompt: string, opts: StaticBrainOptions = {}): AgentBrain {
  const extra = opts.tools ?? [];
  const nodeId = opts.nodeId ?? "main";
  const vars: Record<string, unknown> = {};
  let finished = false;
  const answer = async (name: string, args: Record<string, unknown>): Promise<BrainAction> => {
    const result = opts.onTool === undefined
      ? { error: `no tool ${name}` }
      : await opts.onTool(name, args);
    return { type: "stay", result };
  };
  return {
    systemPrompt: () => prompt,
    tools: () => finished ? [] : [END_CALL, ...extra],
    currentNodeId: () => nodeId,
    onToolCall(name, args) {
      if (finished) return { type: "stay", result: { error: "the call is over" } };
      if (name === END_CALL.name) {
        finished = true;
        const disposition = typeof args.disposition === "string" ? args.disposition : "completed";
        vars.disposition = disposition;
        return { type: "end", disposition };
      }
      if (!extra.some((t) => t.name === name)) {
        return { type: "stay", result: { error: `no tool ${name}` } };
      }
      return answer(name, args);
    },
    isFinished: () => finished,
    collectedVars: () => ({ ...vars }),
  };
}
