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

// Same imports and socket skeleton as tts/elevenlabs.ts: two WebSocket protocols behind one
// TtsService; the socket plumbing they share is providers/ws_client.ts.
import { FlowcatError, type FlowcatErrorKind } from "../../core/errors.ts";
import { type Frame, makeFrame, type StartParams, ttsAudio } from "../../core/frames.ts";
import type { TtsService } from "../../core/seams.ts";
import type { ServiceOptions } from "../service_options.ts";

export type { ServiceOptions } from "../service_options.ts";
import {
  decodeBase64,
  isJsonObject,
  Mailbox,
  openSocket,
  parseJsonMessage,
  raceAbort,
  redact,
  SharedSocket,
  wsRoot,
} from "../ws_client.ts";
import { PcmAssembler, ttsUsageFrame } from "../tts/_shared.ts";
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

/** What the socket listener hands to the context it concerns. */
type ContextEvent =
  | { type: "message"; msg: Record<string, unknown> }
  | { type: "closed"; code: number; reason: string };

/** The Cartesia WebSocket text-to-speech service: one socket, one context per utterance. */
export class CartesiaTts implements TtsService {
  readonly #name: string;
  readonly #apiKey: string;
  readonly #url: string;
  readonly #model: string;
  readonly #voice: string;
  readonly #rate: number;
  readonly #language: string;
  readonly #timeoutMs: number;
  readonly #generationConfig?: Record<string, unknown>;
  readonly #contexts = new Map<string, Mailbox<ContextEvent>>();
  readonly #socket: SharedSocket;

