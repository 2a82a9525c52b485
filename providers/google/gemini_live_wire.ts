/**
 * Gemini Live client messages (`setup`, `realtimeInput`, `clientContent`, `toolResponse`) as
 * JSON. Pure functions, no I/O. Wire facts: `shared/reference/realtime.md` section A; design
 * notes: docs/realtime.md.
 * @module
 */

import type { RealtimeVadSettings, ToolDecl } from "../../core/seams.ts";
import { pcm16ToBase64 } from "../realtime/_shared.ts";

/** Public Gemini Developer API endpoint (the key goes in `?key=`). */
export const GEMINI_LIVE_URL =
  "wss://generativelanguage.googleapis.com/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent";

/**
 * Model used when the config names none: Google's default for low-latency voice agents (which
 * models the Live API serves, and since when: docs/realtime.md).
 */
export const GEMINI_DEFAULT_MODEL = "gemini-3.8-live";

/** Sample rate Gemini Live expects for input audio. */
export const GEMINI_INPUT_RATE = 16000;

/** Sample rate of Gemini Live output audio when the mimeType does not say. */
export const GEMINI_OUTPUT_RATE = 24000;

/** Everything one `setup` message carries. */
export interface GeminiSetupParams {
  /** Model name, with or without the `models/` prefix. */
  model: string;
  voice: string;
  systemPrompt: string;
  tools: readonly ToolDecl[];
  vad?: RealtimeVadSettings;
  /** Session-resumption handle to resume; absent starts a new session. */
  handle?: string;
  /** BCP-47 speech language, e.g. `en-US`; absent lets the model choose. */
  languageCode?: string;
}

/** `models/<name>`: the wire form of a model name. */
export function geminiModelName(model: string): string {
  return model.startsWith("models/") ? model : `models/${model}`;
}

/** The endpoint with the API key appended as `?key=` (or `&key=` when it already has a query). */
export function geminiLiveUrl(base: string, apiKey: string): string {
  const sep = base.includes("?") ? "&" : "?";
  return `${base}${sep}key=${encodeURIComponent(apiKey)}`;
}

/** The `setup` message. */
export function geminiSetupMessage(p: GeminiSetupParams): { setup: Record<string, unknown> } {
  const speechConfig: Record<string, unknown> = {
    voiceConfig: { prebuiltVoiceConfig: { voiceName: p.voice } },
  };
  if (p.languageCode) speechConfig.languageCode = p.languageCode;
  const setup: Record<string, unknown> = {
    model: geminiModelName(p.model),
    generationConfig: { responseModalities: ["AUDIO"], speechConfig },
  };
  if (p.systemPrompt !== "") setup.systemInstruction = { parts: [{ text: p.systemPrompt }] };
  if (p.tools.length > 0) {
    setup.tools = [{ functionDeclarations: p.tools.map(geminiFunctionDeclaration) }];
  }
  const aad = activityDetection(p.vad);
  if (aad !== undefined) setup.realtimeInputConfig = { automaticActivityDetection: aad };
  setup.inputAudioTranscription = {};
  setup.outputAudioTranscription = {};
  // `{}` only asks for resumption updates; a handle resumes that session.
  setup.sessionResumption = p.handle === undefined ? {} : { handle: p.handle };
  return { setup };
}

function activityDetection(
  vad: RealtimeVadSettings | undefined,
): Record<string, unknown> | undefined {
  if (vad === undefined) return undefined;
  const out: Record<string, unknown> = {};
  if (vad.startSensitivity) out.startOfSpeechSensitivity = vad.startSensitivity;
  if (vad.endSensitivity) out.endOfSpeechSensitivity = vad.endSensitivity;
  if (vad.prefixPaddingMs !== undefined) out.prefixPaddingMs = vad.prefixPaddingMs;
  if (vad.silenceDurationMs !== undefined) out.silenceDurationMs = vad.silenceDurationMs;
  return Object.keys(out).length > 0 ? out : undefined;
}

/**
 * One `functionDeclarations` entry; `parameters` is omitted for a tool without arguments. Every
 * tool is `BLOCKING`: the brain's transitions and the end of the call must land before the model
 * goes on, and gemini-3.8-live made `NON_BLOCKING` the default (earlier models accept the field).
 */
