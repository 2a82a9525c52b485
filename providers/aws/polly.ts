/**
 * Amazon Polly text-to-speech through `SynthesizeSpeech`
 * (`POST https://polly.<region>.amazonaws.com/v1/speech`, SigV4 signing name `polly`), asking
 * for raw PCM (`OutputFormat: "pcm"`: signed 16-bit little-endian mono, `SampleRate` "8000" or
 * "16000"), which Polly streams as the response body; each chunk becomes a TtsAudio frame as
 * it arrives. Request fields (docs.aws.amazon.com/polly/latest/dg/API_SynthesizeSpeech.html;
 * botocore/data/polly/2016-06-10/service-2.json `SynthesizeSpeechInput`): `Engine`,
 * `LanguageCode`, `OutputFormat`, `SampleRate`, `Text`, `TextType` (`text` or `ssml`),
 * `VoiceId`. Errors are REST-JSON (`x-amzn-ErrorType`, `{"message"}`): 400 for
 * `InvalidSsmlException`, `TextLengthExceededException`, ...; 403 for a refused signature.
 *
 * Options: `sample_rate` (8000 or 16000, default 16000), `engine` (`standard`, `neural`,
 * `long-form`, `generative`; default `neural`), `text_type` (`text` or `ssml`; with `ssml`
 * the text is sent as SSML, wrapped in `<speak>` when it has no root), `region`.
 *
 * @example
 * ```ts
 * import { createPollyTts } from "@flowcat/flowcat/tts/aws";
 * declare const id: string, secret: string;
 * const tts = createPollyTts({
 *   provider: "aws",
 *   voice: "Joanna",
 *   credentials: { AWS_ACCESS_KEY_ID: id, AWS_SECRET_ACCESS_KEY: secret },
 *   options: { sample_rate: 8000 },
 * });
 * for await (const frame of tts.runTts("Hello there.")) console.log(frame.kind);
 * ```
 *
 * Permissions: `--allow-net=polly.<region>.amazonaws.com:443` (or the `url` given).
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import { type Frame, makeFrame, type StartParams, ttsAudio } from "../../core/frames.ts";
import type { TtsService } from "../../core/seams.ts";
import type { ServiceOptions } from "../service_options.ts";
import { PcmAssembler, ttsUsageFrame } from "../tts/_shared.ts";
import {
  type AwsAccess,
  awsAccess,
  POLLY,
  POLLY_DEFAULT_ENGINE,
  POLLY_DEFAULT_VOICE,
} from "./defaults.ts";
import { signedPost } from "./signed_http.ts";

export type { ServiceOptions } from "../service_options.ts";

/** The PCM rates Polly produces. */
export const POLLY_PCM_RATES: readonly number[] = [8000, 16000];
const ENGINES = ["standard", "neural", "long-form", "generative"];

/** Amazon Polly client (see the module doc). */
export class PollyTts implements TtsService {
  readonly #provider: string;
  readonly #access: AwsAccess;
  readonly #url: URL;
  readonly #voice: string;
  readonly #engine: string;
  readonly #rate: number;
  readonly #ssml: boolean;
  readonly #language: string | undefined;
  readonly #opts: ServiceOptions;

  /** Build a client; bad options, missing credentials or a bad region are `config` errors. */
  constructor(opts: ServiceOptions) {
    const p = opts.provider;
    const o = opts.options ?? {};
    this.#provider = p;
    this.#access = awsAccess(opts);
    const base = (opts.baseUrl || `https://${POLLY.host(this.#access.region)}`)
      .replace(/:443$/, "").replace(/\/+$/, "");
    this.#url = new URL(`${base}/v1/speech`);
    this.#voice = opts.voice || POLLY_DEFAULT_VOICE;
    const rate = o.sample_rate ?? 16000;
    if (typeof rate !== "number" || !POLLY_PCM_RATES.includes(rate)) {
      throw new FlowcatError("config", `${p}: options.sample_rate must be 8000 or 16000`);
    }
    this.#rate = rate;
    const engine = o.engine ?? opts.model ?? POLLY_DEFAULT_ENGINE;
    if (typeof engine !== "string" || !ENGINES.includes(engine)) {
      throw new FlowcatError("config", `${p}: options.engine must be one of ${ENGINES.join(", ")}`);
    }
    this.#engine = engine;
    const textType = o.text_type ?? "text";
    if (textType !== "text" && textType !== "ssml") {
      throw new FlowcatError("config", `${p}: options.text_type must be text or ssml`);
    }
    this.#ssml = textType === "ssml";
    // Polly takes a full code (en-US) and only for bilingual voices; the voice decides otherwise.
    this.#language = opts.language && /^[a-z]{2,3}-[A-Z]{2}$/.test(opts.language)
      ? opts.language
      : undefined;
    this.#opts = opts;
  }

  /** Provider name, as configured. */
  name(): string {
    return this.#provider;
  }

  /** Rate of the TtsAudio frames: `options.sample_rate`. */
  sampleRate(): number {
    return this.#rate;
  }

  /** Nothing to open: each utterance is one HTTP request. */
  async start(_params: StartParams): Promise<void> {}

  /** The `SynthesizeSpeech` body for `text` (exposed for tests). */
  requestBody(text: string): Record<string, unknown> {
    const body: Record<string, unknown> = {
      Engine: this.#engine,
      OutputFormat: "pcm",
      SampleRate: String(this.#rate),
      Text: this.#ssml && !/^\s*<speak[\s>]/.test(text) ? `<speak>${text}</speak>` : text,
      TextType: this.#ssml ? "ssml" : "text",
      VoiceId: this.#voice,
    };
    if (this.#language) body.LanguageCode = this.#language;
    return body;
  }

  /**
   * TtsStarted, TtsAudio as the body streams, a `tts_usage` Metrics frame, TtsStopped. An
   * abort through `signal` cancels the request or body at once and ends without TtsStopped.
   */
  async *runTts(text: string, signal?: AbortSignal): AsyncGenerator<Frame> {
    if (signal?.aborted) return;
    const contextId = crypto.randomUUID();
    yield makeFrame("TtsStarted", { contextId });
    if (text.trim() === "") {
      yield makeFrame("TtsStopped", { contextId });
      return;
    }
    let res: Response;
    try {
      res = await signedPost(this.#url, JSON.stringify(this.requestBody(text)), {
        provider: this.#provider,
        service: POLLY,
        access: this.#access,
        timeoutMs: this.#opts.timeoutMs,
        signal,
        fetch: this.#opts.fetch,
      });
    } catch (err) {
      if (signal?.aborted) return;
      throw err;
    }
    const pcm = new PcmAssembler();
    try {
      for await (const bytes of res.body ?? []) {
        const samples = pcm.push(bytes);
        if (samples.length > 0) {
          yield ttsAudio({ pcm: samples, sampleRate: this.#rate, numChannels: 1 }, contextId);
        }
      }
    } catch (err) {
      if (signal?.aborted) return;
      throw new FlowcatError(
        "closed",
        `${this.#provider}: audio stream broke: ${err instanceof Error ? err.message : err}`,
        { cause: err },
      );
    }
    if (signal?.aborted) return;
    yield ttsUsageFrame(this.#provider, `polly/${this.#engine}`, text.length);
    yield makeFrame("TtsStopped", { contextId });
  }
}

/** Make an Amazon Polly client from service options. */
export function createPollyTts(opts: ServiceOptions): PollyTts {
  return new PollyTts(opts);
}
