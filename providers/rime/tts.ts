/**
 * Rime streaming text-to-speech over its JSON WebSocket (`/ws3`).
 *
 * Wire facts (sources: docs/providers/rime.md):
 * - `wss://users-ws.rime.ai/ws3?speaker=<voice>&modelId=<model>&audioFormat=pcm&samplingRate=<rate>`
 *   (synthesis arguments ride in the query) with the header `Authorization: Bearer <key>`.
 * - Client messages `{text, contextId}`, `{operation:"flush"}` (synthesise the buffer now),
 *   `{operation:"clear"}` (drop the buffer, on interruption), `{operation:"eos"}` (flush, then
 *   the server closes).
 * - Server events carry the `contextId` of the text that produced them: `chunk` (base64 `data`),
 *   `timestamps` (ignored), `done` (the synthesis is complete), and `error` (`message`).
 * - Rime keeps one context at a time, so utterances run in turn on one kept socket
 *   (providers/tts/_serial_socket.ts); events of another context (a cleared one) are dropped.
 *
 * Permissions: `--allow-net=users-ws.rime.ai:443` (or the `baseUrl` given).
 * @example
 * ```ts
 * import { createRimeTts } from "@flowcat/flowcat/tts/rime";
 * const tts = createRimeTts({ provider: "rime", apiKey: Deno.env.get("RIME_API_KEY") });
 * for await (const frame of tts.runTts("Hello there.")) console.log(frame.kind);
 * ```
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import type { Frame } from "../../core/frames.ts";
import type { ServiceOptions } from "../service_options.ts";
import { decodeBase64, parseJsonMessage, wsRoot } from "../ws_client.ts";
import { SerialSocket, type SpeakStep } from "../tts/_serial_socket.ts";
import { keyAndRate, StreamingTts } from "../tts/_shared.ts";
import {
  RIME_DEFAULT_BASE_URL,
  RIME_DEFAULT_MODEL,
  RIME_DEFAULT_SAMPLE_RATE,
  RIME_DEFAULT_VOICE,
  RIME_PCM_RATES,
} from "./defaults.ts";

export { StreamingTts } from "../tts/_shared.ts";

/** Rime's three-letter codes for the languages its reference lists. */
const RIME_LANGUAGES: Readonly<Record<string, string>> = {
  en: "eng",
  es: "spa",
  fr: "fra",
  pt: "por",
  de: "deu",
  ja: "jpn",
};

/** Query options passed through as they are (Rime's own names). */
const PASSTHROUGH = [
  "speedAlpha",
  "segment",
  "repetition_penalty",
  "temperature",
  "top_p",
  "reduceLatency",
] as const;

/** The Rime WebSocket text-to-speech service: one socket, one context at a time. */
export class RimeTts extends StreamingTts {
  readonly #url: string;
  readonly #model: string;
  readonly #socket: SerialSocket;

  /** Make the service; a missing key, an unusable rate or language is a config error here. */
  constructor(opts: ServiceOptions) {
    const { apiKey, rate } = keyAndRate(opts, RIME_PCM_RATES, RIME_DEFAULT_SAMPLE_RATE);
    super(opts.provider, rate);
    const o = opts.options ?? {};
    this.#model = opts.model ?? RIME_DEFAULT_MODEL;
    const query = new URLSearchParams({
      speaker: opts.voice ?? RIME_DEFAULT_VOICE,
      modelId: this.#model,
      audioFormat: "pcm",
      samplingRate: String(rate),
    });
    if (opts.language) {
      const primary = opts.language.split("-")[0].toLowerCase();
      const lang = RIME_LANGUAGES[primary] ?? (primary.length === 3 ? primary : undefined);
      if (!lang) {
        throw new FlowcatError(
          "config",
          `${this.name()}: language ${opts.language} is not offered`,
        );
      }
      query.set("lang", lang);
    }
    for (const key of PASSTHROUGH) {
      const v = o[key];
      if (typeof v === "string" || typeof v === "number" || typeof v === "boolean") {
        query.set(key, String(v));
      }
    }
    this.#url = `${wsRoot(opts.baseUrl ?? RIME_DEFAULT_BASE_URL)}/ws3?${query}`;
    this.#socket = new SerialSocket({
      provider: opts.provider,
      url: this.#url,
      headers: { Authorization: `Bearer ${apiKey}` },
      timeoutMs: opts.timeoutMs ?? 15_000,
      secret: apiKey,
    });
  }

  /** The handshake URL (the key is not in it). */
  url(): string {
    return this.#url;
  }

  /** Close the socket; an utterance in flight ends with an error. Idempotent. */
  override stop(): Promise<void> {
    return this.#socket.stop();
  }

  /**
   * TtsStarted, TtsAudio chunks as they arrive, a `tts_usage` Metrics frame, TtsStopped: the
   * text under a fresh `contextId` and a flush, audio until that context's `done`. Aborting
   * `signal` (or leaving the loop early) sends `clear` and ends the stream at once.
   */
  runTts(text: string, signal?: AbortSignal): AsyncGenerator<Frame> {
    return this.#socket.speak({
      text,
      model: this.#model,
      sampleRate: this.sampleRate(),
      send: (ws, contextId) => {
        ws.send(JSON.stringify({ text, contextId }));
        ws.send(JSON.stringify({ operation: "flush" }));
      },
      step: (data, contextId) => this.#step(data, contextId),
      cancel: (ws) => ws.send(JSON.stringify({ operation: "clear" })),
    }, signal);
  }

  #step(data: unknown, contextId: string): SpeakStep | undefined {
    const msg = parseJsonMessage(data);
    if (!msg) return undefined;
    if (msg.type === "error") {
      const text = typeof msg.message === "string" && msg.message ? msg.message : "server error";
      throw new FlowcatError("other", `${this.name()}: ${this.#socket.clean(text)}`);
    }
    // Events of a cleared context may still arrive; they are not this utterance's.
    if (msg.contextId !== contextId) return undefined;
    if (msg.type === "chunk" && typeof msg.data === "string") {
      return { audio: decodeBase64(this.name(), msg.data) };
    }
    return msg.type === "done" ? { done: true } : undefined;
  }
}

/** Make a {@link RimeTts}. */
export const createRimeTts = (opts: ServiceOptions): RimeTts => new RimeTts(opts);
