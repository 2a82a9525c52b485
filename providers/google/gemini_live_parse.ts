/**
 * Gemini Live server messages, parsed into one flat record per message. Pure, never throws:
 * fields of an unexpected shape are skipped and named in `skipped`.
 * @module
 */

import type { AudioFrame, LlmTokenUsage } from "../../core/frames.ts";
import { pcm16FromBase64 } from "../realtime/_shared.ts";
import { GEMINI_OUTPUT_RATE, isPlainObject } from "./gemini_live_wire.ts";

/** A function call the model asks for. */
export interface GeminiToolCall {
  id: string;
  name: string;
  args: Record<string, unknown>;
}

/**
 * What one server message says. A message may carry several of these at once (Gemini 3.x
 * bundles content with `turnComplete`), so every field is read.
 */
export interface GeminiServerMessage {
  setupComplete: boolean;
  interrupted: boolean;
  /** Model audio, in the order of `modelTurn.parts`. */
  audio: AudioFrame[];
  /** Non-thought text parts of the model turn (unused with AUDIO output; kept for logs). */
  modelText: string;
  /** True when the message carried any model-turn part (audio or text). */
  modelTurn: boolean;
  inputTranscript?: string;
  outputTranscript?: string;
  turnComplete: boolean;
  toolCalls: GeminiToolCall[];
  cancelledToolCallIds: string[];
  usage?: LlmTokenUsage;
  /** A `sessionResumptionUpdate`: `handle` only when the server says it is resumable. */
  resumption?: { resumable: boolean; handle?: string };
  /** A `goAway`: the connection ends in `timeLeftMs` (undefined when not stated). */
  goAway?: { timeLeftMs?: number };
  /** Parts of the message that were not understood (for a debug log). */
  skipped: string[];
}

/** Parse one message's text; `undefined` when it is not a JSON object. */
export function parseGeminiServerMessage(text: string): GeminiServerMessage | undefined {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isPlainObject(raw)) return undefined;
  const msg: GeminiServerMessage = {
    setupComplete: false,
    interrupted: false,
    audio: [],
    modelText: "",
    modelTurn: false,
    turnComplete: false,
    toolCalls: [],
    cancelledToolCallIds: [],
    skipped: [],
  };
  for (const [key, value] of Object.entries(raw)) {
    switch (key) {
      case "setupComplete":
        msg.setupComplete = true;
        break;
      case "serverContent":
        readServerContent(value, msg);
        break;
      case "toolCall":
        readToolCall(value, msg);
        break;
      case "toolCallCancellation": {
        const ids = isPlainObject(value) ? value.ids : undefined;
        if (Array.isArray(ids)) {
          msg.cancelledToolCallIds = ids.filter((id): id is string => typeof id === "string");
        } else msg.skipped.push("toolCallCancellation");
        break;
      }
      case "usageMetadata":
        msg.usage = readUsage(value);
        if (msg.usage === undefined) msg.skipped.push("usageMetadata");
        break;
      case "sessionResumptionUpdate":
        if (isPlainObject(value)) {
          const resumable = value.resumable === true;
          const handle = typeof value.newHandle === "string" && value.newHandle !== ""
            ? value.newHandle
            : undefined;
          msg.resumption = resumable && handle !== undefined
            ? { resumable, handle }
            : { resumable: false };
        } else msg.skipped.push("sessionResumptionUpdate");
        break;
      case "goAway":
        msg.goAway = {
          timeLeftMs: isPlainObject(value) ? parseDurationMs(value.timeLeft) : undefined,
        };
        break;
      default:
        msg.skipped.push(key);
    }
  }
  return msg;
}

