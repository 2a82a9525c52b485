/**
 * Deepgram live transcription (`/v1/listen` over WebSocket): the pure parts of the wire.
 * Building the listen URL from {@link ServiceOptions}, decoding server messages, and joining
 * the finalized segments of one utterance into one transcript.
 *
 * Wire facts and where they come from (developers.deepgram.com):
 * - URL and query (`model`, `encoding=linear16`, `sample_rate`, `channels`, `interim_results`,
 *   `punctuate`, `smart_format`, `language`, `endpointing`, `utterance_end_ms`):
 *   /reference/speech-to-text/listen-streaming, /docs/endpointing, /docs/utterance-end.
 * - Auth header `Authorization: Token <key>` (not Bearer): the Deepgram SDK skill docs and
 *   /docs/keep-alive's `new WebSocket("wss://api.deepgram.com/v1/listen", { headers })`.
 * - `Results` shape (`channel.alternatives[].transcript/confidence/languages`, `is_final`,
 *   `speech_final`, `from_finalize`): @deepgram/sdk `LiveTranscriptionEvent.ts`.
 * - `UtteranceEnd {channel, last_word_end}`: /docs/utterance-end and deepgram-python-sdk#258.
 * - `Metadata` after `CloseStream`: /docs/close-stream. `Finalize` answered by a result with
 *   `from_finalize: true`: /docs/finalize.
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import { type Frame, makeFrame } from "../../core/frames.ts";
import type { ServiceOptions } from "../service_options.ts";
import { wsRoot } from "../ws_client.ts";
import { DEEPGRAM_DEFAULT_MODEL, DEEPGRAM_DEFAULT_URL } from "./defaults.ts";
export { DEEPGRAM_DEFAULT_MODEL, DEEPGRAM_DEFAULT_URL } from "./defaults.ts";

/** Rate the client streams at: 16-bit little-endian mono PCM (`linear16`). */
export const DEEPGRAM_SAMPLE_RATE = 16000;

/** Knobs read from `ServiceOptions.options` (config names in snake_case). */
export interface DeepgramTuning {
  /** KeepAlive period while no audio flows (docs: every 3-5 s; the server closes at 10 s). */
  keepaliveMs: number;
  /** Wait before the one reconnect after a dropped socket. */
  reconnectDelayMs: number;
  /** After a failed reconnect, how long until runStt tries again (one error per period). */
  retryIntervalMs: number;
  /** `endpointing` query value: silence ms that ends speech (`speech_final`), or false. */
  endpointing: number | false;
  /** `utterance_end_ms` query value, or false to leave UtteranceEnd off. */
  utteranceEndMs: number | false;
  smartFormat: boolean;
  punctuate: boolean;
  /** Further query parameters passed as is (`keyterm`, `diarize`...). */
  query: Record<string, string>;
}

function num(v: unknown, fallback: number, min: number): number {
  return typeof v === "number" && Number.isFinite(v) && v >= min ? v : fallback;
}

function numOrOff(v: unknown, fallback: number | false): number | false {
  if (v === false) return false;
  return typeof v === "number" && Number.isFinite(v) && v >= 0 ? Math.round(v) : fallback;
}

/** Tuning from `opts.options` with defaults; unknown or ill-typed values fall back quietly. */
export function deepgramTuning(options: Record<string, unknown> = {}): DeepgramTuning {
  const query: Record<string, string> = {};
  const extra = options.query;
  if (typeof extra === "object" && extra !== null) {
    for (const [k, v] of Object.entries(extra)) {
      if (typeof v === "string" || typeof v === "number" || typeof v === "boolean") {
        query[k] = String(v);
      }
    }
  }
  return {
    keepaliveMs: num(options.keepalive_ms, 4000, 10),
    reconnectDelayMs: num(options.reconnect_delay_ms, 500, 0),
    retryIntervalMs: num(options.retry_interval_ms, 5000, 0),
    endpointing: numOrOff(options.endpointing, 300),
    // Deepgram's minimum is 1000 ms; it also needs interim_results, which is always on here.
    utteranceEndMs: numOrOff(options.utterance_end_ms, 1000),
    smartFormat: options.smart_format !== false,
    punctuate: options.punctuate !== false,
    query,
  };
}

/** The `/v1/listen` URL: `opts.baseUrl` (ws, wss, http or https root) or Deepgram's own. */
export function deepgramListenUrl(opts: ServiceOptions, tuning: DeepgramTuning): string {
  const root = wsRoot(opts.baseUrl ?? DEEPGRAM_DEFAULT_URL);
  const path = root.endsWith("/v1/listen") ? "" : root.endsWith("/v1") ? "/listen" : "/v1/listen";
  let url: URL;
  try {
    url = new URL(root + path);
  } catch (err) {
    throw new FlowcatError("config", `${opts.provider}: bad base URL`, { cause: err });
  }
  const q = url.searchParams;
  q.set("model", opts.model ?? DEEPGRAM_DEFAULT_MODEL);
  q.set("encoding", "linear16");
  q.set("sample_rate", String(DEEPGRAM_SAMPLE_RATE));
  q.set("channels", "1");
  q.set("interim_results", "true");
  q.set("punctuate", String(tuning.punctuate));
  q.set("smart_format", String(tuning.smartFormat));
  if (opts.language) q.set("language", opts.language);
  q.set("endpointing", tuning.endpointing === false ? "false" : String(tuning.endpointing));
  if (tuning.utteranceEndMs !== false) q.set("utterance_end_ms", String(tuning.utteranceEndMs));
  for (const [k, v] of Object.entries(tuning.query)) q.set(k, v);
  return url.toString();
}