  /** Make the service; a missing key or an unusable rate is a config error here. */
  constructor(opts: ServiceOptions) {
    this.#name = opts.provider;
    if (!opts.apiKey) throw new FlowcatError("config", `${this.#name}: apiKey is required`);
    this.#apiKey = opts.apiKey;
    const o = opts.options ?? {};
    const version = typeof o.cartesia_version === "string"
      ? o.cartesia_version
      : CARTESIA_DEFAULT_VERSION;
    const root = wsRoot(opts.baseUrl ?? CARTESIA_DEFAULT_BASE_URL);
    this.#url = `${root}/tts/websocket?${new URLSearchParams({ cartesia_version: version })}`;
    this.#model = opts.model ?? CARTESIA_DEFAULT_MODEL;
    this.#voice = opts.voice ?? CARTESIA_DEFAULT_VOICE;
    const rate = o.sample_rate ?? o.sampleRate ?? CARTESIA_DEFAULT_SAMPLE_RATE;
    if (typeof rate !== "number" || !CARTESIA_PCM_RATES.includes(rate)) {
      throw new FlowcatError(
        "config",
        `${this.#name}: sample rate must be one of ${CARTESIA_PCM_RATES.join(", ")}`,
      );
    }
    this.#rate = rate;
    // Cartesia takes ISO 639-1 codes (`en`, `de`), not full BCP-47 tags.
    this.#language = (opts.language ?? "en").split("-")[0].toLowerCase();
    this.#timeoutMs = opts.timeoutMs ?? 15_000;
    if (isJsonObject(o.generation_config)) this.#generationConfig = o.generation_config;
    this.#socket = new SharedSocket(
      () =>
        openSocket(this.#url, { "X-API-Key": this.#apiKey }, {
          provider: this.#name,
          timeoutMs: this.#timeoutMs,
        }),
      (ws) => this.#attach(ws),
    );
  }

  /** Provider name (as configured). */
  name(): string {
    return this.#name;
  }

  /** Rate of the audio {@link runTts} yields (`output_format.sample_rate`). */
  sampleRate(): number {
    return this.#rate;
  }

  /** The handshake URL (the key is not in it). */
  url(): string {
    return this.#url;
  }

  /** Dial the socket now so the first utterance does not pay for it; a refused key throws. */
  async start(_params: StartParams): Promise<void> {
    await this.#socket.get();
  }

  /** Close the socket; utterances in flight end with a `closed` error. Idempotent. */
  stop(): Promise<void> {
    return this.#socket.close();
  }

  /**
   * TtsStarted, TtsAudio chunks as they arrive, a `tts_usage` Metrics frame, TtsStopped, on a
   * fresh context of the shared socket. Aborting `signal` sends `{context_id, cancel:true}` and
   * ends the stream at once (no TtsStopped); so does a consumer that stops iterating early.
   */
  async *runTts(text: string, signal?: AbortSignal): AsyncGenerator<Frame> {
    if (signal?.aborted) return;
    const contextId = crypto.randomUUID();
    if (text.trim() === "") {
      yield makeFrame("TtsStarted", { contextId });
      yield makeFrame("TtsStopped", { contextId });
      return;
    }
    const ws = await raceAbort(this.#socket.get(), signal);
    if (!ws) return;
    if (ws.readyState !== WebSocket.OPEN) throw this.#closedError(1006, "");
    const events = new Mailbox<ContextEvent>();
    this.#contexts.set(contextId, events);
    const onAbort = () => events.poke();
    signal?.addEventListener("abort", onAbort);
    const pcm = new PcmAssembler();
    let ended = false;
    try {
      ws.send(JSON.stringify(this.#request(text, contextId)));
      yield makeFrame("TtsStarted", { contextId });
      while (!ended) {
        // Checked before waiting too: an abort while suspended at a yield finds no waiter.
        if (signal?.aborted) return;
        const ev = await events.next();
        if (signal?.aborted) return;
        if (!ev) continue;
        if (ev.type === "closed") {
          ended = true;
          throw this.#closedError(ev.code, ev.reason);
        }
        const msg = ev.msg;
        if (msg.type === "error" || typeof msg.error === "string") {
          ended = true; // an error ends the context server-side (`done: true`)
          throw this.#serverError(msg);
        }
        if (msg.type === "chunk" && typeof msg.data === "string" && msg.data) {
          const samples = pcm.push(decodeBase64(this.#name, msg.data));
          if (samples.length) {
            yield ttsAudio({ pcm: samples, sampleRate: this.#rate, numChannels: 1 }, contextId);
          }
        }
        if (msg.type === "done" || msg.done === true) ended = true;
      }
      yield ttsUsageFrame(this.#name, this.#model, text.length);
      yield makeFrame("TtsStopped", { contextId });
    } finally {
      signal?.removeEventListener("abort", onAbort);
      this.#contexts.delete(contextId);
      if (!ended && ws.readyState === WebSocket.OPEN) {
        // Stop generation (and billing) for a context nobody will play.
        ws.send(JSON.stringify({ context_id: contextId, cancel: true }));
      }
    }
  }

  #request(text: string, contextId: string): Record<string, unknown> {
    const req: Record<string, unknown> = {
      context_id: contextId,
      model_id: this.#model,
      transcript: text,
      voice: { mode: "id", id: this.#voice },
      output_format: { container: "raw", encoding: "pcm_s16le", sample_rate: this.#rate },
      language: this.#language,
      continue: false,
    };
    if (this.#generationConfig) req.generation_config = this.#generationConfig;
    return req;
  }

  /** Route each server message to its context; a close fails every context in flight. */
  #attach(ws: WebSocket): void {
    ws.addEventListener("message", (e) => {
      const msg = parseJsonMessage(e.data);
      if (!msg) return;
      const id = msg.context_id;
      if (typeof id === "string" && id) {
        this.#contexts.get(id)?.push({ type: "message", msg });
      } else if (msg.type === "error") {
        // An error without a context concerns the whole connection.
        for (const box of this.#contexts.values()) box.push({ type: "message", msg });
      }
    });
    ws.addEventListener("close", (e) => {
      for (const box of this.#contexts.values()) {
        box.push({ type: "closed", code: e.code, reason: e.reason });
      }
    });
  }

  #serverError(msg: Record<string, unknown>): FlowcatError {
    const text = typeof msg.error === "string" && msg.error ? msg.error : "unknown error";
    const status = typeof msg.status_code === "number" ? msg.status_code : undefined;
    const kind: FlowcatErrorKind = status === 401 || status === 403 ? "auth" : "other";
    const where = status ? ` (status ${status})` : "";
    return new FlowcatError(kind, `${this.#name}: ${redact(text, this.#apiKey)}${where}`);
  }

  #closedError(code: number, reason: string): FlowcatError {
    const why = reason ? `: ${redact(reason, this.#apiKey).slice(0, 300)}` : "";
    return new FlowcatError(
      "closed",
      `${this.#name}: socket closed before the audio ended (code ${code})${why}`,
    );
  }
}

/** Make a {@link CartesiaTts}. */
export const createCartesiaTts = (opts: ServiceOptions): CartesiaTts => new CartesiaTts(opts);
