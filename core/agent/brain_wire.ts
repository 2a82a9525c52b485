/**
 * The remote-brain HTTP contract on the wire: zod schemas of the bodies of `POST /session` and
 * `POST /tool-call` (snake_case, as the contract gives them) and conversions to and from
 * {@link BrainAction}. Used by RemoteBrain (client) and server/brain_server.ts (reference
 * server). Contract and decisions: docs/remote-brain.md.
 * @module
 */

import { z } from "zod";
import type { BrainAction, ToolDecl } from "../seams.ts";

const jsonObject = z.record(z.string(), z.unknown());

/** A tool declaration on the wire. Unknown extra fields are allowed and dropped. */
export const wireToolSchema = z.object({
  name: z.string().min(1),
  description: z.string(),
  params: jsonObject,
});

/** Body of `POST /session`. */
export const sessionRequestSchema = z.object({
  brain_config: jsonObject,
  provider: z.string(),
});
/** Body of `POST /session`. */
export type SessionRequest = z.infer<typeof sessionRequestSchema>;

/** Reply to `POST /session`. */
export const sessionResponseSchema = z.object({
  system_prompt: z.string(),
  tools: z.array(wireToolSchema),
  node_id: z.string().min(1),
  collected_vars: jsonObject,
});
/** Reply to `POST /session`. */
export type SessionResponse = z.infer<typeof sessionResponseSchema>;

/** Body of `POST /tool-call`. `args` and `collected_vars` default to `{}` when left out. */
export const toolCallRequestSchema = z.object({
  node_id: z.string().min(1),
  tool: z.object({ name: z.string().min(1), args: jsonObject.default({}) }),
  collected_vars: jsonObject.default({}),
});
/** Body of `POST /tool-call` (after defaults). */
export type ToolCallRequest = z.output<typeof toolCallRequestSchema>;

// Optional text fields accept null too: servers in other languages often write null for "absent".
const optText = z.string().nullish();

/** Reply to `POST /tool-call`: exactly one of transition, stay, end (by `action`). */
export const toolCallResponseSchema = z.discriminatedUnion("action", [
  z.object({
    action: z.literal("transition"),
    system_prompt: z.string(),
    tools: z.array(wireToolSchema),
    say: optText,
    node_id: z.string().min(1),
    collected_vars: jsonObject,
    finished: z.boolean().optional(),
  }),
  z.object({
    action: z.literal("stay"),
    result: z.unknown().optional(),
    collected_vars: jsonObject.optional(),
    finished: z.boolean().optional(),
  }),
  z.object({
    action: z.literal("end"),
    disposition: optText,
    say: optText,
    node_id: z.string().optional(),
    collected_vars: jsonObject.optional(),
    finished: z.boolean().optional(),
  }),
]);
/** Reply to `POST /tool-call`. */
export type ToolCallResponse = z.infer<typeof toolCallResponseSchema>;

/** Wire tool declarations to {@link ToolDecl}s (drops unknown fields). */
export function toolsFromWire(tools: readonly z.infer<typeof wireToolSchema>[]): ToolDecl[] {
  return tools.map((t) => ({ name: t.name, description: t.description, params: t.params }));
}

/** A brain action whose `end` may carry the text to say before hanging up. */
export type WireAction =
  | Exclude<BrainAction, { type: "end" }>
  | { type: "end"; disposition?: string; say?: string };

/**
 * Encode a brain's decision as a `/tool-call` reply. `nodeId` is the node after the move and
 * `vars` the collected variables after it.
 */
export function actionToWire(
  action: WireAction,
  nodeId: string,
  vars: Record<string, unknown>,
): ToolCallResponse {
  switch (action.type) {
    case "transition": {
      const reply: ToolCallResponse = {
        action: "transition",
        system_prompt: action.systemPrompt,
        tools: action.tools.map((t) => ({
          name: t.name,
          description: t.description,
          params: t.params,
        })),
        node_id: action.nodeId ?? nodeId,
        collected_vars: vars,
        finished: false,
      };
      if (action.say !== undefined) reply.say = action.say;
      return reply;
    }
    case "stay": {
      const reply: ToolCallResponse = { action: "stay", collected_vars: vars, finished: false };
      if (action.result !== undefined) reply.result = action.result;
      return reply;
    }
    case "end": {
      const reply: ToolCallResponse = {
        action: "end",
        node_id: nodeId,
        collected_vars: vars,
        finished: true,
      };
      if (action.disposition !== undefined) reply.disposition = action.disposition;
      if (action.say !== undefined) reply.say = action.say;
      return reply;
    }
  }
}

/** Decode a validated `/tool-call` reply into a brain action (null text fields become absent). */
export function actionFromWire(reply: ToolCallResponse): WireAction {
  switch (reply.action) {
    case "transition": {
      const action: WireAction = {
        type: "transition",
        systemPrompt: reply.system_prompt,
        tools: toolsFromWire(reply.tools),
        nodeId: reply.node_id,
      };
      if (typeof reply.say === "string") action.say = reply.say;
      return action;
    }
    case "stay":
      return reply.result === undefined ? { type: "stay" } : { type: "stay", result: reply.result };
    case "end": {
      const action: WireAction = { type: "end" };
      if (typeof reply.disposition === "string") action.disposition = reply.disposition;
      if (typeof reply.say === "string") action.say = reply.say;
      return action;
    }
  }
}
