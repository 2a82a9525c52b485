/**
 * NVIDIA Riva streaming speech recognition over gRPC:
 * `/nvidia.riva.asr.RivaSpeechRecognition/StreamingRecognize`, by default on a local Riva server
 * in plaintext HTTP/2 (`http://127.0.0.1:50051`, Riva's default port); an `https://` URL speaks
 * TLS (NVIDIA's hosted endpoint `https://grpc.nvcf.nvidia.com` with `options.function_id`). The
 * stream handling is the shared gRPC recognizer (../grpc_stt.ts); this module is the wire.
 *
 * Field numbers are those of nvidia-riva/common `riva/proto/riva_asr.proto` and
 * `riva_audio.proto`: StreamingRecognizeRequest `streaming_config` 1, `audio_content` 2;
 * StreamingRecognitionConfig `config` 1, `interim_results` 2; RecognitionConfig `encoding` 1
 * (LINEAR_PCM = 1), `sample_rate_hertz` 2, `language_code` 3, `max_alternatives` 4,
 * `profanity_filter` 5, `speech_contexts` 6 (SpeechContext `phrases` 1, `boost` 4),
 * `audio_channel_count` 7, `enable_automatic_punctuation` 11, `model` 13,
 * `verbatim_transcripts` 14, `custom_configuration` 24 (map); StreamingRecognizeResponse
 * `results` 1; StreamingRecognitionResult `alternatives` 1, `is_final` 2;
 * SpeechRecognitionAlternative `transcript` 1.
 *
 * A key is optional (a local server wants none): when `RIVA_API_KEY` is set it is sent as
 * `authorization: Bearer`, as NVIDIA's hosted endpoint wants, with `function-id` metadata from
 * `options.function_id`.
 *
 * Options: `model` (default: the server picks), `language` (default `en-US`), and in
 * `options`: `interim_results` (default true), `punctuation` (default true),
 * `profanity_filter`, `verbatim_transcripts`, `phrases`, `boost` (for the phrases),
 * `function_id`, `custom_configuration` (string map).
 *
 * @example
 * ```ts
 * import { createRivaStt } from "@flowcat/flowcat/stt/riva";
 * const stt = createRivaStt({ provider: "riva", language: "en-US" });
 * ```
 *
 * Permissions: `--allow-net=127.0.0.1:50051` (or the `url` given).
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import type { SttService } from "../../core/seams.ts";
import { grpcTarget } from "../grpc.ts";
import { GrpcStreamingStt, type RecognizedText, type RecognizeWire } from "../grpc_stt.ts";
import { ProtoWriter, readMessage } from "../protobuf.ts";
import type { ServiceOptions } from "../service_options.ts";
import { RIVA_DEFAULT_URL } from "./defaults.ts";
export type { RecognizedText, RecognizeWire } from "../grpc_stt.ts";
export type { GrpcTarget } from "../grpc.ts";
export { RIVA_DEFAULT_URL } from "./defaults.ts";

export type { ServiceOptions } from "../service_options.ts";

/** The gRPC method. */
export const RIVA_ASR_PATH = "/nvidia.riva.asr.RivaSpeechRecognition/StreamingRecognize";
/** Rate the audio is sent at (Riva's ASR models run at 16 kHz). */
export const RIVA_SAMPLE_RATE = 16000;

/** The recognition settings a stream's first request carries. */
export interface RivaRecognitionSettings {
  /** BCP-47 tag. */
  languageCode: string;
  /** Model name as deployed (empty: the server picks). */
  model: string;
  /** Send interim results. */
  interimResults: boolean;
  /** Automatic punctuation. */
  punctuation: boolean;
  /** Mask profanities. */
  profanityFilter: boolean;
  /** No inverse text normalization. */
  verbatimTranscripts: boolean;
  /** Word boosting: phrases and their boost. */
  phrases: string[];
  /** Boost of the phrases. */
  boost: number;
  /** Plugin settings. */
  customConfiguration: Record<string, string>;
}

