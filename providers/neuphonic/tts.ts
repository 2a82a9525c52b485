/**
 * Neuphonic streaming text-to-speech over HTTP server-sent events.
 *
 * Wire facts (sources: docs/providers/neuphonic.md):
 * - `POST https://api.neuphonic.com/sse/speak/<lang>` with the header `X-API-KEY: <key>` and a
 *   JSON body `{text, lang_code, encoding:"pcm_linear", sampling_rate, speed, voice_id?, model?}`.
 * - The answer is an event stream; each `data:` line is `{status_code, data:{audio (base64),
 *   text, sampling_rate}}`, or an error `{status_code, errors:[...]}`; the utterance ends with the
 *   stream. The HTTP form is used rather than Neuphonic's WebSocket because the WebSocket sends no
 *   end-of-utterance message: only the SSE stream says when the audio is complete.
 *
 * Permissions: `--allow-net=api.neuphonic.com:443` (or the `baseUrl` given).
 * @example
 * ```ts
 * import { createNeuphonicTts } from "@flowcat/flowcat/tts/neuphonic";
 * const tts = createNeuphonicTts({ provider: "neuphonic", apiKey: Deno.env.get("NEUPHONIC_API_KEY") });
 * for await (const frame of tts.runTts("Hello there.")) console.log(frame.kind);
 * ```
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import type { Frame } from "../../core/frames.ts";
import type { ServiceOptions } from "../service_options.ts";
import { readSse } from "../http.ts";
import { decodeBase64, isJsonObject, redact } from "../ws_client.ts";
import { streamHttpTts } from "../tts/_http_stream.ts";
import { keyAndRate, StreamingTts } from "../tts/_shared.ts";
import {
  NEUPHONIC_DEFAULT_BASE_URL,
  NEUPHONIC_DEFAULT_SAMPLE_RATE,
  NEUPHONIC_RATES,
} from "./defaults.ts";

export { StreamingTts } from "../tts/_shared.ts";

/** The Neuphonic SSE text-to-speech service: one HTTP request per utterance. */
export class NeuphonicTts extends StreamingTts {
  readonly #apiKey: string;
  readonly #url: string;
  readonly #model: string;
  readonly #body: Record<string, unknown>;
  readonly #timeoutMs: number;
  readonly #fetch?: typeof fetch;

  /** Make the service; a missing key or an unusable rate is a config error here. */
  constructor(opts: ServiceOptions) {
    const { apiKey, rate } = keyAndRate(opts, NEUPHONIC_RATES, NEUPHONIC_DEFAULT_SAMPLE_RATE);
    super(opts.provider, rate);
    this.#apiKey = apiKey;
    const o = opts.options ?? {};
    const lang = (opts.language ?? "en").split("-")[0].toLowerCase();
    const root = (opts.baseUrl ?? NEUPHONIC_DEFAULT_BASE_URL).replace(/\/+$/, "");
    this.#url = `${root}/sse/speak/${encodeURIComponent(lang)}`;
    this.#model = opts.model ?? "default";
    this.#body = {
      lang_code: lang,
      encoding: "pcm_linear",
      sampling_rate: rate,
      speed: typeof o.speed === "number" ? o.speed : 1.0,
      ...(opts.voice ? { voice_id: opts.voice } : {}),
      ...(opts.model ? { model: opts.model } : {}),
      ...(typeof o.temperature === "number" ? { temperature: o.temperature } : {}),
    };
    this.#timeoutMs = opts.timeoutMs ?? 15_000;
    this.#fetch = opts.fetch;
  }

  /**
   * TtsStarted, a TtsAudio frame per event, a `tts_usage` Metrics frame, TtsStopped. Rate limits
   * and server errors are retried (providers/http.ts); an abort through `signal` cancels the
   * request or the stream at once and ends without TtsStopped.
   */
  runTts(text: string, signal?: AbortSignal): AsyncGenerator<Frame> {
    return streamHttpTts({
      provider: this.name(),
      text,
      model: this.#model,
      sampleRate: this.sampleRate(),
      url: this.#url,
      headers: { "x-api-key": this.#apiKey },
      body: { text, ...this.#body },
      timeoutMs: this.#timeoutMs,
      fetch: this.#fetch,
      audio: (body, sig) => this.#audio(body, sig),
    }, signal);
  }

  async *#audio(
    body: ReadableStream<Uint8Array>,
    signal?: AbortSignal,
  ): AsyncGenerator<Uint8Array> {
    for await (const ev of readSse(body, signal)) yield this.#audioOf(ev.data);
  }

  /** The audio bytes of one event; an error event throws. */
  #audioOf(data: string): Uint8Array {
    let msg: unknown;
    try {
      msg = JSON.parse(data);
    } catch {
      return new Uint8Array();
    }
    if (!isJsonObject(msg)) return new Uint8Array();
    if (msg.errors !== undefined && msg.errors !== null) {
      const status = typeof msg.status_code === "number" ? msg.status_code : undefined;
      const text = redact(JSON.stringify(msg.errors), this.#apiKey).slice(0, 300);
      const kind = status === 401 || status === 403 ? "auth" : "other";
      throw new FlowcatError(kind, `${this.name()}: ${text}${status ? ` (status ${status})` : ""}`);
    }
    const audio = isJsonObject(msg.data) ? msg.data.audio : undefined;
    return typeof audio === "string" && audio ? decodeBase64(this.name(), audio) : new Uint8Array();
  }
}

/** Make a {@link NeuphonicTts}. */
export const createNeuphonicTts = (opts: ServiceOptions): NeuphonicTts => new NeuphonicTts(opts);