function readServerContent(value: unknown, msg: GeminiServerMessage): void {
  if (!isPlainObject(value)) {
    msg.skipped.push("serverContent");
    return;
  }
  if (value.interrupted === true) msg.interrupted = true;
  if (value.turnComplete === true) msg.turnComplete = true;
  const parts = isPlainObject(value.modelTurn) ? value.modelTurn.parts : undefined;
  if (Array.isArray(parts)) {
    for (const part of parts) readPart(part, msg);
  } else if (value.modelTurn !== undefined) msg.skipped.push("serverContent.modelTurn");
  const input = transcriptText(value.inputTranscription);
  if (input !== undefined) msg.inputTranscript = input;
  const output = transcriptText(value.outputTranscription);
  if (output !== undefined) msg.outputTranscript = output;
}

function readPart(part: unknown, msg: GeminiServerMessage): void {
  if (!isPlainObject(part)) {
    msg.skipped.push("modelTurn.part");
    return;
  }
  const inline = part.inlineData;
  if (isPlainObject(inline)) {
    const mime = typeof inline.mimeType === "string" ? inline.mimeType : "";
    const pcm = typeof inline.data === "string" ? pcm16FromBase64(inline.data) : undefined;
    if (pcm === undefined || !mime.startsWith("audio/pcm")) {
      msg.skipped.push("modelTurn.inlineData");
      return;
    }
    msg.modelTurn = true;
    if (pcm.length > 0) {
      msg.audio.push({ pcm, sampleRate: pcmRate(mime), numChannels: 1 });
    }
    return;
  }
  if (typeof part.text === "string") {
    msg.modelTurn = true;
    // Native-audio models stream their reasoning as `thought` text parts: never the answer.
    if (part.thought !== true) msg.modelText += part.text;
    return;
  }
  msg.skipped.push("modelTurn.part");
}

/** The `rate=` of an `audio/pcm;rate=24000` mimeType, else the 24 kHz default. */
export function pcmRate(mimeType: string): number {
  const m = /(?:^|;)\s*rate=(\d+)/.exec(mimeType);
  const rate = m ? Number(m[1]) : NaN;
  return Number.isInteger(rate) && rate >= 1000 && rate <= 192000 ? rate : GEMINI_OUTPUT_RATE;
}

function transcriptText(value: unknown): string | undefined {
  if (!isPlainObject(value) || typeof value.text !== "string" || value.text === "") {
    return undefined;
  }
  return value.text;
}

function readToolCall(value: unknown, msg: GeminiServerMessage): void {
  const calls = isPlainObject(value) ? value.functionCalls : undefined;
  if (!Array.isArray(calls)) {
    msg.skipped.push("toolCall");
    return;
  }
  for (const call of calls) {
    if (!isPlainObject(call) || typeof call.id !== "string" || typeof call.name !== "string") {
      msg.skipped.push("toolCall.functionCall");
      continue;
    }
    msg.toolCalls.push({
      id: call.id,
      name: call.name,
      args: isPlainObject(call.args) ? call.args : {},
    });
  }
}

function readUsage(value: unknown): LlmTokenUsage | undefined {
  if (!isPlainObject(value)) return undefined;
  const n = (k: string): number | undefined => {
    const v = value[k];
    // int64 counts may arrive as strings in proto3 JSON.
    const num = typeof v === "string" ? Number(v) : v;
    return typeof num === "number" && Number.isFinite(num) && num >= 0 ? num : undefined;
  };
  const prompt = n("promptTokenCount") ?? 0;
  const completion = n("responseTokenCount") ?? 0;
  const usage: LlmTokenUsage = {
    promptTokens: prompt,
    completionTokens: completion,
    totalTokens: n("totalTokenCount") ?? prompt + completion,
  };
  const cached = n("cachedContentTokenCount");
  if (cached !== undefined) usage.cacheReadInputTokens = cached;
  const thoughts = n("thoughtsTokenCount");
  if (thoughts !== undefined) usage.reasoningTokens = thoughts;
  return usage;
}

/** Milliseconds of a protobuf Duration string (`"10s"`, `"1.5s"`); undefined when malformed. */
export function parseDurationMs(value: unknown): number | undefined {
  if (typeof value !== "string") return undefined;
  const m = /^(\d+(?:\.\d+)?)s$/.exec(value.trim());
  return m ? Math.round(Number(m[1]) * 1000) : undefined;
}
