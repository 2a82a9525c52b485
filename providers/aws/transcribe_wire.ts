/**
 * Amazon Transcribe streaming over WebSocket, the wire: the presigned URL, the `AudioEvent`
 * messages the client sends and the `TranscriptEvent` / exception messages it receives.
 *
 * Source: Amazon Transcribe developer guide, "Setting up a WebSocket stream"
 * (docs.aws.amazon.com/transcribe/latest/dg/streaming-websocket.html) and the API reference
 * `StartStreamTranscription`; shapes as in aws-sdk-js-v3
 * clients/client-transcribe-streaming/src/models/models_0.ts (`TranscriptEvent`, `Result`,
 * `Alternative`). The URL is `wss://transcribestreaming.<region>.amazonaws.com:8443/
 * stream-transcription-websocket?language-code=..&media-encoding=pcm&sample-rate=..` presigned
 * with SigV4 (signing name `transcribe`, at most 300 s). Each audio chunk is an event-stream
 * message with headers `:content-type: application/octet-stream`, `:event-type: AudioEvent`,
 * `:message-type: event` and the raw PCM (16-bit little-endian mono) as payload; an empty one
 * ends the stream. Results arrive as `:event-type: TranscriptEvent` with the JSON payload
 * `{"Transcript":{"Results":[{"ResultId","IsPartial","Alternatives":[{"Transcript"}],...}]}}`;
 * failures as `:message-type: exception` (`BadRequestException`, `LimitExceededException`,
 * `InternalFailureException`, `ConflictException`, `ServiceUnavailableException`).
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import type { AwsAccess } from "./defaults.ts";
import { TRANSCRIBE } from "./defaults.ts";
import { encodeMessage, type EventMessage, headerString, stringHeaders } from "./event_stream.ts";
import { eventStreamError } from "./signed_http.ts";
import { encodeQuery, presignRequest } from "./sigv4.ts";

/** The WebSocket path of a standard (non-medical) transcription stream. */
export const TRANSCRIBE_PATH = "/stream-transcription-websocket";
/** PCM rates a phone or browser call sends (Transcribe takes 8 to 48 kHz). */
export const TRANSCRIBE_PCM_RATES: readonly number[] = [8000, 16000];
/** How long a presigned URL stays valid: AWS's maximum for Transcribe. */
export const TRANSCRIBE_URL_EXPIRES_S = 300;

/** What the stream is opened with. */
export interface TranscribeParams {
  /** BCP-47 language code, e.g. `en-US`. */
  languageCode: string;
  /** PCM sample rate, Hz. */
  sampleRate: number;
  /** A custom vocabulary's name. */
  vocabularyName?: string;
  /** Partial-result stabilization: `low`, `medium` or `high`. */
  stability?: "low" | "medium" | "high";
}

/**
 * The presigned `wss://` URL (or `ws://` for a local endpoint given as `http://`/`ws://`).
 * `base` overrides the regional endpoint (a proxy, a test fake).
 */
export async function transcribeUrl(
  params: TranscribeParams,
  access: AwsAccess,
  base: string | undefined,
  date: Date,
): Promise<string> {
  const root = (base ?? `wss://${TRANSCRIBE.host(access.region)}`)
    .replace(/^http(s?):\/\//i, "ws$1://").replace(/\/+$/, "");
  const url = new URL(`${root}${TRANSCRIBE_PATH}`);
  const query: [string, string][] = [
    ["language-code", params.languageCode],
    ["media-encoding", "pcm"],
    ["sample-rate", String(params.sampleRate)],
  ];
  if (params.vocabularyName) query.push(["vocabulary-name", params.vocabularyName]);
  if (params.stability) {
    query.push(["enable-partial-results-stabilization", "true"]);
    query.push(["partial-results-stability", params.stability]);
  }
  const signed = await presignRequest(
    { method: "GET", path: url.pathname, query, headers: [["host", url.host]] },
    access.credentials,
    { region: access.region, service: TRANSCRIBE.signingName, date },
    TRANSCRIBE_URL_EXPIRES_S,
  );
  return `${url.origin}${url.pathname}?${encodeQuery(signed.query)}`;
}

const AUDIO_HEADERS = stringHeaders({
  ":content-type": "application/octet-stream",
  ":event-type": "AudioEvent",
  ":message-type": "event",
});

/** One `AudioEvent` message carrying `pcm` (little-endian 16-bit bytes); empty ends the stream. */
export function audioEvent(pcm: Uint8Array): Uint8Array {
  return encodeMessage({ headers: AUDIO_HEADERS, payload: pcm });
}

/** One result of a `TranscriptEvent`. */
export interface TranscribeResult {
  /** Identifies the segment; partial results of one segment share it. */
  resultId: string;
  /** The best alternative's text. */
  text: string;
  /** True while Transcribe may still revise the segment. */
  partial: boolean;
  /** Language of the segment, when Transcribe reports one. */
  language?: string;
}

/** What one received message means. */
export type TranscribeMessage =
  | { type: "results"; results: TranscribeResult[] }
  | { type: "error"; error: FlowcatError }
  | { type: "ignored"; what: string };

/** Read one received event-stream message. */
export function parseTranscribeMessage(provider: string, msg: EventMessage): TranscribeMessage {
  const error = eventStreamError(provider, msg);
  if (error) return { type: "error", error };
  const event = headerString(msg, ":event-type") ?? "";
  if (event !== "TranscriptEvent") return { type: "ignored", what: event };
  let json: { Transcript?: { Results?: unknown } };
  try {
    json = JSON.parse(new TextDecoder().decode(msg.payload));
  } catch {
    return {
      type: "error",
      error: new FlowcatError("protocol", `${provider}: TranscriptEvent is not JSON`),
    };
  }
  const raw = Array.isArray(json?.Transcript?.Results) ? json.Transcript.Results : [];
  const results: TranscribeResult[] = [];
  for (const r of raw as Record<string, unknown>[]) {
    const alts = Array.isArray(r?.Alternatives) ? r.Alternatives as { Transcript?: unknown }[] : [];
    const text = typeof alts[0]?.Transcript === "string" ? alts[0].Transcript : "";
    const out: TranscribeResult = {
      resultId: typeof r.ResultId === "string" ? r.ResultId : "",
      text,
      partial: r.IsPartial === true,
    };
    if (typeof r.LanguageCode === "string") out.language = r.LanguageCode;
    results.push(out);
  }
  return { type: "results", results };
}
