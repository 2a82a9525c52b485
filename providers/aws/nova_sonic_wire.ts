/**
 * Amazon Nova Sonic's events on Bedrock `InvokeModelWithBidirectionalStream`: the JSON input
 * events Flowcat sends and the framing both directions share. Shapes as in AWS's Nova Sonic
 * guide ("Handling input events with the bidirectional API", "Using tools") and pipecat's
 * `services/aws_nova_sonic/aws.py`; the framing as aws-sdk-js-v3's client-bedrock-runtime
 * serializes it (`se_BidirectionalInputPayloadPart_event`): an event-stream message with
 * `:event-type: chunk`, `:message-type: event`, `:content-type: application/json` and the
 * payload `{"bytes": base64(JSON event)}`. Output events arrive the same way.
 * @module
 */

import type { ToolDecl } from "../../core/frames.ts";
import { encodeMessage, type EventMessage, headerString, stringHeaders } from "./event_stream.ts";

/** One Nova Sonic event: `{event: {<name>: {...}}}`. */
export type NovaEvent = { event: Record<string, Record<string, unknown>> };

/** Sample rate of the caller's audio sent to the model (16 kHz LPCM). */
export const NOVA_INPUT_RATE = 16_000;

/** What a session is opened with. */
export interface NovaSessionSetup {
  /** Names every event of the prompt (a UUID). */
  promptName: string;
  /** Voice id (`matthew`, `tiffany`, `amy`...). */
  voice: string;
  /** Output sample rate: 8000, 16000 or 24000. */
  outputRate: number;
  /** Tools offered to the model. */
  tools: readonly ToolDecl[];
  /** `inferenceConfiguration`: maxTokens, topP, temperature. */
  inference: { maxTokens: number; topP: number; temperature: number };
}

/** `sessionStart` with the inference configuration. */
export function sessionStart(s: NovaSessionSetup): NovaEvent {
  return { event: { sessionStart: { inferenceConfiguration: { ...s.inference } } } };
}

/** `promptStart`: text and audio output formats, and the tools when there are any. */
export function promptStart(s: NovaSessionSetup): NovaEvent {
  const body: Record<string, unknown> = {
    promptName: s.promptName,
    textOutputConfiguration: { mediaType: "text/plain" },
    audioOutputConfiguration: {
      mediaType: "audio/lpcm",
      sampleRateHertz: s.outputRate,
      sampleSizeBits: 16,
      channelCount: 1,
      voiceId: s.voice,
      encoding: "base64",
      audioType: "SPEECH",
    },
  };
  if (s.tools.length > 0) {
    body.toolUseOutputConfiguration = { mediaType: "application/json" };
    body.toolConfiguration = {
      tools: s.tools.map((t) => ({
        // Nova Sonic takes the JSON schema as a JSON string.
        toolSpec: {
          name: t.name,
          description: t.description,
          inputSchema: { json: JSON.stringify(t.params) },
        },
      })),
    };
  }
  return { event: { promptStart: body } };
}

/**
 * A whole text content block: the `SYSTEM` prompt, a `USER` / `ASSISTANT` history line, or
 * (`interactive`) a line the model answers as if the caller had said it.
 */
export function textContent(
  promptName: string,
  contentName: string,
  role: "SYSTEM" | "USER" | "ASSISTANT",
  text: string,
  interactive = false,
): NovaEvent[] {
  return block(promptName, contentName, {
    type: "TEXT",
    interactive,
    role,
    textInputConfiguration: { mediaType: "text/plain" },
  }, { textInput: { promptName, contentName, content: text } });
}

/** `contentStart` with `start`, the one content event, `contentEnd`. */
function block(
  promptName: string,
  contentName: string,
  start: Record<string, unknown>,
  content: NovaEvent["event"],
): NovaEvent[] {
  return [
    { event: { contentStart: { promptName, contentName, ...start } } },
    { event: content },
    contentEnd(promptName, contentName),
  ];
}

/** `contentStart` of the caller's audio: one block for the whole session. */
export function audioContentStart(promptName: string, contentName: string): NovaEvent {
  return {
    event: {
      contentStart: {
        promptName,
        contentName,
        type: "AUDIO",
        interactive: true,
        role: "USER",
        audioInputConfiguration: {
          mediaType: "audio/lpcm",
          sampleRateHertz: NOVA_INPUT_RATE,
          sampleSizeBits: 16,
          channelCount: 1,
          audioType: "SPEECH",
          encoding: "base64",
        },
      },
    },
  };
}

/** One piece of the caller's audio (base64 16-bit LPCM). */
export function audioInput(promptName: string, contentName: string, b64: string): NovaEvent {
  return { event: { audioInput: { promptName, contentName, content: b64 } } };
}

/** `contentEnd` of a block. */
export function contentEnd(promptName: string, contentName: string): NovaEvent {
  return { event: { contentEnd: { promptName, contentName } } };
}

/** The answer to tool call `toolUseId`: its own TOOL content block. */
export function toolResultContent(
  promptName: string,
  contentName: string,
  toolUseId: string,
  result: string,
): NovaEvent[] {
  return block(promptName, contentName, {
    interactive: false,
    type: "TOOL",
    role: "TOOL",
    toolResultInputConfiguration: {
      toolUseId,
      type: "TEXT",
      textInputConfiguration: { mediaType: "text/plain" },
    },
  }, { toolResult: { promptName, contentName, content: result } });
}

/** `promptEnd`, then `sessionEnd`: the orderly close. */
export function sessionClose(promptName: string): NovaEvent[] {
  return [{ event: { promptEnd: { promptName } } }, { event: { sessionEnd: {} } }];
}

const enc = new TextEncoder();
const dec = new TextDecoder();

/** The event-stream message carrying `ev` (before signing). */
export function chunkMessage(ev: NovaEvent): Uint8Array {
  return encodeMessage({
    headers: stringHeaders({
      ":event-type": "chunk",
      ":message-type": "event",
      ":content-type": "application/json",
    }),
    payload: enc.encode(JSON.stringify({ bytes: enc.encode(JSON.stringify(ev)).toBase64() })),
  });
}

/**
 * The `{event: {...}}` inside a `chunk` message; `undefined` for any other event type. Throws
 * `SyntaxError` when the payload is not the expected JSON.
 */
export function chunkEvent(msg: EventMessage): Record<string, Record<string, unknown>> | undefined {
  if (headerString(msg, ":event-type") !== "chunk") return undefined;
  const outer = JSON.parse(dec.decode(msg.payload)) as { bytes?: unknown };
  if (typeof outer.bytes !== "string") throw new SyntaxError("chunk without bytes");
  const inner = JSON.parse(dec.decode(Uint8Array.fromBase64(outer.bytes))) as {
    event?: unknown;
  };
  if (typeof inner.event !== "object" || inner.event === null) {
    throw new SyntaxError("chunk without event");
  }
  return inner.event as Record<string, Record<string, unknown>>;
}
