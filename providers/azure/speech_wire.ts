/**
 * The Azure Speech WebSocket protocol the Speech SDK speaks, for recognition and synthesis.
 *
 * A text message is headers, a blank line, then the body: `Path: <path>\r\nX-RequestId:
 * <32 hex>\r\nX-Timestamp: <ISO>\r\nContent-Type: application/json\r\n\r\n{...}`. A binary
 * message is a 2-byte big-endian header length, the same header lines, then the payload (audio).
 * Sources in microsoft/cognitive-services-speech-sdk-js: src/common.speech/
 * WebsocketMessageFormatter.ts (framing), SpeechConnectionMessage.Internal.ts and HeaderNames.ts
 * (headers), SpeechConnectionFactory.ts and SpeechSynthesisConnectionFactory.ts (URLs),
 * ConnectionFactoryBase.ts (sovereign-cloud host suffixes), src/sdk/Audio/AudioStreamFormat.ts
 * (the WAV header sent first). See docs/providers/azure.md.
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";

/** Path of the conversation-mode recognition endpoint (continuous dictation of a call). */
export const AZURE_STT_PATH = "/speech/recognition/conversation/cognitiveservices/v1";
/** Path of the synthesis WebSocket. */
export const AZURE_TTS_PATH = "/tts/cognitiveservices/websocket/v1";
/** The header carrying a Speech resource key on the upgrade. */
export const AZURE_SPEECH_AUTH_HEADER = "Ocp-Apim-Subscription-Key";

const CRLF = "\r\n";
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** One message of the Speech WebSocket, decoded. Header names are lower-case. */
export interface SpeechMessage {
  /** The `Path` header (`turn.start`, `speech.phrase`, `audio`, ...), lower-case. */
  path: string;
  /** The `X-RequestId` header; empty when absent. */
  requestId: string;
  /** Every header, names lower-case. */
  headers: Record<string, string>;
  /** Body of a text message. */
  text?: string;
  /** Payload of a binary message (absent when empty). */
  binary?: Uint8Array;
}

/** A request id as the SDK makes them: a UUID without dashes (createNoDashGuid). */
export function newRequestId(): string {
  return crypto.randomUUID().replaceAll("-", "");
}

/** `.microsoft.com`, or the sovereign cloud's suffix for `china*` and `usgov*` regions. */
export function speechHostSuffix(region: string): string {
  const r = region.toLowerCase();
  if (r.startsWith("china")) return ".azure.cn";
  if (r.startsWith("usgov")) return ".azure.us";
  return ".microsoft.com";
}

/** The host a region's recognition (`stt`) or synthesis (`tts`) socket dials. */
export function speechHost(region: string, service: "stt" | "tts"): string {
  return `${region}.${service}.speech${speechHostSuffix(region)}`;
}

/** True for a plausible Azure region name (`eastus`, `westeurope`, `usgovvirginia`). */
export function isRegionName(v: unknown): v is string {
  return typeof v === "string" && /^[a-z][a-z0-9]{1,40}$/.test(v);
}

function headerLines(
  path: string,
  requestId: string,
  contentType: string | undefined,
  extra: Record<string, string>,
): string {
  let out = `Path: ${path}${CRLF}X-RequestId: ${requestId}${CRLF}` +
    `X-Timestamp: ${new Date().toISOString()}${CRLF}`;
  if (contentType !== undefined) out += `Content-Type: ${contentType}${CRLF}`;
  for (const [k, v] of Object.entries(extra)) out += `${k}: ${v}${CRLF}`;
  return out;
}

/** A text message: header lines, a blank line, the body. */
export function encodeTextMessage(
  path: string,
  requestId: string,
  contentType: string,
  body: string,
  extra: Record<string, string> = {},
): string {
  return `${headerLines(path, requestId, contentType, extra)}${CRLF}${body}`;
}

/**
 * A binary message: header length (2 bytes, big-endian), the header lines, the payload. An
 * absent payload is the SDK's end-of-audio marker.
 */
export function encodeBinaryMessage(
  path: string,
  requestId: string,
  contentType: string | undefined,
  payload: Uint8Array | undefined,
  extra: Record<string, string> = {},
): Uint8Array {
  const head = encoder.encode(headerLines(path, requestId, contentType, extra));
  const out = new Uint8Array(2 + head.length + (payload?.length ?? 0));
  out[0] = (head.length >> 8) & 0xff;
  out[1] = head.length & 0xff;
  out.set(head, 2);
  if (payload !== undefined) out.set(payload, 2 + head.length);
  return out;
}

