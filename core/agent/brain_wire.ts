/**
 * The remote-brain HTTP contract on the wire: zod schemas of the bodies of `POST /session` and
 * `POST /tool-call` (snake_case, as the contract gives them) and conversions to and from
 * {@link BrainAction}. Used by RemoteBrain (client) and server/brain_server.ts (reference
 * server). Contract and decisions: docs/remote-brain.md.
 * @module
 */

import { z } from "npm:zod@^4.6.7";
import type { BrainAction, ToolDecl } from "../seams.ts";
import type { Validator } from "./problems.ts";

const jsonObject = z.record(z.string(), z.unknown());

const wireToolZod = z.object({
  name: z.string().min(1),
  description: z.string(),
  params: jsonObject,
});

/** A tool declaration on the wire. Unknown extra fields are allowed and dropped. */
export const wireToolSchema: Validator<ToolDecl> = wireToolZod;

/** Body of `POST /session`. */
export interface SessionRequest {
  /** The agent's brain configuration; opaque to the runtime, passed as the embedder gave it. */
  brain_config: Record<string, unknown>;
  /** Name of the realtime provider in use, such as `gemini`. */
  provider: string;
}

/** Body of `POST /session`. */
export const sessionRequestSchema: Validator<SessionRequest> = z.object({
  brain_config: jsonObject,
  provider: z.string(),
});

/** Reply to `POST /session`: the first node of the conversation. */
export interface SessionResponse {
  /** System prompt of the first node. */
  system_prompt: string;
  /** Tools the model is offered on the first node. */
  tools: ToolDecl[];
  /** Id of the first node. */
  node_id: string;
  /** Variables collected so far (the declared defaults). */
  collected_vars: Record<string, unknown>;
}

/** Reply to `POST /session`. */
export const sessionResponseSchema: Validator<SessionResponse> = z.object({
  system_prompt: z.string(),
  tools: z.array(wireToolZod),
  node_id: z.string().min(1),
  collected_vars: jsonObject,
});

/** Body of `POST /tool-call` (after defaults). */
export interface ToolCallRequest {
  /** Id of the node the call is on. */
  node_id: string;
  /** The tool the model called, with its arguments (`{}` when left out). */
  tool: { name: string; args: Record<string, unknown> };
  /** Variables collected so far (`{}` when left out). */
  collected_vars: Record<string, unknown>;
}

/** Body of `POST /tool-call`. `args` and `collected_vars` default to `{}` when left out. */
export const toolCallRequestSchema: Validator<ToolCallRequest> = z.object({
  node_id: z.string().min(1),
  tool: z.object({ name: z.string().min(1), args: jsonObject.default({}) }),
  collected_vars: jsonObject.default({}),
});

/**
 * Reply to `POST /tool-call`: exactly one of transition, stay, end (by `action`). Optional
 * text fields may be null: servers in other languages often write null for "absent".
 */
export type ToolCallResponse =
  | {
    action: "transition";
    system_prompt: string;
    tools: ToolDecl[];
    say?: string | null;
    node_id: string;
    collected_vars: Record<string, unknown>;
    finished?: boolean;
  }
  | {
    action: "stay";
    result?: unknown;
    collected_vars?: Record<string, unknown>;
    finished?: boolean;
  }
  | {
    action: "end";
    disposition?: string | null;
    say?: string | null;
    node_id?: string;
    collected_vars?: Record<string, unknown>;
    finished?: boolean;
  };

// Optional text fields accept null too (see ToolCallResponse).
const optText = z.string().nullish();

/** Reply to `POST /tool-call`: exactly one of transition, stay, end (by `action`). */
export const toolCallResponseSchema: Validator<ToolCallResponse> = z.discriminatedUnion("action", [
  z.object({
    action: z.literal("transition"),
    system_prompt: z.string(),
    tools: z.array(wireToolZod),
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

/** Wire tool declarations to {@link ToolDecl}s (drops unknown fields). */
export function toolsFromWire(tools: readonly ToolDecl[]): ToolDecl[] {
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