/** A decoded server message; anything else is `ignored`. */
export type DeepgramMessage =
  | {
    type: "results";
    transcript: string;
    isFinal: boolean;
    speechFinal: boolean;
    fromFinalize: boolean;
    language?: string;
  }
  | { type: "utterance_end" }
  | { type: "error"; description: string }
  | { type: "ignored"; what: string };

function rec(v: unknown): Record<string, unknown> | undefined {
  return typeof v === "object" && v !== null && !Array.isArray(v)
    ? v as Record<string, unknown>
    : undefined;
}

/** Decode one text message from the server. */
export function parseDeepgramMessage(text: string): DeepgramMessage {
  let msg: Record<string, unknown> | undefined;
  try {
    msg = rec(JSON.parse(text));
  } catch {
    return { type: "ignored", what: "not JSON" };
  }
  const type = msg?.type;
  if (msg === undefined || typeof type !== "string") return { type: "ignored", what: "no type" };
  if (type === "UtteranceEnd") return { type: "utterance_end" };
  if (type === "Error") {
    // Deepgram's error message carries `description` and/or `message` (never the key).
    const d = msg.description ?? msg.message ?? msg.variant ?? "stream error";
    return { type: "error", description: String(d).slice(0, 200) };
  }
  if (type !== "Results") return { type: "ignored", what: type };
  const alt = rec((rec(msg.channel)?.alternatives as unknown[] | undefined)?.[0]);
  const languages = alt?.languages;
  const language = Array.isArray(languages) && typeof languages[0] === "string"
    ? languages[0]
    : undefined;
  return {
    type: "results",
    transcript: typeof alt?.transcript === "string" ? alt.transcript.trim() : "",
    isFinal: msg.is_final === true,
    speechFinal: msg.speech_final === true,
    fromFinalize: msg.from_finalize === true,
    ...(language ? { language } : {}),
  };
}

/**
 * Turns Results into frames. Why segments are joined: Deepgram finalizes a long utterance in
 * several `is_final` pieces and marks the last with `speech_final` (endpointing). A voice agent
 * wants one user turn, so finalized pieces are held and emitted as ONE Transcription when the
 * utterance ends: `speech_final`, a `from_finalize` answer (sent on VAD end of speech) or an
 * `UtteranceEnd` (the backstop when noise keeps endpointing from firing). Meanwhile every
 * interim and every held piece yields an InterimTranscription of the whole utterance so far.
 */
export class UtteranceJoiner {
  #held: string[] = [];
  #language: string | undefined;
  readonly #defaultLanguage: string | undefined;

  /** `defaultLanguage` is put on frames when the server names none (`multi` is not a tag). */
  constructor(defaultLanguage?: string) {
    this.#defaultLanguage = defaultLanguage && defaultLanguage !== "multi"
      ? defaultLanguage
      : undefined;
  }

  /** Frames for one decoded message (empty for ignored ones). */
  onMessage(msg: DeepgramMessage): Frame[] {
    if (msg.type === "utterance_end") return this.flush(true);
    if (msg.type !== "results") return [];
    if (msg.language) this.#language = msg.language;
    const out: Frame[] = [];
    if (!msg.isFinal) {
      if (msg.transcript) out.push(this.#interim(this.#joined(msg.transcript)));
      return out;
    }
    if (msg.transcript) this.#held.push(msg.transcript);
    // Only Deepgram's own endpointing says the utterance ended; a Finalize we sent does not.
    if (msg.speechFinal || msg.fromFinalize) return this.flush(msg.speechFinal);
    if (msg.transcript) out.push(this.#interim(this.#joined()));
    return out;
  }

  /**
   * The held utterance as one final Transcription (nothing when none is held), marked
   * `endOfUtterance` when Deepgram's endpointing or UtteranceEnd ended it.
   */
  flush(endOfUtterance = false): Frame[] {
    if (this.#held.length === 0) return [];
    const text = this.#joined();
    const language = this.#language ?? this.#defaultLanguage;
    this.#held = [];
    this.#language = undefined;
    return [
      makeFrame("Transcription", {
        text,
        userId: "user",
        final: true,
        ...(language ? { language } : {}),
        ...(endOfUtterance ? { endOfUtterance } : {}),
      }),
    ];
  }

  #joined(tail?: string): string {
    return (tail === undefined ? this.#held : [...this.#held, tail]).join(" ");
  }

  #interim(text: string): Frame {
    const language = this.#language ?? this.#defaultLanguage;
    return makeFrame("InterimTranscription", {
      text,
      userId: "user",
      ...(language ? { language } : {}),
    });
  }
}
