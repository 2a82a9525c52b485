/**
 * Cartesia (Sonic) streaming text-to-speech over one multiplexed WebSocket.
 *
 * Wire facts (sources, API versions and model notes: docs/providers/cartesia.md):
 * - `wss://api.cartesia.ai/tts/websocket?cartesia_version=...` (the query "takes precedence"
 *   over the `Cartesia-Version` header).
 * - Auth: an `X-API-Key` header on the handshake; `?api_key=` exists only "instead of the
 *   X-API-Key header" for browsers. The header keeps the key out of URLs (proxy logs).
 * - Request `{context_id, model_id, transcript, voice:{mode:"id", id}, language, continue:false,
 *   output_format:{container:"raw", encoding:"pcm_s16le", sample_rate}}`; cancel
 *   `{context_id, cancel:true}`. Responses carry `context_id`: `chunk` (base64 `data`), `done`,
 *   `error` (`error`, `status_code`), and `timestamps` / `flush_done` (ignored).
 * - Cartesia advises "many generations over a single WebSocket", a context each, dialled
 *   before the first: {@link CartesiaTts.start} dials, each `runTts` is one context, and a
 *   dropped socket (idle ones are closed) is redialled by the next call.
 * - Default model `sonic-3` and voice Katie `f786b574-daa5-4673-aa0c-cbe3e8534c02`, the one
 *   Cartesia recommends for voice agents.
 *
 * @example
 * ```ts
 * import { createCartesiaTts } from "@flowcat/flowcat/tts/cartesia";
 * import type { StartParams } from "@flowcat/flowcat";
 * declare const key: string;
 * declare const params: StartParams;
 * const tts = createCartesiaTts({ provider: "cartesia", apiKey: key });
 * await tts.start(params);
 * for await (const frame of tts.runTts("Hello there.")) console.log(frame.kind);
 * await tts.stop();
 * ```
 *
 * Permissions: `--allow-net=api.cartesia.ai:443` (or the `url` given).
 * @module
 */

import { FlowcatError, type FlowcatErrorKind } from "../../core/errors.ts";
import type { Frame, StartParams } from "../../core/frames.ts";
import type { ServiceOptions } from "../service_options.ts";

export type { ServiceOptions } from "../service_options.ts";
import { decodeBase64, isJsonObject, parseJsonMessage, redact, wsRoot } from "../ws_client.ts";
import { MuxSocket } from "../tts/_mux_socket.ts";
import { keyAndRate, StreamingTts } from "../tts/_shared.ts";
import { CARTESIA_DEFAULT_BASE_URL, CARTESIA_DEFAULT_MODEL } from "./defaults.ts";
export { CARTESIA_DEFAULT_BASE_URL, CARTESIA_DEFAULT_MODEL } from "./defaults.ts";

/** API version sent as `cartesia_version`. */
export const CARTESIA_DEFAULT_VERSION = "2026-03-01";
/** Default voice: Katie, recommended by Cartesia for voice agents. */
export const CARTESIA_DEFAULT_VOICE = "f786b574-daa5-4673-aa0c-cbe3e8534c02";
/** Default output rate. */
export const CARTESIA_DEFAULT_SAMPLE_RATE = 24000;
/** Rates Cartesia's raw container accepts. */
export const CARTESIA_PCM_RATES: readonly number[] = [8000, 16000, 22050, 24000, 44100, 48000];

/** The Cartesia WebSocket text-to-speech service: one socket, one context per utterance. */
export class CartesiaTts extends StreamingTts {
  readonly #apiKey: string;
  readonly #url: string;
  readonly #model: string;
  readonly #voice: string;
  readonly #language: string;
  readonly #generationConfig?: Record<string, unknown>;
  readonly #socket: MuxSocket<Record<string, unknown>>;

