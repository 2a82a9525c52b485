/**
 * LMNT streaming text-to-speech over its speech-session WebSocket (protocol version 2).
 *
 * Wire facts (sources: docs/providers/lmnt.md):
 * - `wss://api.lmnt.com/v1/ai/speech/stream`; the key is not in the handshake but in the first
 *   message: `{"X-API-Key", voice, model, protocol_version: 2, format, sample_rate, language}`.
 * - Then `{text}`, `{command:"flush", nonce}` (synthesise the buffer), `{command:"reset", nonce}`
 *   (drop the buffer and pending audio), `{command:"eof"}`.
 * - Server: binary audio frames, `{complete:"flush"|"reset", nonce}` acknowledgements, and
 *   `{error}`.
 * - One session speaks one stream, so utterances run in turn on one kept socket
 *   (providers/tts/_serial_socket.ts); an aborted one sends `reset` and audio until its
 *   `complete` is dropped.
 *
 * Permissions: `--allow-net=api.lmnt.com:443` (or the `baseUrl` given).
 * @example
 * ```ts
 * import { createLmntTts } from "@flowcat/flowcat/tts/lmnt";
 * const tts = createLmntTts({ provider: "lmnt", apiKey: Deno.env.get("LMNT_API_KEY") });
 * for await (const frame of tts.runTts("Hello there.")) console.log(frame.kind);
 * ```
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import type { Frame } from "../../core/frames.ts";
import type { ServiceOptions } from "../service_options.ts";
import { parseJsonMessage, wsRoot } from "../ws_client.ts";
import { SerialSocket, type SpeakStep } from "../tts/_serial_socket.ts";
import { keyAndRate, StreamingTts } from "../tts/_shared.ts";
import {
  LMNT_DEFAULT_BASE_URL,
  LMNT_DEFAULT_MODEL,
  LMNT_DEFAULT_SAMPLE_RATE,
  LMNT_DEFAULT_VOICE,
  LMNT_RATES,
} from "./defaults.ts";

export { StreamingTts } from "../tts/_shared.ts";

/** The LMNT speech-session text-to-speech service: one socket, one utterance at a time. */
export class LmntTts extends StreamingTts {
  readonly #model: string;
  readonly #socket: SerialSocket;
  #nonce = 0;
  /** Nonce of the last `reset` sent; audio before its `complete` is stale. */
  #resetting: number | undefined;

  /** Make the service; a missing key or an unusable rate is a config error here. */
  constructor(opts: ServiceOptions) {
    const { apiKey, rate } = keyAndRate(opts, LMNT_RATES, LMNT_DEFAULT_SAMPLE_RATE);
    super(opts.provider, rate);
    const o = opts.options ?? {};
    this.#model = opts.model ?? LMNT_DEFAULT_MODEL;
    const init: Record<string, unknown> = {
      "X-API-Key": apiKey,
      voice: opts.voice ?? LMNT_DEFAULT_VOICE,
      model: this.#model,
      protocol_version: 2,
      format: "pcm_s16le",
      sample_rate: String(rate),
    };
    if (opts.language) init.language = opts.language.split("-")[0].toLowerCase();
    if (typeof o.speed === "number") init.speed = o.speed;
    this.#socket = new SerialSocket({
      provider: opts.provider,
      url: `${wsRoot(opts.baseUrl ?? LMNT_DEFAULT_BASE_URL)}/v1/ai/speech/stream`,
      headers: {},
      timeoutMs: opts.timeoutMs ?? 15_000,
      secret: apiKey,
      hello: JSON.stringify(init),
      goodbye: JSON.stringify({ command: "eof" }),
      opened: () => (this.#resetting = undefined),
      admit: (data) => this.#admit(data),
    });
  }

  /** Send `eof` and close the socket; an utterance in flight ends with an error. Idempotent. */
  override stop(): Promise<void> {
    return this.#socket.stop();
  }

  /**
   * TtsStarted, TtsAudio chunks as they arrive, a `tts_usage` Metrics frame, TtsStopped: the
   * text and a flush, audio until that flush's `complete`. Aborting `signal` (or leaving the
   * loop early) sends `reset` and ends the stream at once.
   */
  runTts(text: string, signal?: AbortSignal): AsyncGenerator<Frame> {
    const nonce = ++this.#nonce;
    return this.#socket.speak({
      text,
      model: this.#model,
      sampleRate: this.sampleRate(),
      send: (ws) => {
        ws.send(JSON.stringify({ text }));
        ws.send(JSON.stringify({ command: "flush", nonce }));
      },
      step: (data) => this.#step(data, nonce),
      cancel: (ws) => {
        this.#resetting = ++this.#nonce;
        ws.send(JSON.stringify({ command: "reset", nonce: this.#resetting }));
      },
    }, signal);
  }

  /** Drops what belongs to a reset utterance: everything before the reset's `complete`. */
  #admit(data: unknown): boolean {
    if (this.#resetting === undefined) return true;
    const msg = data instanceof ArrayBuffer ? undefined : parseJsonMessage(data);
    if (msg?.complete === "reset" && msg.nonce === this.#resetting) this.#resetting = undefined;
    return msg?.error !== undefined;
  }

  #step(data: unknown, nonce: number): SpeakStep | undefined {
    if (data instanceof ArrayBuffer) return { audio: new Uint8Array(data) };
    const msg = parseJsonMessage(data);
    if (!msg) return undefined;
    if (msg.error !== undefined) {
      const text = this.#socket.clean(String(msg.error) || "server error");
      // The key travels in the init message, so a refused key is an error message, not a 401.
      const auth = /api[ _-]?key|unauthori[sz]ed|forbidden|authenticat/i.test(text);
      throw new FlowcatError(auth ? "auth" : "other", `${this.name()}: ${text}`);
    }
    return msg.complete === "flush" && msg.nonce === nonce ? { done: true } : undefined;
  }
}

/** Make a {@link LmntTts}. */
export const createLmntTts = (opts: ServiceOptions): LmntTts => new LmntTts(opts);