export function geminiFunctionDeclaration(tool: ToolDecl): Record<string, unknown> {
  const decl: Record<string, unknown> = {
    name: tool.name,
    description: tool.description,
    behavior: "BLOCKING",
  };
  const props = tool.params?.properties;
  const hasProps = isPlainObject(props) && Object.keys(props).length > 0;
  if (hasProps) decl.parameters = geminiSchema(tool.params);
  return decl;
}

// The subset of OpenAPI schema keys Gemini's `Schema` accepts; anything else (`$schema`,
// `additionalProperties`, `$ref`, ...) makes the server refuse the whole setup, which would end
// the call, so it is dropped here instead.
const SCHEMA_KEYS = new Set([
  "type",
  "format",
  "title",
  "description",
  "nullable",
  "enum",
  "maxItems",
  "minItems",
  "properties",
  "required",
  "minProperties",
  "maxProperties",
  "minLength",
  "maxLength",
  "pattern",
  "example",
  "anyOf",
  "propertyOrdering",
  "default",
  "items",
  "minimum",
  "maximum",
]);

/** A JSON-schema object reduced to the keys Gemini's `Schema` accepts. */
export function geminiSchema(schema: unknown): Record<string, unknown> {
  if (!isPlainObject(schema)) return {};
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === "type" && Array.isArray(value)) {
      // JSON-schema `["string", "null"]` is Gemini's `type` + `nullable`.
      const types = value.filter((t) => t !== "null");
      if (types.length > 0) out.type = types[0];
      if (types.length !== value.length) out.nullable = true;
    } else if (key === "const") {
      out.enum = [value];
    } else if (!SCHEMA_KEYS.has(key)) {
      continue;
    } else if (key === "properties" && isPlainObject(value)) {
      out.properties = Object.fromEntries(
        Object.entries(value).map(([name, sub]) => [name, geminiSchema(sub)]),
      );
    } else if (key === "items") {
      out.items = geminiSchema(value);
    } else if (key === "anyOf" && Array.isArray(value)) {
      out.anyOf = value.map(geminiSchema);
    } else {
      out[key] = value;
    }
  }
  return out;
}

/** A `realtimeInput.audio` message for 16-bit mono PCM at `sampleRate`. */
export function geminiAudioMessage(pcm: Int16Array, sampleRate: number): string {
  return JSON.stringify({
    realtimeInput: {
      audio: { mimeType: `audio/pcm;rate=${sampleRate}`, data: pcm16ToBase64(pcm) },
    },
  });
}

/** A user `clientContent` turn with `turnComplete: true`: the model answers it now. */
export function geminiUserTurnMessage(text: string): string {
  return JSON.stringify({
    clientContent: { turns: [{ role: "user", parts: [{ text }] }], turnComplete: true },
  });
}

/**
 * Answers the model gave that the resumption handle does not hold (it predates them), as model
 * turns appended to the context without asking for a reply.
 */
export function geminiModelTurnsMessage(texts: readonly string[]): string {
  const turns = texts.map((text) => ({ role: "model", parts: [{ text }] }));
  return JSON.stringify({ clientContent: { turns, turnComplete: false } });
}

/**
 * After a handover cut the model's answer: the part the caller heard as the model's turn, then a
 * user turn asking it to go on from there (or, when nothing was heard, to answer again).
 */
export function geminiResumeReplyMessage(heard: string): string {
  const turns = heard === ""
    ? [{
      role: "user",
      parts: [{
        text: "(The line dropped before your last answer reached the caller. Give that answer " +
          "again, in full.)",
      }],
    }]
    : [
      { role: "model", parts: [{ text: heard }] },
      {
        role: "user",
        parts: [{
          text: "(The line dropped while you were answering; the caller heard only your words " +
            "up to here. Continue that answer from exactly where it stopped, without repeating " +
            "what was heard.)",
        }],
      },
    ];
  return JSON.stringify({ clientContent: { turns, turnComplete: true } });
}

/**
 * A `toolResponse` for one call. A plain-object result is the response itself; anything else is
 * wrapped as `{result}` because `response` must be a JSON object.
 */
export function geminiToolResponseMessage(id: string, name: string, result: unknown): string {
  const response = isPlainObject(result) ? result : { result: result ?? null };
  return JSON.stringify({ toolResponse: { functionResponses: [{ id, name, response }] } });
}

/** True for `{...}` JSON objects (not arrays, not null, not class instances). */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}
