/**
 * Soniox realtime speech-to-text over WebSocket
 * (`wss://stt-rt.soniox.com/transcribe-websocket`), on the shared client of providers/ws_stt.ts.
 *
 * The first message is a JSON configuration holding the key (`api_key`, `model`,
 * `audio_format: pcm_s16le`, `sample_rate`, `num_channels`, `language_hints`,
 * `enable_endpoint_detection`); audio then goes as binary PCM. Responses carry `tokens`, each
 * with `text` (spaces included) and `is_final`: final tokens are held until the `<end>`
 * endpoint token (or `<fin>`, the answer to a `finalize` request) ends the utterance; the
 * held and the non-final tokens so far are an InterimTranscription. A refused key comes back
 * as `{error_code: 401}`. `{"type":"finalize"}` is sent when the local VAD hears the end of
 * speech, `{"type":"keepalive"}` while no audio flows, an empty message on stop.
 * Wire shapes and sources: docs/providers/soniox.md.
 *
 * @example
 * ```ts
 * import { createSonioxStt } from "@flowcat/flowcat/stt/soniox";
 * declare const key: string;
 * const stt = createSonioxStt({ provider: "soniox", apiKey: key, language: "en" });
 * ```
 *
 * Permissions: `--allow-net=stt-rt.soniox.com:443` (or the `url` given).
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import type { SttService } from "../../core/seams.ts";
import type { ServiceOptions } from "../service_options.ts";
import { isJsonObject, parseJsonMessage, wsRoot } from "../ws_client.ts";
import { type SttEvent, WsStt, type WsSttDialect } from "../ws_stt.ts";
import { numberOption, requireKey, stringOption } from "../service_option_values.ts";
import { SONIOX_DEFAULT_MODEL, SONIOX_HOST } from "./defaults.ts";

export type { SttEvent, WsSttDialect, WsSttEndpoint } from "../ws_stt.ts";

export { SONIOX_DEFAULT_MODEL } from "./defaults.ts";
export type { ServiceOptions } from "../service_options.ts";

/** Where the realtime API lives. */
export const SONIOX_DEFAULT_URL = `wss://${SONIOX_HOST}`;
/** Endpoint token: Soniox heard the end of an utterance. */
const END = "<end>";
/** Finalized token: the answer to a `finalize` request. */
const FIN = "<fin>";

/** The configuration message of one connection, key left out (exported for tests). */
export function sonioxConfig(opts: ServiceOptions): Record<string, unknown> {
  const p = opts.provider;
  const rate = numberOption(opts, "sample_rate") ?? 16000;
  if (![8000, 16000].includes(rate)) {
    throw new FlowcatError("config", `${p}: options.sample_rate must be 8000 or 16000`);
  }
  const hints = opts.options?.language_hints ??
    (opts.language ? [opts.language.split("-")[0].toLowerCase()] : undefined);
  if (
    hints !== undefined && (!Array.isArray(hints) || !hints.every((h) => typeof h === "string"))
  ) {
    throw new FlowcatError("config", `${p}: options.language_hints must be a list of strings`);
  }
  const context = stringOption(opts, "context");
  return {
    model: opts.model ?? SONIOX_DEFAULT_MODEL,
    audio_format: "pcm_s16le",
    sample_rate: rate,
    num_channels: 1,
    enable_endpoint_detection: true,
    ...(hints ? { language_hints: hints } : {}),
    ...(context !== undefined ? { context } : {}),
  };
}

/** Turns Soniox token responses into events; holds the final tokens of the open utterance. */
export class SonioxTokens {
  #final = "";

  /** Forget a half-heard utterance (a new connection). */
  reset(): void {
    this.#final = "";
  }

  /** Decode one server message. */
  parse(data: unknown): SttEvent[] {
    const m = parseJsonMessage(data);
    if (m === undefined) return [];
    const out: SttEvent[] = [];
    let pending = "";
    for (const t of Array.isArray(m.tokens) ? m.tokens : []) {
      if (!isJsonObject(t) || typeof t.text !== "string") continue;
      if (t.is_final !== true) pending += t.text;
      else if (t.text === END || t.text === FIN) {
        if (this.#final.trim()) out.push({ type: "final", text: this.#final.trim() });
        out.push({ type: "end" });
        this.#final = "";
      } else this.#final += t.text;
    }
    const sofar = (this.#final + pending).trim();
    if (sofar) out.push({ type: "partial", text: sofar });
    if (m.error_code !== undefined || m.error_message !== undefined) {
      const code = Number(m.error_code);
      const why = typeof m.error_message === "string" ? m.error_message : "error";
      const kind = code === 401 || code === 403 ? "auth" : "protocol";
      out.push({ type: "error", kind, message: `${Number.isNaN(code) ? "" : `${code} `}${why}` });
    }
    return out;
  }
}

/** Soniox's wire for the shared streaming client. */
export function sonioxDialect(opts: ServiceOptions): WsSttDialect {
  const key = requireKey(opts, "SONIOX_API_KEY");
  const config = sonioxConfig(opts);
  const url = `${wsRoot(opts.baseUrl ?? SONIOX_DEFAULT_URL)}/transcribe-websocket`;
  const tokens = new SonioxTokens();
  return {
    sampleRate: config.sample_rate as number,
    endpoint: () => Promise.resolve({ url, headers: {} }),
    opening: () => {
      tokens.reset();
      return [JSON.stringify({ api_key: key, ...config })];
    },
    audio: (pcm) => pcm,
    parse: (data) => tokens.parse(data),
    finalize: () => JSON.stringify({ type: "finalize" }),
    // An empty message ends the audio; Soniox answers `finished` and closes.
    closing: () => "",
    keepalive: { message: JSON.stringify({ type: "keepalive" }), everyMs: 5000 },
  };
}

/** Factory for the server's provider registry: a Soniox realtime STT client. */
export function createSonioxStt(opts: ServiceOptions): SttService {
  return new WsStt(opts, sonioxDialect(opts));
}
