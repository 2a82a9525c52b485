/**
 * Fish Audio streaming text-to-speech over its live WebSocket, MessagePack-framed.
 *
 * Wire facts (sources: docs/providers/fish.md):
 * - `wss://api.fish.audio/v1/tts/live` with the headers `Authorization: Bearer <key>` and
 *   `model: <model>`; every message is a binary MessagePack map.
 * - Client: `{event:"start", request:{text:"", format:"pcm", sample_rate, latency, normalize,
 *   reference_id?, prosody?}}`, then `{event:"text", text}`, then `{event:"stop"}`.
 * - Server: `{event:"audio", audio:<bin>}`, and `{event:"finish", reason:"stop"|"error"}`.
 * - A socket carries one session and the end of the audio is only told by `finish`, after
 *   `stop`: each utterance is a session on its own socket (start, text, stop, audio until
 *   finish); aborting closes that socket.
 *
 * Permissions: `--allow-net=api.fish.audio:443` (or the `baseUrl` given).
 * @example
 * ```ts
 * import { createFishTts } from "@flowcat/flowcat/tts/fish";
 * const tts = createFishTts({ provider: "fish", apiKey: Deno.env.get("FISH_API_KEY") });
 * for await (const frame of tts.runTts("Hello there.")) console.log(frame.kind);
 * ```
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import type { Frame } from "../../core/frames.ts";
import type { ServiceOptions } from "../service_options.ts";
import { isJsonObject, wsRoot } from "../ws_client.ts";
import { SerialSocket, type SpeakStep } from "../tts/_serial_socket.ts";
import { keyAndRate, StreamingTts } from "../tts/_shared.ts";
import { type MsgValue, packMsg, unpackMsg } from "./wire.ts";
import {
  FISH_DEFAULT_BASE_URL,
  FISH_DEFAULT_MODEL,
  FISH_DEFAULT_SAMPLE_RATE,
  FISH_RATES,
} from "./defaults.ts";

export { StreamingTts } from "../tts/_shared.ts";

/** The Fish Audio live text-to-speech service: a socket per utterance. */
export class FishTts extends StreamingTts {
  readonly #model: string;
  readonly #socket: SerialSocket;

  /** Make the service; a missing key or an unusable rate is a config error here. */
  constructor(opts: ServiceOptions) {
    const { apiKey, rate } = keyAndRate(opts, FISH_RATES, FISH_DEFAULT_SAMPLE_RATE);
    super(opts.provider, rate);
    const o = opts.options ?? {};
    this.#model = opts.model ?? FISH_DEFAULT_MODEL;
    const latency = o.latency === "normal" || o.latency === "balanced" ? o.latency : "balanced";
    const request: Record<string, MsgValue | undefined> = {
      text: "",
      format: "pcm",
      sample_rate: rate,
      latency,
      normalize: o.normalize !== false,
      reference_id: opts.voice,
      prosody: typeof o.speed === "number" ? { speed: o.speed, volume: 0 } : undefined,
    };
    this.#socket = new SerialSocket({
      provider: opts.provider,
      url: `${wsRoot(opts.baseUrl ?? FISH_DEFAULT_BASE_URL)}/v1/tts/live`,
      headers: { Authorization: `Bearer ${apiKey}`, model: this.#model },
      timeoutMs: opts.timeoutMs ?? 15_000,
      secret: apiKey,
      hello: packMsg({ event: "start", request }),
      oneShot: true,
    });
  }

  /** Wait for sockets still closing. Idempotent. */
  override stop(): Promise<void> {
    return this.#socket.stop();
  }

  /**
   * TtsStarted, TtsAudio chunks as they arrive, a `tts_usage` Metrics frame, TtsStopped: one
   * session (start, text, stop) and its audio until `finish`. Aborting `signal` (or leaving the
   * loop early) closes the session's socket and ends the stream at once.
   */
  runTts(text: string, signal?: AbortSignal): AsyncGenerator<Frame> {
    return this.#socket.speak({
      text,
      model: this.#model,
      sampleRate: this.sampleRate(),
      send: (ws) => {
        ws.send(packMsg({ event: "text", text }));
        ws.send(packMsg({ event: "stop" }));
      },
      step: (data) => this.#step(data),
      cancel: () => {}, // the socket is closed: that ends the session
    }, signal);
  }

  #step(data: unknown): SpeakStep | undefined {
    if (!(data instanceof ArrayBuffer)) return undefined;
    let msg: MsgValue;
    try {
      msg = unpackMsg(new Uint8Array(data));
    } catch {
      throw new FlowcatError("protocol", `${this.name()}: a message is not valid MessagePack`);
    }
    if (!isJsonObject(msg)) return undefined;
    if (msg.event === "audio" && msg.audio instanceof Uint8Array) return { audio: msg.audio };
    if (msg.event !== "finish") return undefined;
    if (msg.reason === "stop") return { done: true };
    throw new FlowcatError(
      "other",
      `${this.name()}: synthesis failed (finish: ${String(msg.reason)})`,
    );
  }
}

/** Make a {@link FishTts}. */
export const createFishTts = (opts: ServiceOptions): FishTts => new FishTts(opts);
