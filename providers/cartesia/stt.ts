/**
 * Cartesia ink speech-to-text over WebSocket (`wss://api.cartesia.ai/stt/websocket`), on the
 * shared client of providers/ws_stt.ts.
 *
 * The upgrade carries the session in the query (`model`, `language`, `encoding=pcm_s16le`,
 * `sample_rate`, `cartesia_version`, optional `min_volume` and `max_silence_duration_secs`) and
 * the key in `X-API-Key`. Audio goes as binary PCM; `transcript` messages carry `text`,
 * `is_final` and `language`: a final one is one Transcription. The text `finalize` is sent when
 * the local VAD hears the end of speech (answered by `flush_done`), `done` on stop.
 * Wire shapes and sources: docs/providers/cartesia.md.
 *
 * @example
 * ```ts
 * import { createCartesiaStt } from "@flowcat/flowcat/stt/cartesia";
 * declare const key: string;
 * const stt = createCartesiaStt({ provider: "cartesia", apiKey: key, language: "en" });
 * ```
 *
 * Permissions: `--allow-net=api.cartesia.ai:443` (or the `url` given).
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import type { SttService } from "../../core/seams.ts";
import type { ServiceOptions } from "../service_options.ts";
import { parseJsonMessage, wsRoot } from "../ws_client.ts";
import { type SttEvent, WsStt, type WsSttDialect } from "../ws_stt.ts";
import { numberOption, requireKey, stringOption } from "../service_option_values.ts";
import { CARTESIA_STT_DEFAULT_MODEL, CARTESIA_STT_HOST, CARTESIA_STT_VERSION } from "./defaults.ts";

export type { SttEvent, WsSttDialect, WsSttEndpoint } from "../ws_stt.ts";

export { CARTESIA_STT_DEFAULT_MODEL } from "./defaults.ts";
export type { ServiceOptions } from "../service_options.ts";

/** The API root. */
export const CARTESIA_STT_DEFAULT_URL = `wss://${CARTESIA_STT_HOST}`;

/** The session query of one connection (exported for tests). */
export function cartesiaSttQuery(opts: ServiceOptions): URLSearchParams {
  const p = opts.provider;
  const rate = numberOption(opts, "sample_rate") ?? 16000;
  if (![8000, 16000].includes(rate)) {
    throw new FlowcatError("config", `${p}: options.sample_rate must be 8000 or 16000`);
  }
  const q = new URLSearchParams({
    model: opts.model ?? CARTESIA_STT_DEFAULT_MODEL,
    // Cartesia names languages by their ISO 639-1 code alone.
    language: (opts.language ?? "en").split("-")[0].toLowerCase(),
    encoding: "pcm_s16le",
    sample_rate: String(rate),
    cartesia_version: stringOption(opts, "cartesia_version") ?? CARTESIA_STT_VERSION,
  });
  for (const k of ["min_volume", "max_silence_duration_secs"]) {
    const v = numberOption(opts, k);
    if (v !== undefined) q.set(k, String(v));
  }
  return q;
}

/** Decode one server message. */
export function parseCartesiaSttMessage(data: unknown): SttEvent[] {
  const m = parseJsonMessage(data);
  if (m === undefined) return [];
  if (m.type === "transcript") {
    const text = typeof m.text === "string" ? m.text : "";
    const lang = typeof m.language === "string" && m.language ? { language: m.language } : {};
    return m.is_final === true
      ? [{ type: "final", text, ...lang }, { type: "end" }]
      : [{ type: "partial", text, ...lang }];
  }
  if (m.type === "error") {
    const why = typeof m.message === "string"
      ? m.message
      : typeof m.error === "string"
      ? m.error
      : "error";
    const status = Number(m.status_code ?? m.code);
    const kind = status === 401 || status === 403 ? "auth" : "protocol";
    return [{ type: "error", kind, message: why }];
  }
  return []; // flush_done, done
}

/** Cartesia ink's wire for the shared streaming client. */
export function cartesiaSttDialect(opts: ServiceOptions): WsSttDialect {
  const key = requireKey(opts, "CARTESIA_API_KEY");
  const query = cartesiaSttQuery(opts);
  const url = `${wsRoot(opts.baseUrl ?? CARTESIA_STT_DEFAULT_URL)}/stt/websocket?${query}`;
  return {
    sampleRate: Number(query.get("sample_rate")),
    endpoint: () => Promise.resolve({ url, headers: { "X-API-Key": key } }),
    audio: (pcm) => pcm,
    parse: parseCartesiaSttMessage,
    finalize: () => "finalize",
    closing: () => "done",
  };
}

/** Factory for the server's provider registry: a Cartesia ink STT client. */
export function createCartesiaStt(opts: ServiceOptions): SttService {
  return new WsStt(opts, cartesiaSttDialect(opts));
}
