/**
 * Text-to-speech from a local Piper HTTP server (`python3 -m piper.http_server`), no key.
 *
 * Piper answers one whole WAV per request (16-bit mono at the voice's rate: 22050 Hz for
 * "medium"/"high" voices, 16000 Hz for "low"/"x_low"), after synthesizing all of it. The WAV
 * is decoded, resampled to {@link PiperTts.sampleRate} when the rates differ, and yielded in
 * ~100 ms TtsAudio frames.
 *
 * The server's API changed between releases; `options.api` picks the one spoken:
 * - `"synthesize"` (default; piper-tts >= 1.5): `POST /synthesize`, JSON `{text, voice?,
 *   speaker?, speaker_id?, length_scale?, noise_scale?, noise_w_scale?}`;
 * - `"root"` (piper-tts 1.3 - 1.4): the same JSON posted to `/`;
 * - `"legacy"` (rhasspy/piper, 2023): `POST /` with the text as the raw body; voice settings
 *   are the server's command-line flags.
 *
 * @example
 * ```ts
 * import { createPiperTts } from "@flowcat/flowcat/tts/piper";
 * const tts = createPiperTts({ provider: "piper", voice: "en_US-lessac-medium" });
 * for await (const frame of tts.runTts("Hello there.")) console.log(frame.kind);
 * ```
 *
 * Permissions: `--allow-net=<the Piper server's host:port>` (`127.0.0.1:5000` by default).
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import {
  type AudioFrame,
  type Frame,
  makeFrame,
  type StartParams,
  ttsAudio,
} from "../../core/frames.ts";
import type { TtsService } from "../../core/seams.ts";
import { Resampler } from "../../core/audio/resample.ts";
import { decodeWav } from "../../core/audio/wav.ts";
import { providerFetch } from "../http.ts";
import type { ServiceOptions } from "../service_options.ts";

export type { ServiceOptions } from "../service_options.ts";
import { positiveOption, ttsUsageFrame } from "../tts/_shared.ts";
import { PIPER_BASE_URL } from "./defaults.ts";
export { PIPER_BASE_URL } from "./defaults.ts";

/** Rate of "medium" and "high" Piper voices, the default output rate. */
export const PIPER_SAMPLE_RATE = 22050;
/** Duration of each TtsAudio frame. */
const CHUNK_MS = 100;

/** Which generation of the Piper HTTP API the server speaks. */
export type PiperApi = "synthesize" | "root" | "legacy";

const APIS: readonly PiperApi[] = ["synthesize", "root", "legacy"];
/** Numeric synthesis settings forwarded as JSON fields (names as the server reads them). */
const SCALES = ["length_scale", "noise_scale", "noise_w_scale"] as const;

/** The Piper HTTP client. */
export class PiperTts implements TtsService {
  readonly #provider: string;
  readonly #baseUrl: string;
  readonly #api: PiperApi;
  readonly #voice: string | undefined;
  readonly #model: string;
  readonly #rate: number;
  readonly #fields: Record<string, unknown> = {};
  readonly #apiKey: string | undefined;
  readonly #timeoutMs: number | undefined;
  readonly #fetch: typeof fetch;

