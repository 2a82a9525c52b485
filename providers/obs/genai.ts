/**
 * The OpenTelemetry GenAI semantic conventions for Flowcat's model requests: the attribute names
 * LLM-tracing backends (Langfuse, Arize Phoenix, Grafana, Datadog, ...) read, and the message
 * shapes of `gen_ai.input.messages`, `gen_ai.output.messages` and `gen_ai.system_instructions`
 * (recorded only when the operator opts into content). Pure functions, no OpenTelemetry import.
 * @module
 */

import type { FunctionCall, LlmMessage } from "../../core/frames.ts";

/** `gen_ai.provider.name` (and the older `gen_ai.system`) per Flowcat provider, where they differ. */
const GENAI_PROVIDER: Readonly<Record<string, string>> = Object.freeze({
  gemini: "gcp.gemini",
  mistral: "mistral_ai",
  azure: "azure.ai.openai",
  bedrock: "aws.bedrock",
  vertex: "gcp.vertex_ai",
  xai: "x_ai",
});

/**
 * The GenAI provider name of a Flowcat provider: the conventions' well-known value where there is
 * one (`openai`, `anthropic`, `gcp.gemini`, `groq`, `deepseek`, `perplexity`, `mistral_ai`...),
 * else Flowcat's own name (`ollama`, `vllm`, `echo`).
 */
export function genAiProvider(provider: string): string {
  return GENAI_PROVIDER[provider] ?? provider;
}

/** A message part, as the conventions shape it. */
export type GenAiPart =
  | { type: "text"; content: string }
  | { type: "tool_call"; id: string; name: string; arguments: Record<string, unknown> }
  | { type: "tool_call_response"; id: string; response: string };

/** A message, as the conventions shape it. */
export interface GenAiMessage {
  role: "user" | "assistant" | "tool";
  parts: GenAiPart[];
  /** Output messages only. */
  finish_reason?: string;
}

/** The system instructions and the input messages of a request over `messages`. */
export function inputMessages(
  messages: readonly LlmMessage[],
): { system: GenAiPart[]; input: GenAiMessage[] } {
  const system: GenAiPart[] = [];
  const input: GenAiMessage[] = [];
  for (const m of messages) {
    switch (m.role) {
      case "system":
        system.push({ type: "text", content: m.content });
        break;
      case "user":
        input.push({ role: "user", parts: [{ type: "text", content: m.content }] });
        break;
      case "assistant": {
        const parts: GenAiPart[] = m.content === "" ? [] : [{ type: "text", content: m.content }];
        for (const c of m.toolCalls ?? []) parts.push(toolCallPart(c));
        input.push({ role: "assistant", parts });
        break;
      }
      case "tool":
        input.push({
          role: "tool",
          parts: [{ type: "tool_call_response", id: m.toolCallId, response: m.content }],
        });
        break;
    }
  }
  return { system, input };
}

function toolCallPart(c: FunctionCall): GenAiPart {
  return { type: "tool_call", id: c.toolCallId, name: c.functionName, arguments: c.arguments };
}

/** The output message of a reply: its text and tool calls. */
export function outputMessage(
  text: string,
  calls: readonly FunctionCall[],
  finishReason: string,
): GenAiMessage {
  const parts: GenAiPart[] = text === "" ? [] : [{ type: "text", content: text }];
  for (const c of calls) parts.push(toolCallPart(c));
  return { role: "assistant", parts, finish_reason: finishReason };
}
