/**
 * Hume Octave streaming text-to-speech over HTTP (JSON lines).
 *
 * Wire facts (sources: docs/providers/hume.md):
 * - `POST https://api.hume.ai/v0/tts/stream/json` with `X-Hume-Api-Key: <key>` and the body
 *   `{utterances:[{text, voice:{name, provider} | {id}, description?, speed?, trailing_silence?}],
 *   format:{type:"pcm"}, instant_mode:true, strip_headers:true, version?}`.
 * - The answer is newline-delimited JSON; each audio chunk is `{type:"audio", audio (base64),
 *   chunk_index, generation_id, is_last_chunk, ...}`; other records (timestamps) are skipped. The
 *   utterance ends with the body. PCM comes at 48 kHz only.
 *
 * Permissions: `--allow-net=api.hume.ai:443` (or the `baseUrl` given).
 * @example
 * ```ts
 * import { createHumeTts } from "@flowcat/flowcat/tts/hume";
 * const tts = createHumeTts({ provider: "hume", apiKey: Deno.env.get("HUME_API_KEY") });
 * for await (const frame of tts.runTts("Hello there.")) console.log(frame.kind);
 * ```
 * @module
 */

import type { Frame } from "../../core/frames.ts";
import type { ServiceOptions } from "../service_options.ts";
import { decodeBase64 } from "../ws_client.ts";
import { readJsonLines, streamHttpTts } from "../tts/_http_stream.ts";
import { keyAndRate, StreamingTts } from "../tts/_shared.ts";
import { HUME_DEFAULT_BASE_URL, HUME_DEFAULT_VOICE, HUME_SAMPLE_RATE } from "./defaults.ts";

export { StreamingTts } from "../tts/_shared.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The Hume Octave text-to-speech service: one streamed HTTP request per utterance. */
export class HumeTts extends StreamingTts {
  readonly #apiKey: string;
  readonly #url: string;
  readonly #model: string;
  readonly #utterance: Record<string, unknown>;
  readonly #request: Record<string, unknown>;
  readonly #timeoutMs: number;
  readonly #fetch?: typeof fetch;

  /** Make the service; a missing key or a rate other than 48 kHz is a config error here. */
  constructor(opts: ServiceOptions) {
    const { apiKey } = keyAndRate(opts, [HUME_SAMPLE_RATE], HUME_SAMPLE_RATE);
    super(opts.provider, HUME_SAMPLE_RATE);
    this.#apiKey = apiKey;
    const o = opts.options ?? {};
    this.#url = `${(opts.baseUrl ?? HUME_DEFAULT_BASE_URL).replace(/\/+$/, "")}/v0/tts/stream/json`;
    const voice = opts.voice ?? HUME_DEFAULT_VOICE;
    const provider = o.voice_provider === "CUSTOM_VOICE" ? "CUSTOM_VOICE" : "HUME_AI";
    this.#utterance = {
      // A voice id is a UUID; anything else is a voice name in the chosen library.
      voice: UUID.test(voice) ? { id: voice, provider } : { name: voice, provider },
      ...(typeof o.description === "string" ? { description: o.description } : {}),
      ...(typeof o.speed === "number" ? { speed: o.speed } : {}),
      ...(typeof o.trailing_silence === "number" ? { trailing_silence: o.trailing_silence } : {}),
    };
    // `model` picks the Octave version ("1" or "2"); Hume's default when absent.
    this.#model = opts.model ?? "octave";
    this.#request = {
      format: { type: "pcm" },
      instant_mode: o.instant_mode !== false,
      strip_headers: true,
      ...(opts.model ? { version: opts.model } : {}),
    };
    this.#timeoutMs = opts.timeoutMs ?? 15_000;
    this.#fetch = opts.fetch;
  }

  /**
   * TtsStarted, a TtsAudio frame per audio record, a `tts_usage` Metrics frame, TtsStopped. Rate
   * limits and server errors are retried (providers/http.ts); an abort through `signal` cancels
   * the request or the stream at once and ends without TtsStopped.
   */
  runTts(text: string, signal?: AbortSignal): AsyncGenerator<Frame> {
    return streamHttpTts({
      provider: this.name(),
      text,
      model: this.#model,
      sampleRate: HUME_SAMPLE_RATE,
      url: this.#url,
      headers: { "X-Hume-Api-Key": this.#apiKey },
      body: { utterances: [{ text, ...this.#utterance }], ...this.#request },
      timeoutMs: this.#timeoutMs,
      fetch: this.#fetch,
      audio: (body, sig) => this.#audio(body, sig),
    }, signal);
  }

  async *#audio(
    body: ReadableStream<Uint8Array>,
    signal?: AbortSignal,
  ): AsyncGenerator<Uint8Array> {
    for await (const rec of readJsonLines(body, signal)) {
      if (rec.type !== undefined && rec.type !== "audio") continue;
      if (typeof rec.audio === "string" && rec.audio) yield decodeBase64(this.name(), rec.audio);
    }
  }
}

/** Make a {@link HumeTts}. */
export const createHumeTts = (opts: ServiceOptions): HumeTts => new HumeTts(opts);
