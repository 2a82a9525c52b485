/**
 * A brain with more tools than its own: tools from elsewhere (MCP servers) offered to the model
 * on every node, next to the node's tools, and answered without a move. The brain's own tools
 * win a name clash: a node's tool is what the graph means by that name.
 * @module
 */

import type { AgentBrain, BrainAction, ToolDecl } from "../seams.ts";

/** Tools beside the brain's, with what answers them. */
export interface ExtraTools {
  /** The tools offered now. */
  tools(): ToolDecl[];
  /**
   * Answer a call of one of {@link tools}; the value goes to the model as the tool's result.
   * Never rejects: a failure is a result such as `{ error: "..." }` the model can read.
   */
  call(name: string, args: Record<string, unknown>): Promise<unknown>;
}

/** `own` followed by the extra tools whose names `own` does not use. */
function merged(own: readonly ToolDecl[], extra: ExtraTools): ToolDecl[] {
  const names = new Set(own.map((t) => t.name));
  return [...own, ...extra.tools().filter((t) => !names.has(t.name))];
}

/**
 * `brain` offering `extra`'s tools too: in its tools, in every transition's tools, and answering
 * their calls with a `stay` holding the result.
 *
 * @example
 * ```ts
 * import { withExtraTools } from "@flowcat/flowcat/agent";
 * import type { AgentBrain } from "@flowcat/flowcat";
 * declare const brain: AgentBrain;
 * const clock = {
 *   tools: () => [{ name: "now", description: "The time", params: { type: "object" } }],
 *   call: () => Promise.resolve(new Date().toISOString()),
 * };
 * const both = withExtraTools(brain, clock); // both.tools() ends with `now`
 * ```
 */
export function withExtraTools(brain: AgentBrain, extra: ExtraTools): AgentBrain {
  const withTools = (action: BrainAction): BrainAction =>
    action.type === "transition" ? { ...action, tools: merged(action.tools, extra) } : action;
  return {
    systemPrompt: () => brain.systemPrompt(),
    tools: () => merged(brain.tools(), extra),
    currentNodeId: () => brain.currentNodeId(),
    isFinished: () => brain.isFinished(),
    collectedVars: () => brain.collectedVars(),
    async onToolCall(name, args) {
      const own = brain.tools().some((t) => t.name === name);
      if (!own && extra.tools().some((t) => t.name === name)) {
        return { type: "stay", result: await extra.call(name, args) };
      }
      return withTools(await brain.onToolCall(name, args));
    },
  };
}
