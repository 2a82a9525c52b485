/**
 * Google Cloud Text-to-Speech, `POST {base}/v1/text:synthesize` with an OAuth bearer from a
 * service-account key (auth.ts); one request per utterance.
 *
 * Wire (cloud.google.com/text-to-speech/docs/reference/rest/v1/text/synthesize): the body is
 * `{input: {text} | {ssml}, voice: {languageCode, name}, audioConfig: {audioEncoding:
 * "LINEAR16", sampleRateHertz, speakingRate?, pitch?}}`; the answer is `{audioContent}`, base64
 * of the audio, which for LINEAR16 is a whole WAV file (header included). Errors are
 * google.rpc.Status bodies: 401 UNAUTHENTICATED, 403 PERMISSION_DENIED, 429
 * RESOURCE_EXHAUSTED, 5xx (retried by providerFetch).
 *
 * Options: `voice` (default `en-US-Chirp3-HD-Charon`; its first two dash-separated parts are
 * the language unless `language` is set), and in `options`: `sample_rate` (8000, 16000 or 24000;
 * default 24000), `speaking_rate` (0.25-2), `pitch` (semitones, -20..20), `ssml` (true: the
 * text is SSML, wrapped in `<speak>` when it is not already; not every voice takes SSML),
 * `streaming` (true: gRPC StreamingSynthesize, see tts_stream.ts; Chirp 3 HD voices only, no
 * SSML or pitch; audio starts while the rest of the sentence is synthesized).
 *
 * @example
 * ```ts
 * import { createGoogleTts } from "@flowcat/flowcat/tts/google";
 * const keyJson = await Deno.readTextFile("/etc/flowcat/sa.json");
 * const tts = createGoogleTts({ provider: "google", apiKey: keyJson });
 * for await (const frame of tts.runTts("Hello there.")) console.log(frame.kind);
 * ```
 *
 * Permissions: `--allow-net=texttospeech.googleapis.com:443,oauth2.googleapis.com:443`.
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import { type Frame, makeFrame, type StartParams, ttsAudio } from "../../core/frames.ts";
import type { TtsService } from "../../core/seams.ts";
import { decodeWav } from "../../core/audio/wav.ts";
import { providerFetch } from "../http.ts";
import type { ServiceOptions } from "../service_options.ts";
import { ttsUsageFrame } from "../tts/_shared.ts";
import { GrpcChannel, grpcTarget } from "../grpc.ts";
import { streamingSynthesis } from "./tts_stream.ts";
import { type GoogleCredential, googleCredential } from "./auth.ts";
import { GOOGLE_TTS_DEFAULT_URL, GOOGLE_TTS_DEFAULT_VOICE } from "./defaults.ts";
export { GOOGLE_TTS_DEFAULT_URL, GOOGLE_TTS_DEFAULT_VOICE } from "./defaults.ts";

export type { ServiceOptions } from "../service_options.ts";

/** Output rates offered. */
const RATES = [8000, 16000, 24000];
/** Duration of each TtsAudio frame, ms. */
const CHUNK_MS = 100;

/** A text to SSML, wrapped in `<speak>` unless it already is. */
export function asSsml(text: string): string {
  return /^\s*<speak[\s>]/.test(text) ? text : `<speak>${text}</speak>`;
}

function numberIn(
  p: string,
  o: Record<string, unknown>,
  key: string,
  min: number,
  max: number,
): number | undefined {
  const v = o[key];
  if (v === undefined) return undefined;
  if (typeof v !== "number" || !(v >= min && v <= max)) {
    throw new FlowcatError("config", `${p}: options.${key} must be a number from ${min} to ${max}`);
  }
  return v;
}

/** The Cloud Text-to-Speech client. */
export class GoogleTts implements TtsService {
  readonly #provider: string;
  readonly #url: string;
  readonly #baseUrl: string;
  readonly #credential: GoogleCredential;
  readonly #voice: { languageCode: string; name: string };
  readonly #audioConfig: Record<string, unknown>;
  readonly #rate: number;
  readonly #ssml: boolean;
  readonly #opts: ServiceOptions;
  readonly #streaming: boolean;
  readonly #speakingRate: number | undefined;
  /** The gRPC connection of streaming synthesis, opened on first use. */
  #channel: GrpcChannel | undefined;

  /** A client; bad options throw a one-line `config` error. */
  constructor(opts: ServiceOptions) {
    const p = opts.provider;
    this.#credential = googleCredential(opts);
    this.#opts = opts;
    this.#provider = p;
    this.#baseUrl = (opts.baseUrl || GOOGLE_TTS_DEFAULT_URL).replace(/\/+$/, "");
    this.#url = `${this.#baseUrl}/v1/text:synthesize`;
    const name = opts.voice || GOOGLE_TTS_DEFAULT_VOICE;
    const languageCode = opts.language || name.split("-").slice(0, 2).join("-");
    this.#voice = { languageCode, name };
    const o = opts.options ?? {};
    const rate = o.sample_rate ?? 24000;
    if (!RATES.includes(rate as number)) {
      throw new FlowcatError("config", `${p}: options.sample_rate must be ${RATES.join(", ")}`);
    }
    this.#rate = rate as number;
    this.#audioConfig = { audioEncoding: "LINEAR16", sampleRateHertz: this.#rate };
    const speakingRate = numberIn(p, o, "speaking_rate", 0.25, 2);
    if (speakingRate !== undefined) this.#audioConfig.speakingRate = speakingRate;
    const pitch = numberIn(p, o, "pitch", -20, 20);
    if (pitch !== undefined) this.#audioConfig.pitch = pitch;
    if (o.ssml !== undefined && typeof o.ssml !== "boolean") {
      throw new FlowcatError("config", `${p}: options.ssml must be true or false`);
    }
    this.#ssml = o.ssml === true;
    if (o.streaming !== undefined && typeof o.streaming !== "boolean") {
      throw new FlowcatError("config", `${p}: options.streaming must be true or false`);
    }
    this.#streaming = o.streaming === true;
    if (this.#streaming && (this.#ssml || pitch !== undefined)) {
      throw new FlowcatError("config", `${p}: streaming synthesis takes neither ssml nor pitch`);
    }
    this.#speakingRate = speakingRate;
  }

