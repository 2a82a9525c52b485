/**
 * Google Cloud Speech-to-Text v1 streaming recognition over gRPC:
 * `/google.cloud.speech.v1.Speech/StreamingRecognize` on `speech.googleapis.com:443` (TLS),
 * authorized by an OAuth bearer from a service-account key (auth.ts). The stream handling is
 * the shared gRPC recognizer (../grpc_stt.ts); this module is the wire.
 *
 * Field numbers are those of googleapis/googleapis `google/cloud/speech/v1/cloud_speech.proto`:
 * StreamingRecognizeRequest `streaming_config` 1, `audio_content` 2; StreamingRecognitionConfig
 * `config` 1, `single_utterance` 2, `interim_results` 3; RecognitionConfig `encoding` 1
 * (LINEAR16 = 1), `sample_rate_hertz` 2, `language_code` 3, `max_alternatives` 4,
 * `profanity_filter` 5, `speech_contexts` 6 (SpeechContext `phrases` 1),
 * `enable_automatic_punctuation` 11, `model` 13, `use_enhanced` 14; StreamingRecognizeResponse
 * `error` 1 (google.rpc.Status `code` 1, `message` 2), `results` 2; StreamingRecognitionResult
 * `alternatives` 1, `is_final` 2; SpeechRecognitionAlternative `transcript` 1.
 *
 * Options: `model` (default `latest_long`), `language` (default `en-US`), and in `options`:
 * `interim_results` (default true), `punctuation` (default true), `profanity_filter`,
 * `use_enhanced`, `phrases` (hint strings).
 *
 * @example
 * ```ts
 * import { createGoogleStt } from "@flowcat/flowcat/stt/google";
 * const keyJson = await Deno.readTextFile("/etc/flowcat/sa.json");
 * const stt = createGoogleStt({ provider: "google", apiKey: keyJson, language: "en-US" });
 * ```
 *
 * Permissions: `--allow-net=speech.googleapis.com:443,oauth2.googleapis.com:443`.
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import type { SttService } from "../../core/seams.ts";
import { grpcError, grpcTarget } from "../grpc.ts";
import { GrpcStreamingStt, type RecognizedText, type RecognizeWire } from "../grpc_stt.ts";
import { ProtoWriter, readMessage } from "../protobuf.ts";
import type { ServiceOptions } from "../service_options.ts";
import { googleCredential } from "./auth.ts";
import { GOOGLE_STT_DEFAULT_MODEL, GOOGLE_STT_DEFAULT_URL } from "./defaults.ts";
export type { RecognizedText, RecognizeWire } from "../grpc_stt.ts";
export type { GrpcTarget } from "../grpc.ts";
export { GOOGLE_STT_DEFAULT_MODEL, GOOGLE_STT_DEFAULT_URL } from "./defaults.ts";

export type { ServiceOptions } from "../service_options.ts";

/** The gRPC method. */
export const GOOGLE_STT_PATH = "/google.cloud.speech.v1.Speech/StreamingRecognize";
/** Rate the audio is sent at (Google's recommended rate). */
export const GOOGLE_STT_SAMPLE_RATE = 16000;

/** The recognition settings a stream's first request carries. */
export interface GoogleRecognitionSettings {
  /** BCP-47 tag. */
  languageCode: string;
  /** Model name. */
  model: string;
  /** Send interim results. */
  interimResults: boolean;
  /** Automatic punctuation. */
  punctuation: boolean;
  /** Mask profanities. */
  profanityFilter: boolean;
  /** Use the enhanced variant of the model. */
  useEnhanced: boolean;
  /** Phrase hints. */
  phrases: string[];
}

/** The first StreamingRecognizeRequest: `streaming_config` only. */
export function googleConfigRequest(s: GoogleRecognitionSettings): Uint8Array {
  const config = new ProtoWriter()
    .int(1, 1) // LINEAR16
    .int(2, GOOGLE_STT_SAMPLE_RATE)
    .string(3, s.languageCode)
    .bool(5, s.profanityFilter)
    .message(6, s.phrases.length > 0 ? phraseContext(s.phrases) : undefined)
    .bool(11, s.punctuation)
    .string(13, s.model)
    .bool(14, s.useEnhanced);
  const streaming = new ProtoWriter().message(1, config).bool(3, s.interimResults);
  return new ProtoWriter().message(1, streaming).finish();
}

function phraseContext(phrases: string[]): ProtoWriter {
  const w = new ProtoWriter();
  for (const p of phrases) w.string(1, p);
  return w;
}

/** A StreamingRecognizeRequest carrying audio. */
export function googleAudioRequest(pcm: Uint8Array): Uint8Array {
  return new ProtoWriter().bytes(2, pcm).finish();
}

/** The results of one StreamingRecognizeResponse; an in-band `error` throws. */
export function parseGoogleResponse(provider: string, message: Uint8Array): RecognizedText[] {
  const m = readMessage(message);
  const error = m.message(1);
  if (error !== undefined && error.int(1) !== 0) {
    throw grpcError(provider, error.int(1), error.string(2));
  }
  return m.messages(2).map((r) => ({
    transcript: r.messages(1)[0]?.string(1) ?? "",
    isFinal: r.bool(2),
  }));
}

function flag(o: Record<string, unknown>, key: string, dflt: boolean, provider: string): boolean {
  const v = o[key];
  if (v === undefined) return dflt;
  if (typeof v !== "boolean") {
    throw new FlowcatError("config", `${provider}: options.${key} must be true or false`);
  }
  return v;
}

/** Make a Google Cloud Speech streaming client: `apiKey` is the service-account key's JSON. */
export function createGoogleStt(opts: ServiceOptions): SttService {
  const p = opts.provider;
  const credential = googleCredential(opts);
  const o = opts.options ?? {};
  const phrases = o.phrases ?? [];
  if (!Array.isArray(phrases) || phrases.some((x) => typeof x !== "string")) {
    throw new FlowcatError("config", `${p}: options.phrases must be a list of strings`);
  }
  const settings: GoogleRecognitionSettings = {
    languageCode: opts.language || "en-US",
    model: opts.model || GOOGLE_STT_DEFAULT_MODEL,
    interimResults: flag(o, "interim_results", true, p),
    punctuation: flag(o, "punctuation", true, p),
    profanityFilter: flag(o, "profanity_filter", false, p),
    useEnhanced: flag(o, "use_enhanced", false, p),
    phrases: phrases as string[],
  };
  const config = googleConfigRequest(settings);
  const wire: RecognizeWire = {
    target: grpcTarget(opts.baseUrl || GOOGLE_STT_DEFAULT_URL),
    path: GOOGLE_STT_PATH,
    sampleRate: GOOGLE_STT_SAMPLE_RATE,
    configRequest: () => config,
    audioRequest: googleAudioRequest,
    parseResponse: (m) => parseGoogleResponse(p, m),
    metadata: credential.headers,
    refused: credential.refused,
  };
  return new GrpcStreamingStt(opts, wire);
}