  /** Make the service; a missing key or an unusable rate is a config error here. */
  constructor(opts: ServiceOptions) {
    const { apiKey, rate } = keyAndRate(opts, CARTESIA_PCM_RATES, CARTESIA_DEFAULT_SAMPLE_RATE);
    super(opts.provider, rate);
    this.#apiKey = apiKey;
    const o = opts.options ?? {};
    const version = typeof o.cartesia_version === "string"
      ? o.cartesia_version
      : CARTESIA_DEFAULT_VERSION;
    const root = wsRoot(opts.baseUrl ?? CARTESIA_DEFAULT_BASE_URL);
    this.#url = `${root}/tts/websocket?${new URLSearchParams({ cartesia_version: version })}`;
    this.#model = opts.model ?? CARTESIA_DEFAULT_MODEL;
    this.#voice = opts.voice ?? CARTESIA_DEFAULT_VOICE;
    // Cartesia takes ISO 639-1 codes (`en`, `de`), not full BCP-47 tags.
    this.#language = (opts.language ?? "en").split("-")[0].toLowerCase();
    if (isJsonObject(o.generation_config)) this.#generationConfig = o.generation_config;
    this.#socket = new MuxSocket({
      provider: opts.provider,
      url: this.#url,
      headers: { "X-API-Key": apiKey },
      timeoutMs: opts.timeoutMs ?? 15_000,
      secret: apiKey,
      route: (data) => {
        const msg = parseJsonMessage(data);
        if (!msg) return undefined;
        const id = msg.context_id;
        if (typeof id === "string" && id) return { id, msg };
        // An error without a context concerns the whole connection.
        return msg.type === "error" ? { msg } : undefined;
      },
    });
  }

  /** The handshake URL (the key is not in it). */
  url(): string {
    return this.#url;
  }

  /** Dial the socket now so the first utterance does not pay for it; a refused key throws. */
  override start(_params: StartParams): Promise<void> {
    return this.#socket.start();
  }

  /** Close the socket; utterances in flight end with a `closed` error. Idempotent. */
  override stop(): Promise<void> {
    return this.#socket.stop();
  }

  /**
   * TtsStarted, TtsAudio chunks as they arrive, a `tts_usage` Metrics frame, TtsStopped, on a
   * fresh context of the shared socket. Aborting `signal` sends `{context_id, cancel:true}` and
   * ends the stream at once (no TtsStopped); so does a consumer that stops iterating early.
   */
  runTts(text: string, signal?: AbortSignal): AsyncGenerator<Frame> {
    const id = crypto.randomUUID();
    return this.#socket.speak({
      id,
      text,
      model: this.#model,
      sampleRate: this.sampleRate(),
      send: (ws) => ws.send(JSON.stringify(this.#request(text, id))),
      step: (msg) => {
        // An error ends the context server-side (`done: true`).
        if (msg.type === "error" || typeof msg.error === "string") throw this.#serverError(msg);
        const done = msg.type === "done" || msg.done === true;
        if (msg.type !== "chunk" || typeof msg.data !== "string" || !msg.data) return { done };
        try {
          return { audio: decodeBase64(this.name(), msg.data), done };
        } catch (err) {
          return { fault: err as FlowcatError };
        }
      },
      cancel: (ws) => {
        // Stop generation (and billing) for a context nobody will play.
        if (ws.readyState !== WebSocket.OPEN) return;
        ws.send(JSON.stringify({ context_id: id, cancel: true }));
      },
    }, signal);
  }

  #request(text: string, contextId: string): Record<string, unknown> {
    const req: Record<string, unknown> = {
      context_id: contextId,
      model_id: this.#model,
      transcript: text,
      voice: { mode: "id", id: this.#voice },
      output_format: { container: "raw", encoding: "pcm_s16le", sample_rate: this.sampleRate() },
      language: this.#language,
      continue: false,
    };
    if (this.#generationConfig) req.generation_config = this.#generationConfig;
    return req;
  }

  #serverError(msg: Record<string, unknown>): FlowcatError {
    const text = typeof msg.error === "string" && msg.error ? msg.error : "unknown error";
    const status = typeof msg.status_code === "number" ? msg.status_code : undefined;
    const kind: FlowcatErrorKind = status === 401 || status === 403 ? "auth" : "other";
    const where = status ? ` (status ${status})` : "";
    return new FlowcatError(kind, `${this.name()}: ${redact(text, this.#apiKey)}${where}`);
  }
}

/** Make a {@link CartesiaTts}. */
export const createCartesiaTts = (opts: ServiceOptions): CartesiaTts => new CartesiaTts(opts);
