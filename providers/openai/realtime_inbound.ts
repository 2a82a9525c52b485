/**
 * OpenAI Realtime wire format, inbound: decoding server events into plain values. Pure
 * functions, no I/O; nothing here throws on malformed input (it gives `undefined`).
 * @module
 */

import { ulawDecode } from "../../core/audio/g711.ts";
import type { LlmTokenUsage } from "../../core/frames.ts";
import { messageText, pcm16FromBase64 } from "../realtime/_shared.ts";
import type { OpenAIAudioFormat } from "./realtime_wire.ts";

/** A server event: a JSON object with a string `type`. */
export type ServerEvent = { type: string } & Record<string, unknown>;

/** Server event names that differ between the dialects; both are accepted on either. */
export const AUDIO_DELTA_EVENTS: ReadonlySet<string> = new Set([
  "response.output_audio.delta",
  "response.audio.delta",
]);
/** Assistant transcript deltas (GA, beta). */
export const BOT_TRANSCRIPT_DELTA_EVENTS: ReadonlySet<string> = new Set([
  "response.output_audio_transcript.delta",
  "response.audio_transcript.delta",
]);
/** Assistant transcript ends (GA, beta). */
export const BOT_TRANSCRIPT_DONE_EVENTS: ReadonlySet<string> = new Set([
  "response.output_audio_transcript.done",
  "response.audio_transcript.done",
]);

/** A server event from a WebSocket message; `undefined` when it is not one. */
export function parseServerEvent(data: unknown): ServerEvent | undefined {
  const text = messageText(data);
  if (text === undefined) return undefined;
  let msg: unknown;
  try {
    msg = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof msg !== "object" || msg === null || Array.isArray(msg)) return undefined;
  return typeof (msg as Record<string, unknown>).type === "string" ? msg as ServerEvent : undefined;
}

/** String or `undefined`. */
export const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

/** The fields of an `error` object worth logging (all optional on the wire). */
export interface ServerErrorInfo {
  code?: string;
  type?: string;
  message?: string;
}

/** Code, type and message of an `error` event's `error` object. */
export function serverErrorInfo(error: unknown): ServerErrorInfo {
  if (typeof error !== "object" || error === null) return {};
  const e = error as Record<string, unknown>;
  return { code: str(e.code), type: str(e.type), message: str(e.message) };
}

/** One decoded assistant audio chunk. */
export interface AudioDelta {
  pcm: Int16Array;
  itemId?: string;
  contentIndex: number;
}

/**
 * The PCM of an audio delta event in the session's `format`; `undefined` when `delta` is not
 * base64 PCM16 (or, for `g711_ulaw`, not base64).
 */
export function audioDeltaOf(
  ev: ServerEvent,
  format: OpenAIAudioFormat = "pcm16",
): AudioDelta | undefined {
  const b64 = str(ev.delta);
  const pcm = b64 === undefined
    ? undefined
    : format === "g711_ulaw"
    ? ulawFromBase64(b64)
    : pcm16FromBase64(b64);
  if (pcm === undefined) return undefined;
  const ci = ev.content_index;
  return {
    pcm,
    itemId: str(ev.item_id),
    contentIndex: typeof ci === "number" && Number.isInteger(ci) && ci >= 0 ? ci : 0,
  };
}

/** 8 kHz PCM of base64 mu-law; `undefined` when it is not base64. */
function ulawFromBase64(b64: string): Int16Array | undefined {
  try {
    return ulawDecode(Uint8Array.fromBase64(b64));
  } catch {
    return undefined;
  }
}

/** A completed function call; `args` is `undefined` when the arguments are not a JSON object. */
export interface FunctionCallInfo {
  callId: string;
  name: string;
  args: Record<string, unknown> | undefined;
}

/** The call of `response.function_call_arguments.done`; `undefined` without call id or name. */
export function functionCallOf(ev: ServerEvent): FunctionCallInfo | undefined {
  const callId = str(ev.call_id);
  const name = str(ev.name);
  if (callId === undefined || name === undefined) return undefined;
  return { callId, name, args: parseToolArgs(ev.arguments) };
}

/** Finite number or `undefined`. */
function num(v: unknown): number | undefined {
  return typeof v === "number" && Number.isFinite(v) ? v : undefined;
}

/** Token usage from `response.done`'s `response.usage`; `undefined` when absent or malformed. */
export function usageFromResponse(response: unknown): LlmTokenUsage | undefined {
  if (typeof response !== "object" || response === null) return undefined;
  const usage = (response as Record<string, unknown>).usage;
  if (typeof usage !== "object" || usage === null) return undefined;
  const u = usage as Record<string, unknown>;
  const input = num(u.input_tokens);
  const output = num(u.output_tokens);
  if (input === undefined && output === undefined) return undefined;
  const promptTokens = input ?? 0;
  const completionTokens = output ?? 0;
  const out: LlmTokenUsage = {
    promptTokens,
    completionTokens,
    totalTokens: num(u.total_tokens) ?? promptTokens + completionTokens,
  };
  const details = u.input_token_details;
  if (typeof details === "object" && details !== null) {
    const cached = num((details as Record<string, unknown>).cached_tokens);
    if (cached !== undefined) out.cacheReadInputTokens = cached;
  }
  return out;
}

/** Tool-call arguments as an object; `undefined` when they are not a JSON object. */
export function parseToolArgs(raw: unknown): Record<string, unknown> | undefined {
  if (typeof raw !== "string") return undefined;
  if (raw.trim() === "") return {};
  try {
    const v: unknown = JSON.parse(raw);
    return typeof v === "object" && v !== null && !Array.isArray(v)
      ? v as Record<string, unknown>
      : undefined;
  } catch {
    return undefined;
  }
}
