/**
 * AssemblyAI Universal Streaming (v3) speech-to-text over WebSocket
 * (`wss://streaming.assemblyai.com/v3/ws`), on the shared client of providers/ws_stt.ts.
 *
 * The upgrade carries the key in `Authorization` (no scheme) and the session in the query
 * (`sample_rate`, `encoding=pcm_s16le`, `format_turns=true`, turn-detection tuning). The
 * server opens with `Begin`; audio goes as binary PCM in 50 ms messages (AssemblyAI refuses
 * chunks under 50 ms); `Turn` messages carry the words so far, and the one with
 * `end_of_turn` and `turn_is_formatted` is the final transcript. `ForceEndpoint` is sent when
 * the local VAD hears the end of speech, `Terminate` on stop (answered by `Termination`).
 * Wire shapes and sources: docs/providers/assemblyai.md.
 *
 * @example
 * ```ts
 * import { createAssemblyAiStt } from "@flowcat/flowcat/stt/assemblyai";
 * declare const key: string;
 * const stt = createAssemblyAiStt({ provider: "assemblyai", apiKey: key });
 * ```
 *
 * Permissions: `--allow-net=streaming.assemblyai.com:443` (or the `url` given).
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import type { SttService } from "../../core/seams.ts";
import type { ServiceOptions } from "../service_options.ts";
import { isJsonObject, parseJsonMessage, wsRoot } from "../ws_client.ts";
import { type SttEvent, WsStt, type WsSttDialect } from "../ws_stt.ts";
import { numberOption, requireKey } from "../service_option_values.ts";

import { ASSEMBLYAI_HOST } from "./defaults.ts";

export type { SttEvent, WsSttDialect, WsSttEndpoint } from "../ws_stt.ts";

export { ASSEMBLYAI_DEFAULT_MODEL } from "./defaults.ts";
export type { ServiceOptions } from "../service_options.ts";

/** Where the streaming API lives. */
export const ASSEMBLYAI_DEFAULT_URL = `wss://${ASSEMBLYAI_HOST}`;

const RATES = [8000, 16000];
/** Turn-detection options passed through to the query as they are. */
const TUNING = [
  "end_of_turn_confidence_threshold",
  "min_end_of_turn_silence_when_confident",
  "max_turn_silence",
] as const;

/** The session query of one connection (exported for tests). */
export function assemblyAiQuery(opts: ServiceOptions): URLSearchParams {
  const p = opts.provider;
  const rate = numberOption(opts, "sample_rate") ?? 16000;
  if (!RATES.includes(rate)) {
    throw new FlowcatError("config", `${p}: options.sample_rate must be 8000 or 16000`);
  }
  const q = new URLSearchParams({
    sample_rate: String(rate),
    encoding: "pcm_s16le",
    format_turns: "true",
  });
  if (opts.model) q.set("speech_model", opts.model);
  for (const k of TUNING) {
    const v = numberOption(opts, k);
    if (v !== undefined) q.set(k, String(v));
  }
  const terms = opts.options?.keyterms;
  if (terms !== undefined) {
    if (!Array.isArray(terms) || !terms.every((t) => typeof t === "string")) {
      throw new FlowcatError("config", `${p}: options.keyterms must be a list of strings`);
    }
    q.set("keyterms_prompt", JSON.stringify(terms));
  }
  return q;
}

/** Decode one server message. */
export function parseAssemblyAiMessage(data: unknown): SttEvent[] {
  const m = parseJsonMessage(data);
  if (m === undefined) return [];
  if (m.type === "Begin") return [{ type: "ready" }];
  if (m.type === "Turn") {
    const text = typeof m.transcript === "string" ? m.transcript : "";
    // With format_turns the unformatted end of turn is followed by the formatted one.
    if (m.end_of_turn === true && m.turn_is_formatted === true) {
      return [{ type: "final", text }, { type: "end" }];
    }
    return [{ type: "partial", text }];
  }
  if (typeof m.error === "string") {
    return [{ type: "error", kind: "protocol", message: m.error }];
  }
  if (isJsonObject(m.error) && typeof m.error.message === "string") {
    return [{ type: "error", kind: "protocol", message: m.error.message }];
  }
  return [];
}

/** AssemblyAI's wire for the shared streaming client. */
export function assemblyAiDialect(opts: ServiceOptions): WsSttDialect {
  const key = requireKey(opts, "ASSEMBLYAI_API_KEY");
  const query = assemblyAiQuery(opts);
  const url = `${wsRoot(opts.baseUrl ?? ASSEMBLYAI_DEFAULT_URL)}/v3/ws?${query}`;
  return {
    sampleRate: Number(query.get("sample_rate")),
    chunkMs: 50,
    awaitReady: true,
    endpoint: () => Promise.resolve({ url, headers: { Authorization: key } }),
    audio: (pcm) => pcm,
    parse: parseAssemblyAiMessage,
    finalize: () => JSON.stringify({ type: "ForceEndpoint" }),
    closing: () => JSON.stringify({ type: "Terminate" }),
  };
}

/** Factory for the server's provider registry: an AssemblyAI streaming STT client. */
export function createAssemblyAiStt(opts: ServiceOptions): SttService {
  return new WsStt(opts, assemblyAiDialect(opts));
}
