/**
 * Bedrock Converse wire shapes: the request body of `ConverseStream` built from an
 * {@link LlmContext}, and the usage of its `metadata` event in Flowcat's terms.
 *
 * Source: Amazon Bedrock API reference, `ConverseStream`
 * (docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ConverseStream.html) and the
 * service model botocore/data/bedrock-runtime/2023-09-30/service-2.json (`Message`,
 * `ContentBlock`, `ToolUseBlock`, `ToolResultBlock`, `ToolSpecification`, `TokenUsage`).
 * `messages` alternate user/assistant and start with a user message; the system prompt is the
 * top-level `system` list; a tool call is an assistant `toolUse` block and its result a user
 * `toolResult` block answering the same `toolUseId`.
 * @module
 */

import type { LlmMessage, LlmTokenUsage, ToolDecl } from "../../core/frames.ts";

/** One Converse content block (the kinds Flowcat sends). */
export type ConverseBlock =
  | { text: string }
  | { toolUse: { toolUseId: string; name: string; input: Record<string, unknown> } }
  | {
    toolResult: {
      toolUseId: string;
      content: { text: string }[];
      status: "success";
    };
  };

/** One Converse message. */
export interface ConverseMessage {
  /** Who speaks. */
  role: "user" | "assistant";
  /** Its blocks, in order. */
  content: ConverseBlock[];
}

/** A tool as `toolConfig.tools[]` declares it. */
export interface ConverseTool {
  /** The specification the model sees. */
  toolSpec: {
    name: string;
    description: string;
    inputSchema: { json: Record<string, unknown> };
  };
}

/** The user line put in front of a conversation the bot opens (Converse needs a user first). */
export const BEDROCK_CONVERSATION_START = "(The call has started.)";

/**
 * `system` and `messages` for a context. Same-role neighbours merge into one message; a tool
 * result whose call is not in the context is dropped (Bedrock refuses it) and reported through
 * `onOrphan`.
 */
export function converseMessages(
  messages: readonly LlmMessage[],
  onOrphan: (toolCallId: string) => void = () => {},
): { system: { text: string }[]; messages: ConverseMessage[] } {
  const system: { text: string }[] = [];
  const out: ConverseMessage[] = [];
  const calls = new Set<string>();
  const add = (role: ConverseMessage["role"], block: ConverseBlock) => {
    const last = out[out.length - 1];
    if (last !== undefined && last.role === role) last.content.push(block);
    else out.push({ role, content: [block] });
  };
  for (const m of messages) {
    if (m.role === "system") {
      if (m.content) system.push({ text: m.content });
    } else if (m.role === "user") {
      if (m.content) add("user", { text: m.content });
    } else if (m.role === "assistant") {
      if (m.content) add("assistant", { text: m.content });
      for (const c of m.toolCalls ?? []) {
        calls.add(c.toolCallId);
        add("assistant", {
          toolUse: { toolUseId: c.toolCallId, name: c.functionName, input: c.arguments },
        });
      }
    } else if (calls.has(m.toolCallId)) {
      add("user", {
        toolResult: { toolUseId: m.toolCallId, content: [{ text: m.content }], status: "success" },
      });
    } else {
      onOrphan(m.toolCallId);
    }
  }
  if (out.length === 0 || out[0].role !== "user") {
    out.unshift({ role: "user", content: [{ text: BEDROCK_CONVERSATION_START }] });
  }
  return { system, messages: out };
}

/** `toolConfig.tools` for tool declarations. */
export function converseTools(tools: readonly ToolDecl[]): ConverseTool[] {
  return tools.map((t) => ({
    toolSpec: {
      name: t.name,
      description: t.description,
      inputSchema: {
        json: Object.keys(t.params).length > 0 ? t.params : { type: "object", properties: {} },
      },
    },
  }));
}

/** `TokenUsage` of a `metadata` event. */
export interface ConverseUsage {
  inputTokens?: number;
  outputTokens?: number;
  totalTokens?: number;
  cacheReadInputTokens?: number;
  cacheWriteInputTokens?: number;
}

/** Usage in Flowcat's terms; `undefined` when the event had none. */
export function converseUsage(u: ConverseUsage | undefined): LlmTokenUsage | undefined {
  if (u?.inputTokens === undefined && u?.outputTokens === undefined) return undefined;
  const prompt = u.inputTokens ?? 0;
  const completion = u.outputTokens ?? 0;
  const tokens: LlmTokenUsage = {
    promptTokens: prompt,
    completionTokens: completion,
    totalTokens: u.totalTokens ?? prompt + completion,
  };
  if (u.cacheReadInputTokens) tokens.cacheReadInputTokens = u.cacheReadInputTokens;
  if (u.cacheWriteInputTokens) tokens.cacheCreationInputTokens = u.cacheWriteInputTokens;
  return tokens;
}