/** The first StreamingRecognizeRequest: `streaming_config` only. */
export function rivaConfigRequest(s: RivaRecognitionSettings): Uint8Array {
  let context: ProtoWriter | undefined;
  if (s.phrases.length > 0) {
    context = new ProtoWriter();
    for (const p of s.phrases) context.string(1, p);
    context.float(4, s.boost);
  }
  const config = new ProtoWriter()
    .int(1, 1) // LINEAR_PCM
    .int(2, RIVA_SAMPLE_RATE)
    .string(3, s.languageCode)
    .int(4, 1)
    .bool(5, s.profanityFilter)
    .message(6, context)
    .int(7, 1)
    .bool(11, s.punctuation)
    .string(13, s.model)
    .bool(14, s.verbatimTranscripts)
    .map(24, s.customConfiguration);
  const streaming = new ProtoWriter().message(1, config).bool(2, s.interimResults);
  return new ProtoWriter().message(1, streaming).finish();
}

/** A StreamingRecognizeRequest carrying audio. */
export function rivaAudioRequest(pcm: Uint8Array): Uint8Array {
  return new ProtoWriter().bytes(2, pcm).finish();
}

/** The results of one StreamingRecognizeResponse. */
export function parseRivaResponse(message: Uint8Array): RecognizedText[] {
  return readMessage(message).messages(1).map((r) => ({
    transcript: r.messages(1)[0]?.string(1) ?? "",
    isFinal: r.bool(2),
  }));
}

function settings(opts: ServiceOptions): RivaRecognitionSettings {
  const p = opts.provider;
  const o = opts.options ?? {};
  const bool = (key: string, dflt: boolean): boolean => {
    const v = o[key] ?? dflt;
    if (typeof v !== "boolean") {
      throw new FlowcatError("config", `${p}: options.${key} must be true or false`);
    }
    return v;
  };
  const phrases = o.phrases ?? [];
  if (!Array.isArray(phrases) || phrases.some((x) => typeof x !== "string")) {
    throw new FlowcatError("config", `${p}: options.phrases must be a list of strings`);
  }
  const boost = o.boost ?? 10;
  if (typeof boost !== "number" || !Number.isFinite(boost)) {
    throw new FlowcatError("config", `${p}: options.boost must be a number`);
  }
  const custom = o.custom_configuration ?? {};
  if (
    typeof custom !== "object" || custom === null ||
    Object.values(custom).some((v) => typeof v !== "string")
  ) {
    throw new FlowcatError("config", `${p}: options.custom_configuration must map strings`);
  }
  return {
    languageCode: opts.language || "en-US",
    model: opts.model ?? "",
    interimResults: bool("interim_results", true),
    punctuation: bool("punctuation", true),
    profanityFilter: bool("profanity_filter", false),
    verbatimTranscripts: bool("verbatim_transcripts", false),
    phrases: phrases as string[],
    boost,
    customConfiguration: custom as Record<string, string>,
  };
}

/**
 * The wire of a Riva client for `opts`; `caPem` replaces the system's TLS roots (a server with a
 * private CA).
 */
export function rivaWire(opts: ServiceOptions, caPem?: string): RecognizeWire {
  const config = rivaConfigRequest(settings(opts));
  const metadata: Record<string, string> = {};
  if (opts.apiKey) metadata.authorization = `Bearer ${opts.apiKey}`;
  const fn = opts.options?.function_id;
  if (fn !== undefined) {
    if (typeof fn !== "string" || fn === "") {
      throw new FlowcatError("config", `${opts.provider}: options.function_id must be a string`);
    }
    metadata["function-id"] = fn;
  }
  return {
    target: grpcTarget(opts.baseUrl || RIVA_DEFAULT_URL, caPem),
    path: RIVA_ASR_PATH,
    sampleRate: RIVA_SAMPLE_RATE,
    configRequest: () => config,
    audioRequest: rivaAudioRequest,
    parseResponse: parseRivaResponse,
    metadata: () => Promise.resolve(metadata),
  };
}

/** Make a Riva streaming ASR client. */
export function createRivaStt(opts: ServiceOptions): SttService {
  return new GrpcStreamingStt(opts, rivaWire(opts));
}
