/**
 * ElevenLabs Scribe realtime speech-to-text over WebSocket
 * (`wss://api.elevenlabs.io/v1/speech-to-text/realtime`), on the shared client of
 * providers/ws_stt.ts.
 *
 * The upgrade carries the session in the query (`model_id`, `audio_format=pcm_<rate>`,
 * `commit_strategy`, optional `language_code` and VAD tuning) and the key in `xi-api-key`. The
 * server opens with `session_started`; audio goes as `input_audio_chunk` JSON messages (base64
 * PCM). `partial_transcript` is interim; `committed_transcript` ends a segment and is one
 * Transcription. With `commit_strategy: vad` (the default) Scribe commits at the end of speech
 * itself; with `manual`, a commit is sent when the local VAD hears the end of speech.
 * Wire shapes and sources: docs/providers/elevenlabs.md.
 *
 * @example
 * ```ts
 * import { createElevenLabsStt } from "@flowcat/flowcat/stt/elevenlabs";
 * declare const key: string;
 * const stt = createElevenLabsStt({ provider: "elevenlabs", apiKey: key, language: "en" });
 * ```
 *
 * Permissions: `--allow-net=api.elevenlabs.io:443` (or the `url` given).
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import type { SttService } from "../../core/seams.ts";
import type { ServiceOptions } from "../service_options.ts";
import { parseJsonMessage, wsRoot } from "../ws_client.ts";
import { type SttEvent, WsStt, type WsSttDialect } from "../ws_stt.ts";
import { numberOption, requireKey, stringOption } from "../service_option_values.ts";
import { ELEVENLABS_STT_DEFAULT_MODEL, ELEVENLABS_STT_HOST } from "./defaults.ts";

export type { SttEvent, WsSttDialect, WsSttEndpoint } from "../ws_stt.ts";

export { ELEVENLABS_STT_DEFAULT_MODEL } from "./defaults.ts";
export type { ServiceOptions } from "../service_options.ts";

/** The API root. */
export const ELEVENLABS_STT_DEFAULT_URL = `wss://${ELEVENLABS_STT_HOST}`;

/** VAD tuning passed through to the query as it is. */
const VAD = [
  "vad_silence_threshold_secs",
  "vad_threshold",
  "min_speech_duration_ms",
  "min_silence_duration_ms",
] as const;

/** The session query of one connection (exported for tests). */
export function elevenLabsSttQuery(opts: ServiceOptions): URLSearchParams {
  const p = opts.provider;
  const rate = numberOption(opts, "sample_rate") ?? 16000;
  if (![8000, 16000].includes(rate)) {
    throw new FlowcatError("config", `${p}: options.sample_rate must be 8000 or 16000`);
  }
  const commit = stringOption(opts, "commit_strategy") ?? "vad";
  if (commit !== "vad" && commit !== "manual") {
    throw new FlowcatError("config", `${p}: options.commit_strategy must be vad or manual`);
  }
  const q = new URLSearchParams({
    model_id: opts.model ?? ELEVENLABS_STT_DEFAULT_MODEL,
    audio_format: `pcm_${rate}`,
    commit_strategy: commit,
  });
  if (opts.language) q.set("language_code", opts.language.split("-")[0].toLowerCase());
  for (const k of VAD) {
    const v = numberOption(opts, k);
    if (v !== undefined) q.set(k, String(v));
  }
  return q;
}

/** Decode one server message. */
export function parseElevenLabsSttMessage(data: unknown): SttEvent[] {
  const m = parseJsonMessage(data);
  if (m === undefined || typeof m.message_type !== "string") return [];
  const type = m.message_type;
  const text = typeof m.text === "string" ? m.text : "";
  switch (type) {
    case "session_started":
      return [{ type: "ready" }];
    case "partial_transcript":
      return [{ type: "partial", text }];
    case "committed_transcript":
      return [{ type: "final", text }, { type: "end" }];
    case "committed_transcript_with_timestamps":
      return []; // the same words again, with timings
  }
  // Every other message type is a fault: auth_error, quota_exceeded, rate_limited, input_error...
  const why = typeof m.error === "string"
    ? m.error
    : typeof m.message === "string"
    ? m.message
    : "";
  return [{
    type: "error",
    kind: type === "auth_error" ? "auth" : "protocol",
    message: `${type}${why ? `: ${why}` : ""}`,
  }];
}

/** ElevenLabs Scribe's wire for the shared streaming client. */
export function elevenLabsSttDialect(opts: ServiceOptions): WsSttDialect {
  const key = requireKey(opts, "ELEVENLABS_API_KEY");
  const query = elevenLabsSttQuery(opts);
  const rate = Number(query.get("audio_format")!.slice(4));
  const base = wsRoot(opts.baseUrl ?? ELEVENLABS_STT_DEFAULT_URL).replace(/\/v1$/, "");
  const url = `${base}/v1/speech-to-text/realtime?${query}`;
  const chunk = (b64: string, commit: boolean) =>
    JSON.stringify({
      message_type: "input_audio_chunk",
      audio_base_64: b64,
      commit,
      sample_rate: rate,
    });
  const manual = query.get("commit_strategy") === "manual";
  return {
    sampleRate: rate,
    awaitReady: true,
    endpoint: () => Promise.resolve({ url, headers: { "xi-api-key": key } }),
    audio: (pcm) => chunk(pcm.toBase64(), false),
    parse: parseElevenLabsSttMessage,
    finalize: () => manual ? chunk("", true) : undefined,
  };
}

/** Factory for the server's provider registry: an ElevenLabs Scribe realtime STT client. */
export function createElevenLabsStt(opts: ServiceOptions): SttService {
  return new WsStt(opts, elevenLabsSttDialect(opts));
}
