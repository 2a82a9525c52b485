/**
 * Deepgram Aura streaming text-to-speech over its speak WebSocket.
 *
 * Wire facts (sources: docs/providers/deepgram.md, "Text to speech"):
 * - `wss://api.deepgram.com/v1/speak?model=<voice>&encoding=linear16&sample_rate=<rate>` with
 *   the header `Authorization: Token <key>`; a refused key is HTTP 401 at the handshake, too
 *   many concurrent connections HTTP 429.
 * - Client text messages `{type:"Speak", text}`, `{type:"Flush"}` (synthesise the buffer now),
 *   `{type:"Clear"}` (drop the buffer and the audio in flight), `{type:"Close"}`.
 * - Server: binary frames of raw 16-bit little-endian PCM, and JSON `Metadata`,
 *   `Flushed {sequence_id}`, `Cleared {sequence_id}`, `Warning {description, code}`; faults
 *   close the socket with a non-1000 code and a reason.
 * - The socket carries one stream of audio with no utterance ids, so utterances run one at a
 *   time (providers/tts/_serial_socket.ts); an aborted one sends `Clear` and the audio that
 *   still arrives before `Cleared` is dropped.
 *
 * Permissions: `--allow-net=api.deepgram.com:443` (or the `baseUrl` given).
 * @example
 * ```ts
 * import { createDeepgramTts } from "@flowcat/flowcat/tts/deepgram";
 * const tts = createDeepgramTts({ provider: "deepgram", apiKey: Deno.env.get("DEEPGRAM_API_KEY") });
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
  DEEPGRAM_TTS_DEFAULT_BASE_URL,
  DEEPGRAM_TTS_DEFAULT_MODEL,
  DEEPGRAM_TTS_DEFAULT_SAMPLE_RATE,
  DEEPGRAM_TTS_RATES,
} from "./defaults.ts";

export { StreamingTts } from "../tts/_shared.ts";

/** The Deepgram Aura WebSocket text-to-speech service: one socket, one utterance at a time. */
export class DeepgramTts extends StreamingTts {
  readonly #url: string;
  readonly #model: string;
  readonly #socket: SerialSocket;
  /** `Clear` messages sent whose `Cleared` has not come back: audio until then is stale. */
  #clearing = 0;

  /** Make the service; a missing key or an unusable rate is a config error here. */
  constructor(opts: ServiceOptions) {
    const { apiKey, rate } = keyAndRate(opts, DEEPGRAM_TTS_RATES, DEEPGRAM_TTS_DEFAULT_SAMPLE_RATE);
    super(opts.provider, rate);
    // An Aura model is a voice: a configured voice wins over the (default) model.
    this.#model = opts.voice ?? opts.model ?? DEEPGRAM_TTS_DEFAULT_MODEL;
    const query = new URLSearchParams({
      model: this.#model,
      encoding: "linear16",
      sample_rate: String(rate),
    });
    if (opts.options?.mip_opt_out === true) query.set("mip_opt_out", "true");
    const root = wsRoot(opts.baseUrl ?? DEEPGRAM_TTS_DEFAULT_BASE_URL);
    this.#url = `${root}/v1/speak?${query}`;
    this.#socket = new SerialSocket({
      provider: opts.provider,
      url: this.#url,
      headers: { Authorization: `Token ${apiKey}` },
      timeoutMs: opts.timeoutMs ?? 15_000,
      secret: apiKey,
      goodbye: JSON.stringify({ type: "Close" }),
      opened: () => (this.#clearing = 0),
      admit: (data) => this.#admit(data),
    });
  }

  /** The handshake URL (the key is not in it). */
  url(): string {
    return this.#url;
  }

  /** Send `Close` and close the socket; an utterance in flight ends with an error. Idempotent. */
  override stop(): Promise<void> {
    return this.#socket.stop();
  }

  /**
   * TtsStarted, TtsAudio chunks as they arrive, a `tts_usage` Metrics frame, TtsStopped: one
   * `Speak` and a `Flush`, audio until `Flushed`. Aborting `signal` (or leaving the loop early)
   * sends `Clear` and ends the stream at once (no TtsStopped).
   */
  runTts(text: string, signal?: AbortSignal): AsyncGenerator<Frame> {
    return this.#socket.speak({
      text,
      model: this.#model,
      sampleRate: this.sampleRate(),
      send: (ws) => {
        ws.send(JSON.stringify({ type: "Speak", text }));
        ws.send(JSON.stringify({ type: "Flush" }));
      },
      step: (data) => this.#step(data),
      cancel: (ws) => {
        this.#clearing++;
        ws.send(JSON.stringify({ type: "Clear" }));
      },
    }, signal);
  }

  /** Drops what belongs to a cleared utterance: everything before its `Cleared`. */
  #admit(data: unknown): boolean {
    if (data instanceof ArrayBuffer) return this.#clearing === 0;
    const type = parseJsonMessage(data)?.type;
    if (type === "Cleared") {
      this.#clearing = Math.max(0, this.#clearing - 1);
      return false;
    }
    return type !== "Flushed" || this.#clearing === 0;
  }

  #step(data: unknown): SpeakStep | undefined {
    if (data instanceof ArrayBuffer) return { audio: new Uint8Array(data) };
    const msg = parseJsonMessage(data);
    if (msg?.type === "Flushed") return { done: true };
    if (msg?.type === "Error") {
      const text = [msg.description, msg.err_msg, msg.message].find((v) => typeof v === "string");
      throw new FlowcatError(
        "other",
        `${this.name()}: ${this.#socket.clean(String(text ?? "server error"))}`,
      );
    }
    return undefined;
  }
}

/** Make a {@link DeepgramTts}. */
export const createDeepgramTts = (opts: ServiceOptions): DeepgramTts => new DeepgramTts(opts);