  /** Provider name, as configured. */
  name(): string {
    return this.#provider;
  }

  /** Rate of the TtsAudio frames (`options.sample_rate`, default 24000). */
  sampleRate(): number {
    return this.#rate;
  }

  /** Nothing to open: every utterance is one HTTPS request. */
  async start(_params: StartParams): Promise<void> {}

  /** Close the streaming connection, if one was opened. Idempotent. */
  stop(): Promise<void> {
    this.#channel?.close();
    this.#channel = undefined;
    return Promise.resolve();
  }

  /** The request body for `text`. */
  requestBody(text: string): Record<string, unknown> {
    return {
      input: this.#ssml ? { ssml: asSsml(text) } : { text },
      voice: this.#voice,
      audioConfig: this.#audioConfig,
    };
  }

  /**
   * TtsStarted, ~100 ms TtsAudio frames, a `tts_usage` Metrics frame, TtsStopped. An abort
   * through `signal` ends the stream at once without TtsStopped; failures throw a FlowcatError.
   */
  async *runTts(text: string, signal?: AbortSignal): AsyncGenerator<Frame> {
    if (signal?.aborted) return;
    const contextId = crypto.randomUUID();
    yield makeFrame("TtsStarted", { contextId });
    if (text.trim() !== "" && this.#streaming) {
      for await (const pcm of this.#stream(text, signal)) {
        yield ttsAudio({ pcm, sampleRate: this.#rate, numChannels: 1 }, contextId);
      }
      if (signal?.aborted) return;
      yield ttsUsageFrame(this.#provider, this.#voice.name, text.length);
    } else if (text.trim() !== "") {
      const pcm = await this.#synthesize(text, signal);
      if (pcm === undefined) return;
      const step = (this.#rate * CHUNK_MS) / 1000;
      for (let at = 0; at < pcm.length; at += step) {
        if (signal?.aborted) return;
        const part = pcm.slice(at, at + step);
        yield ttsAudio({ pcm: part, sampleRate: this.#rate, numChannels: 1 }, contextId);
      }
      yield ttsUsageFrame(this.#provider, this.#voice.name, text.length);
    }
    yield makeFrame("TtsStopped", { contextId });
  }

  /** Samples of `text` from StreamingSynthesize, as they come; nothing once aborted. */
  async *#stream(text: string, signal?: AbortSignal): AsyncGenerator<Int16Array> {
    try {
      const auth = await this.#credential.headers(signal);
      this.#channel ??= await GrpcChannel.open(this.#provider, grpcTarget(this.#baseUrl));
      yield* streamingSynthesis(
        this.#channel,
        auth,
        this.#voice,
        this.#rate,
        this.#speakingRate,
        text,
        signal,
      );
    } catch (err) {
      if (signal?.aborted) return;
      if (err instanceof FlowcatError && err.kind === "auth") this.#credential.refused();
      throw err;
    }
  }

  /** The samples for `text`, or undefined when aborted. */
  async #synthesize(text: string, signal?: AbortSignal): Promise<Int16Array | undefined> {
    const http = {
      timeoutMs: this.#opts.timeoutMs,
      ...(this.#opts.fetch ? { fetch: this.#opts.fetch } : {}),
    };
    let audioContent: unknown;
    try {
      const auth = await this.#credential.headers(signal);
      const res = await providerFetch(this.#provider, this.#url, {
        method: "POST",
        headers: { "content-type": "application/json", ...auth },
        body: JSON.stringify(this.requestBody(text)),
      }, { ...http, signal });
      audioContent = (await res.json() as { audioContent?: unknown }).audioContent;
    } catch (err) {
      if (signal?.aborted) return undefined;
      if (err instanceof FlowcatError && err.kind === "auth") this.#credential.refused();
      if (err instanceof FlowcatError) throw err;
      throw new FlowcatError("protocol", `${this.#provider}: unreadable answer (${err})`);
    }
    if (typeof audioContent !== "string") {
      throw new FlowcatError("protocol", `${this.#provider}: answer has no audioContent`);
    }
    try {
      const wav = decodeWav(Uint8Array.from(atob(audioContent), (c) => c.charCodeAt(0)));
      if (wav.sampleRate !== this.#rate || wav.numChannels !== 1) {
        throw new Error(`${wav.sampleRate} Hz, ${wav.numChannels} channels`);
      }
      return wav.pcm;
    } catch (err) {
      throw new FlowcatError(
        "protocol",
        `${this.#provider}: audioContent is not ${this.#rate} Hz mono LINEAR16 WAV (${
          err instanceof Error ? err.message : err
        })`,
      );
    }
  }
}

/** Make a {@link GoogleTts}. */
export const createGoogleTts = (opts: ServiceOptions): GoogleTts => new GoogleTts(opts);