  /**
   * Options: `baseUrl` (default {@link PIPER_BASE_URL}), `voice` (a voice name the server can
   * load from its data directory, e.g. `en_US-lessac-medium`; default the server's `-m`), and
   * in `options`: `api`, `sample_rate` (output rate, default 22050), `speaker`, `speaker_id`,
   * `length_scale`, `noise_scale`, `noise_w_scale`. `apiKey` is sent as a Bearer token only
   * when given (Piper has none; a proxy in front may). Bad options throw a `config` error.
   */
  constructor(opts: ServiceOptions) {
    const p = opts.provider;
    const o = opts.options ?? {};
    this.#provider = p;
    this.#baseUrl = (opts.baseUrl ?? PIPER_BASE_URL).replace(/\/+$/, "");
    const api = o.api ?? "synthesize";
    if (!APIS.includes(api as PiperApi)) {
      throw new FlowcatError("config", `${p}: options.api must be one of ${APIS.join(", ")}`);
    }
    this.#api = api as PiperApi;
    this.#voice = opts.voice;
    this.#model = opts.model ?? opts.voice ?? "piper";
    this.#rate = positiveOption(p, o, "sample_rate", true) ?? PIPER_SAMPLE_RATE;
    // Validates the rate against the resampler's limits now rather than mid-call.
    new Resampler(PIPER_SAMPLE_RATE, this.#rate);
    for (const key of SCALES) {
      const v = positiveOption(p, o, key);
      if (v !== undefined) this.#fields[key] = v;
    }
    if (o.speaker_id !== undefined) {
      if (!Number.isInteger(o.speaker_id) || (o.speaker_id as number) < 0) {
        throw new FlowcatError("config", `${p}: options.speaker_id must be an integer >= 0`);
      }
      this.#fields.speaker_id = o.speaker_id;
    }
    if (o.speaker !== undefined) {
      if (typeof o.speaker !== "string") {
        throw new FlowcatError("config", `${p}: options.speaker must be a string`);
      }
      this.#fields.speaker = o.speaker;
    }
    this.#apiKey = opts.apiKey || undefined;
    this.#timeoutMs = opts.timeoutMs;
    this.#fetch = opts.fetch ?? fetch;
  }

  // name, sampleRate and start read as in openai_tts.ts: the TtsService skeleton of an HTTP client.

  /** Provider name, as configured. */
  name(): string {
    return this.#provider;
  }

  /** Rate of the TtsAudio frames (22050 unless `options.sample_rate` says otherwise). */
  sampleRate(): number {
    return this.#rate;
  }

  /** Nothing to open: every utterance is one HTTP request. */
  async start(_params: StartParams): Promise<void> {}

  /** The request for `text` in the configured API generation. */
  #request(text: string): { url: string; init: RequestInit } {
    const headers: Record<string, string> = {};
    if (this.#apiKey) headers.authorization = `Bearer ${this.#apiKey}`;
    if (this.#api === "legacy") {
      headers["content-type"] = "text/plain; charset=utf-8";
      return { url: `${this.#baseUrl}/`, init: { method: "POST", headers, body: text } };
    }
    headers["content-type"] = "application/json";
    const json: Record<string, unknown> = { ...this.#fields, text };
    if (this.#voice) json.voice = this.#voice;
    const path = this.#api === "synthesize" ? "/synthesize" : "/";
    return {
      url: `${this.#baseUrl}${path}`,
      init: { method: "POST", headers, body: JSON.stringify(json) },
    };
  }

  /**
   * TtsStarted, ~100 ms TtsAudio frames, a `tts_usage` Metrics frame, TtsStopped. Blank text
   * gives TtsStarted, TtsStopped without a request. An abort through `signal` cancels the
   * request or body read at once and ends the stream without TtsStopped. HTTP failures and a
   * reply that is not 16-bit mono WAV throw a {@link FlowcatError} naming the provider.
   */
  async *runTts(text: string, signal?: AbortSignal): AsyncGenerator<Frame> {
    if (signal?.aborted) return;
    const contextId = crypto.randomUUID();
    yield makeFrame("TtsStarted", { contextId });
    if (text.trim() === "") {
      yield makeFrame("TtsStopped", { contextId });
      return;
    }
    const { url, init } = this.#request(text);
    let wav: Uint8Array;
    try {
      const res = await providerFetch(this.#provider, url, init, {
        timeoutMs: this.#timeoutMs,
        signal,
        fetch: this.#fetch,
      });
      // `signal` also aborts this read: providerFetch hands it to fetch.
      wav = new Uint8Array(await res.arrayBuffer());
    } catch (err) {
      if (signal?.aborted) return;
      if (err instanceof FlowcatError) throw err;
      throw new FlowcatError(
        "closed",
        `${this.#provider}: reading the audio failed: ${err instanceof Error ? err.message : err}`,
        { cause: err },
      );
    }
    if (signal?.aborted) return;
    const pcm = this.#decode(wav);
    const step = Math.max(1, Math.round((this.#rate * CHUNK_MS) / 1000));
    for (let at = 0; at < pcm.length; at += step) {
      if (signal?.aborted) return;
      const part = pcm.slice(at, Math.min(at + step, pcm.length));
      yield ttsAudio({ pcm: part, sampleRate: this.#rate, numChannels: 1 }, contextId);
    }
    if (signal?.aborted) return;
    yield ttsUsageFrame(this.#provider, this.#model, text.length);
    yield makeFrame("TtsStopped", { contextId });
  }

  /** Samples of Piper's WAV at {@link sampleRate}. */
  #decode(wav: Uint8Array): Int16Array {
    let audio: AudioFrame;
    try {
      audio = decodeWav(wav);
    } catch (err) {
      throw new FlowcatError(
        "protocol",
        `${this.#provider}: reply is not usable WAV audio: ${
          err instanceof Error ? err.message : err
        }`,
        { cause: err },
      );
    }
    if (audio.numChannels !== 1) {
      throw new FlowcatError(
        "protocol",
        `${this.#provider}: reply has ${audio.numChannels} channels; only mono is supported`,
      );
    }
    if (audio.sampleRate === this.#rate) return audio.pcm;
    return new Resampler(audio.sampleRate, this.#rate).process(audio.pcm);
  }
}

/** Make a {@link PiperTts}. */
export const createPiperTts = (opts: ServiceOptions): PiperTts => new PiperTts(opts);
