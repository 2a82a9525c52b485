/**
 * Speechmatics realtime speech-to-text over WebSocket (`wss://eu2.rt.speechmatics.com/v2`), on
 * the shared client of providers/ws_stt.ts.
 *
 * The upgrade carries `Authorization: Bearer <key>`. The client opens with `StartRecognition`
 * (raw `pcm_s16le` audio format, the transcription config with partials and an end-of-utterance
 * silence trigger) and waits for `RecognitionStarted`; audio then goes as binary `AddAudio`
 * messages. `AddPartialTranscript` is interim, `AddTranscript` final words, `EndOfUtterance`
 * ends the utterance. `ForceEndOfUtterance` is sent when the local VAD hears the end of
 * speech, `EndOfStream {last_seq_no}` on stop. Wire shapes and sources:
 * docs/providers/speechmatics.md.
 *
 * @example
 * ```ts
 * import { createSpeechmaticsStt } from "@flowcat/flowcat/stt/speechmatics";
 * declare const key: string;
 * const stt = createSpeechmaticsStt({ provider: "speechmatics", apiKey: key, language: "en" });
 * ```
 *
 * Permissions: `--allow-net=eu2.rt.speechmatics.com:443` (or the `url` given).
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import type { SttService } from "../../core/seams.ts";
import type { ServiceOptions } from "../service_options.ts";
import { isJsonObject, parseJsonMessage, wsRoot } from "../ws_client.ts";
import { type SttEvent, WsStt, type WsSttDialect } from "../ws_stt.ts";
import { numberOption, requireKey, stringOption } from "../service_option_values.ts";
import { SPEECHMATICS_DEFAULT_MODEL, SPEECHMATICS_HOST } from "./defaults.ts";

export type { SttEvent, WsSttDialect, WsSttEndpoint } from "../ws_stt.ts";

export { SPEECHMATICS_DEFAULT_MODEL } from "./defaults.ts";
export type { ServiceOptions } from "../service_options.ts";

/** Where the realtime API lives. */
export const SPEECHMATICS_DEFAULT_URL = `wss://${SPEECHMATICS_HOST}/v2`;

/** Speechmatics error `type`s that mean the key was refused. */
const AUTH_ERRORS = new Set(["not_authorised", "insufficient_funds", "not_allowed"]);

/** The `StartRecognition` message of one session (exported for tests). */
export function speechmaticsStart(opts: ServiceOptions): Record<string, unknown> {
  const p = opts.provider;
  const rate = numberOption(opts, "sample_rate") ?? 16000;
  if (![8000, 16000].includes(rate)) {
    throw new FlowcatError("config", `${p}: options.sample_rate must be 8000 or 16000`);
  }
  const silence = numberOption(opts, "end_of_utterance_silence_trigger") ?? 0.5;
  if (!(silence > 0 && silence <= 2)) {
    throw new FlowcatError(
      "config",
      `${p}: options.end_of_utterance_silence_trigger must be seconds in (0, 2]`,
    );
  }
  const maxDelay = numberOption(opts, "max_delay");
  const domain = stringOption(opts, "domain");
  return {
    message: "StartRecognition",
    audio_format: { type: "raw", encoding: "pcm_s16le", sample_rate: rate },
    transcription_config: {
      // Speechmatics names languages by their ISO 639-1 code alone (en, es, cmn...).
      language: (opts.language ?? "en").split("-")[0].toLowerCase(),
      operating_point: opts.model ?? SPEECHMATICS_DEFAULT_MODEL,
      enable_partials: true,
      ...(maxDelay !== undefined ? { max_delay: maxDelay } : {}),
      ...(domain !== undefined ? { domain } : {}),
      conversation_config: { end_of_utterance_silence_trigger: silence },
    },
  };
}

/** Decode one server message. */
export function parseSpeechmaticsMessage(data: unknown): SttEvent[] {
  const m = parseJsonMessage(data);
  if (m === undefined) return [];
  const transcript = () =>
    isJsonObject(m.metadata) && typeof m.metadata.transcript === "string"
      ? m.metadata.transcript
      : "";
  switch (m.message) {
    case "RecognitionStarted":
      return [{ type: "ready" }];
    case "AddPartialTranscript":
      return [{ type: "partial", text: transcript() }];
    case "AddTranscript":
      return [{ type: "final", text: transcript() }];
    case "EndOfUtterance":
      return [{ type: "end" }];
    case "Error": {
      const type = typeof m.type === "string" ? m.type : "error";
      const reason = typeof m.reason === "string" ? m.reason : "";
      const kind = AUTH_ERRORS.has(type) ? "auth" : "protocol";
      return [{ type: "error", kind, message: `${type}${reason ? `: ${reason}` : ""}` }];
    }
    default:
      return []; // AudioAdded, Info, Warning, EndOfTranscript
  }
}

/** Speechmatics' wire for the shared streaming client. */
export function speechmaticsDialect(opts: ServiceOptions): WsSttDialect {
  const key = requireKey(opts, "SPEECHMATICS_API_KEY");
  const start = speechmaticsStart(opts);
  const base = wsRoot(opts.baseUrl ?? SPEECHMATICS_DEFAULT_URL);
  const url = /\/v2$/.test(base) ? base : `${base}/v2`;
  const rate = (start.audio_format as { sample_rate: number }).sample_rate;
  return {
    sampleRate: rate,
    awaitReady: true,
    endpoint: () => Promise.resolve({ url, headers: { Authorization: `Bearer ${key}` } }),
    opening: () => [JSON.stringify(start)],
    audio: (pcm) => pcm,
    parse: parseSpeechmaticsMessage,
    finalize: () => JSON.stringify({ message: "ForceEndOfUtterance" }),
    closing: (sent) => JSON.stringify({ message: "EndOfStream", last_seq_no: sent }),
  };
}

/** Factory for the server's provider registry: a Speechmatics realtime STT client. */
export function createSpeechmaticsStt(opts: ServiceOptions): SttService {
  return new WsStt(opts, speechmaticsDialect(opts));
}
