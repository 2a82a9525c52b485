/**
 * Gladia live (v2) speech-to-text, on the shared client of providers/ws_stt.ts.
 *
 * Each connection starts with `POST https://api.gladia.io/v2/live` (header `X-Gladia-Key`, the
 * session configuration as JSON), answered by `{id, url}`; the WebSocket goes to that `url`,
 * which holds the session's token (so a reconnect sets up a new session). Audio goes as
 * `{"type":"audio_chunk","data":{"chunk":<base64 PCM>}}`; `transcript` messages carry an
 * `utterance` with `is_final`: a final one is one Transcription. An empty chunk every 20 s keeps
 * a quiet session open (Gladia closes one after 30 s without audio); `stop_recording` ends it.
 * Wire shapes and sources: docs/providers/gladia.md.
 *
 * @example
 * ```ts
 * import { createGladiaStt } from "@flowcat/flowcat/stt/gladia";
 * declare const key: string;
 * const stt = createGladiaStt({ provider: "gladia", apiKey: key, language: "fr" });
 * ```
 *
 * Permissions: `--allow-net=api.gladia.io:443` (or the `url` given).
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import type { SttService } from "../../core/seams.ts";
import { providerFetch } from "../http.ts";
import type { ServiceOptions } from "../service_options.ts";
import { isJsonObject, parseJsonMessage } from "../ws_client.ts";
import { type SttEvent, WsStt, type WsSttDialect } from "../ws_stt.ts";
import { numberOption, requireKey, stringOption } from "../service_option_values.ts";
import { GLADIA_DEFAULT_MODEL, GLADIA_HOST } from "./defaults.ts";

export type { SttEvent, WsSttDialect, WsSttEndpoint } from "../ws_stt.ts";

export { GLADIA_DEFAULT_MODEL } from "./defaults.ts";
export type { ServiceOptions } from "../service_options.ts";

/** The API root. */
export const GLADIA_DEFAULT_URL = `https://${GLADIA_HOST}`;

const RATES = [8000, 16000];

/** The session configuration POSTed to `/v2/live` (exported for tests). */
export function gladiaSession(opts: ServiceOptions): Record<string, unknown> {
  const p = opts.provider;
  const rate = numberOption(opts, "sample_rate") ?? 16000;
  if (!RATES.includes(rate)) {
    throw new FlowcatError("config", `${p}: options.sample_rate must be 8000 or 16000`);
  }
  const endpointing = numberOption(opts, "endpointing");
  if (endpointing !== undefined && !(endpointing >= 0.01 && endpointing <= 10)) {
    throw new FlowcatError("config", `${p}: options.endpointing must be seconds in [0.01, 10]`);
  }
  return {
    encoding: "wav/pcm",
    bit_depth: 16,
    sample_rate: rate,
    channels: 1,
    model: opts.model ?? GLADIA_DEFAULT_MODEL,
    ...(endpointing !== undefined ? { endpointing } : {}),
    ...(opts.language
      ? {
        // Gladia names languages by their ISO 639-1 code alone.
        language_config: {
          languages: [opts.language.split("-")[0].toLowerCase()],
          code_switching: false,
        },
      }
      : {}),
    messages_config: { receive_partial_transcripts: true, receive_final_transcripts: true },
  };
}

/** Decode one live message. */
export function parseGladiaMessage(data: unknown): SttEvent[] {
  const m = parseJsonMessage(data);
  if (m === undefined || !isJsonObject(m.data)) return [];
  if (m.type === "transcript" && isJsonObject(m.data.utterance)) {
    const u = m.data.utterance;
    const text = typeof u.text === "string" ? u.text : "";
    const language = typeof u.language === "string" && u.language ? u.language : undefined;
    const lang = language ? { language } : {};
    return m.data.is_final === true
      ? [{ type: "final", text, ...lang }, { type: "end" }]
      : [{ type: "partial", text, ...lang }];
  }
  if (m.type === "error" || (m.error !== undefined && m.error !== null)) {
    const what = isJsonObject(m.error) && typeof m.error.message === "string"
      ? m.error.message
      : typeof m.data.message === "string"
      ? m.data.message
      : "error";
    return [{ type: "error", kind: "protocol", message: what }];
  }
  return []; // audio_chunk acknowledgements, speech_start/end, post-processing
}

/** Ask Gladia for a live session; its answer holds the WebSocket URL. */
async function setUp(
  opts: ServiceOptions,
  key: string,
  body: string,
  signal: AbortSignal,
): Promise<string> {
  const root = (opts.baseUrl ?? GLADIA_DEFAULT_URL).replace(/^ws(s?):\/\//i, "http$1://")
    .replace(/\/+$/, "");
  const region = stringOption(opts, "region");
  const url = `${root}/v2/live${region ? `?region=${encodeURIComponent(region)}` : ""}`;
  const res = await providerFetch(opts.provider, url, {
    method: "POST",
    headers: { "x-gladia-key": key, "content-type": "application/json" },
    body,
  }, { signal, timeoutMs: opts.timeoutMs, fetch: opts.fetch });
  const session = await res.json().catch(() => undefined);
  if (!isJsonObject(session) || typeof session.url !== "string") {
    throw new FlowcatError("protocol", `${opts.provider}: session answer has no url`);
  }
  return session.url;
}

/** Gladia's wire for the shared streaming client. */
export function gladiaDialect(opts: ServiceOptions): WsSttDialect {
  const key = requireKey(opts, "GLADIA_API_KEY");
  const session = gladiaSession(opts);
  const body = JSON.stringify(session);
  stringOption(opts, "region"); // checked now, not at the first dial
  return {
    sampleRate: session.sample_rate as number,
    endpoint: async (signal) => ({ url: await setUp(opts, key, body, signal), headers: {} }),
    audio: (pcm) => JSON.stringify({ type: "audio_chunk", data: { chunk: pcm.toBase64() } }),
    parse: parseGladiaMessage,
    closing: () => JSON.stringify({ type: "stop_recording" }),
    keepalive: {
      message: JSON.stringify({ type: "audio_chunk", data: { chunk: "" } }),
      everyMs: 20_000,
    },
  };
}

/** Factory for the server's provider registry: a Gladia live STT client. */
export function createGladiaStt(opts: ServiceOptions): SttService {
  return new WsStt(opts, gladiaDialect(opts));
}