function parseHeaders(block: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of block.split(/\r?\n/)) {
    const colon = line.indexOf(":");
    if (colon <= 0) continue;
    out[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return out;
}

function message(headers: Record<string, string>, body: Partial<SpeechMessage>): SpeechMessage {
  return {
    path: (headers.path ?? "").toLowerCase(),
    requestId: headers["x-requestid"] ?? "",
    headers,
    ...body,
  };
}

/**
 * Decode a text (string) or binary (ArrayBuffer, Uint8Array) message. A binary message shorter
 * than its header length is a `protocol` error.
 */
export function decodeSpeechMessage(data: unknown): SpeechMessage {
  if (typeof data === "string") {
    const split = data.indexOf(`${CRLF}${CRLF}`);
    const head = split < 0 ? data : data.slice(0, split);
    return message(parseHeaders(head), { text: split < 0 ? "" : data.slice(split + 4) });
  }
  const bytes = data instanceof Uint8Array
    ? data
    : data instanceof ArrayBuffer
    ? new Uint8Array(data)
    : undefined;
  if (bytes === undefined || bytes.length < 2) {
    throw new FlowcatError("protocol", "azure speech: binary message without a header length");
  }
  const headLength = (bytes[0] << 8) | bytes[1];
  if (bytes.length < 2 + headLength) {
    throw new FlowcatError("protocol", "azure speech: binary message shorter than its header");
  }
  const headers = parseHeaders(decoder.decode(bytes.subarray(2, 2 + headLength)));
  const rest = bytes.subarray(2 + headLength);
  return message(headers, rest.length > 0 ? { binary: rest } : {});
}

/**
 * The 44-byte WAV header the SDK sends as the first `audio` message (content type
 * `audio/x-wav`): 16-bit mono PCM at `sampleRate`, RIFF and data sizes 0 (a live stream).
 */
export function wavHeader(sampleRate: number): Uint8Array {
  const out = new Uint8Array(44);
  const v = new DataView(out.buffer);
  out.set(encoder.encode("RIFF"), 0);
  v.setUint32(4, 0, true);
  out.set(encoder.encode("WAVEfmt "), 8);
  v.setUint32(16, 16, true);
  v.setUint16(20, 1, true); // PCM
  v.setUint16(22, 1, true); // mono
  v.setUint32(24, sampleRate, true);
  v.setUint32(28, sampleRate * 2, true);
  v.setUint16(32, 2, true);
  v.setUint16(34, 16, true);
  out.set(encoder.encode("data"), 36);
  v.setUint32(40, 0, true);
  return out;
}

/**
 * The `speech.config` body the SDK sends once per connection with telemetry off: only
 * `context.system` (ServiceRecognizerBase.sendSpeechServiceConfig).
 */
export function speechConfigBody(): string {
  return JSON.stringify({
    context: {
      system: { name: "SpeechSDK", version: "1.44.0", build: "JavaScript", lang: "JavaScript" },
    },
  });
}

/**
 * The `speech.context` body that opens each recognition turn: an empty `phraseDetection`, or
 * conversation segmentation after `silenceMs` of silence when one is set
 * (ServiceRecognizerBase.setSpeechSegmentationTimeoutJson).
 */
export function speechContextBody(silenceMs?: number): string {
  if (silenceMs === undefined) return JSON.stringify({ phraseDetection: {} });
  return JSON.stringify({
    phraseDetection: {
      mode: "Conversation",
      conversation: { segmentation: { mode: "Custom", segmentationSilenceTimeoutMs: silenceMs } },
    },
  });
}

/** The upgrade headers: the resource key and the connection id the SDK sends. */
export function speechUpgradeHeaders(key: string): Record<string, string> {
  return { [AZURE_SPEECH_AUTH_HEADER]: key, "X-ConnectionId": newRequestId() };
}

/** A JSON body, or undefined when it is not a JSON object. */
export function jsonBody(msg: SpeechMessage): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(msg.text ?? "");
    return typeof v === "object" && v !== null && !Array.isArray(v) ? v : undefined;
  } catch {
    return undefined;
  }
}
