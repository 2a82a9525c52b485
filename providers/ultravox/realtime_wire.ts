/**
 * Ultravox wire format: the `POST /api/calls` body that opens a call on a server WebSocket, and
 * the JSON data messages of that socket (audio itself is binary 16-bit PCM both ways). No I/O.
 * See docs/providers/ultravox.md.
 * @module
 */

import type { ToolDecl } from "../../core/frames.ts";

/** Ultravox's API root. */
export const ULTRAVOX_API_URL = "https://api.ultravox.ai/api";
/** Model used when the config names none. */
export const ULTRAVOX_DEFAULT_MODEL = "fixie-ai/ultravox";
/** Rate of the caller audio the client sends (other rates are resampled to it). */
export const ULTRAVOX_INPUT_RATE = 16000;
/** Rate of the model's audio asked for. */
export const ULTRAVOX_OUTPUT_RATE = 24000;

/** What a call is created with. */
export interface UltravoxCallParams {
  systemPrompt: string;
  model: string;
  voice?: string;
  tools: readonly ToolDecl[];
  inputSampleRate: number;
  outputSampleRate: number;
  /** Whether the agent speaks first (a kickoff) or waits for the caller. */
  agentFirst: boolean;
}

/** Tools as Ultravox client tools: each JSON-schema property is a body parameter. */
export function ultravoxTools(tools: readonly ToolDecl[]): Record<string, unknown>[] {
  return tools.map((t) => {
    const params = t.params as { properties?: Record<string, unknown>; required?: unknown };
    const required = Array.isArray(params.required) ? params.required : [];
    return {
      temporaryTool: {
        modelToolName: t.name,
        description: t.description,
        dynamicParameters: Object.entries(params.properties ?? {}).map(([name, schema]) => ({
          name,
          location: "PARAMETER_LOCATION_BODY",
          schema,
          required: required.includes(name),
        })),
        client: {},
      },
    };
  });
}

/** The body of `POST /api/calls` for a server-WebSocket call. */
export function createCallBody(p: UltravoxCallParams): Record<string, unknown> {
  return {
    systemPrompt: p.systemPrompt,
    model: p.model,
    ...(p.voice === undefined ? {} : { voice: p.voice }),
    selectedTools: ultravoxTools(p.tools),
    firstSpeaker: p.agentFirst ? "FIRST_SPEAKER_AGENT" : "FIRST_SPEAKER_USER",
    medium: {
      serverWebSocket: {
        inputSampleRate: p.inputSampleRate,
        outputSampleRate: p.outputSampleRate,
      },
    },
  };
}

/** A text turn from the caller's side (a kickoff, a keypad press, new instructions). */
export function userTextMessage(text: string): Record<string, unknown> {
  return { type: "user_text_message", text };
}

/**
 * The answer to a client tool invocation. With `stage`, the result opens a new call stage
 * (new system prompt and tools) instead of being read by the model as is.
 */
export function toolResultMessage(
  invocationId: string,
  result: string,
  stage?: Record<string, unknown>,
): Record<string, unknown> {
  return stage === undefined ? { type: "client_tool_result", invocationId, result } : {
    type: "client_tool_result",
    invocationId,
    result: JSON.stringify(stage),
    responseType: "new-stage",
  };
}

/** A data message from the server, as far as the client reads it. */
export type UltravoxMessage =
  | { type: "transcript"; role: "user" | "agent"; text?: string; delta?: string; final: boolean }
  | { type: "state"; state: string }
  | { type: "playback_clear_buffer" }
  | { type: "call_started" }
  | {
    type: "client_tool_invocation";
    toolName: string;
    invocationId: string;
    parameters: Record<string, unknown>;
  }
  | { type: "other"; name: string };

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** Parse a data message; `undefined` when it is not a JSON object with a `type`. */
export function parseUltravoxMessage(text: string): UltravoxMessage | undefined {
  let m: unknown;
  try {
    m = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isRecord(m) || typeof m.type !== "string") return undefined;
  switch (m.type) {
    case "transcript":
      if (m.role !== "user" && m.role !== "agent") break;
      return {
        type: "transcript",
        role: m.role,
        text: typeof m.text === "string" ? m.text : undefined,
        delta: typeof m.delta === "string" ? m.delta : undefined,
        final: m.final === true,
      };
    case "state":
      if (typeof m.state === "string") return { type: "state", state: m.state };
      break;
    case "playback_clear_buffer":
      return { type: "playback_clear_buffer" };
    case "call_started":
      return { type: "call_started" };
    case "client_tool_invocation":
      if (typeof m.toolName !== "string" || typeof m.invocationId !== "string") break;
      return {
        type: "client_tool_invocation",
        toolName: m.toolName,
        invocationId: m.invocationId,
        parameters: isRecord(m.parameters) ? m.parameters : {},
      };
  }
  return { type: "other", name: m.type };
}
