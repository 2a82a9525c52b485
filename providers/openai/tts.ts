/**
 * Text-to-speech over the OpenAI-compatible speech endpoint, `POST {baseUrl}/audio/speech`:
 * OpenAI itself and the servers that copy its shape (Kokoro-FastAPI, Speaches, Groq,
 * DeepInfra). The body is `{model, input, voice, response_format, speed?, instructions?}`.
 *
 * `response_format: "pcm"` (the default) is raw 24 kHz 16-bit little-endian mono, sent with
 * chunked transfer as it is synthesized; every network chunk becomes a TtsAudio frame at once
 * (an odd trailing byte waits for the next chunk). `"wav"` (for servers without `pcm`, e.g.
 * Groq) is decoded as it streams: the header is parsed, then the samples flow the same way,
 * resampled when the WAV's rate differs from {@link OpenAITts.sampleRate}.
 *
 * @example
 * ```ts
 * import { createOpenAITts } from "@flowcat/flowcat/tts/openai";
 * const tts = createOpenAITts({ provider: "openai", apiKey: Deno.env.get("OPENAI_API_KEY") });
 * for await (const frame of tts.runTts("Hello there.")) console.log(frame.kind);
 * ```
 *
 * Permissions: `--allow-net=<the service's host>` (`api.openai.com:443` by default).
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import { type Frame, makeFrame, type StartParams, ttsAudio } from "../../core/frames.ts";
import type { TtsService } from "../../core/seams.ts";
import { Resampler } from "../../core/audio/resample.ts";
import { decodeWav } from "../../core/audio/wav.ts";
import { providerFetch } from "../http.ts";
import type { ServiceOptions } from "../service_options.ts";
import { PcmAssembler, positiveOption, ttsUsageFrame } from "../tts/_shared.ts";
import {
  OPENAI_TTS_BASE_URL,
  OPENAI_TTS_DEFAULT_MODEL,
  OPENAI_TTS_DEFAULT_VOICE,
} from "./defaults.ts";
export {
  OPENAI_TTS_BASE_URL,
  OPENAI_TTS_DEFAULT_MODEL,
  OPENAI_TTS_DEFAULT_VOICE,
} from "./defaults.ts";

export type { ServiceOptions } from "../service_options.ts";

/** Rate of OpenAI's `pcm` output (the API offers no other). */
export const OPENAI_TTS_SAMPLE_RATE = 24000;

/** Audio formats this client can decode. */
export type OpenAITtsFormat = "pcm" | "wav";

/** Defaults of a provider that rides on this client; explicit options win. */
export interface OpenAITtsPreset {
  /** API root the speech path is appended to. */
  baseUrl: string;
  /** Default model id. */
  model: string;
  /** Default voice name. */
  voice: string;
  /** Environment variable the operator's key lives in (none for local servers). */
  keyEnv?: string;
  /** Audio format requested from the server. */
  format: OpenAITtsFormat;
  /** Sample rate of the audio the server returns, in Hz. */
  sampleRate: number;
}

/**
 * Known providers, by name. Sources: OpenAI API reference; Kokoro-FastAPI README (port 8880,
 * model "kokoro"); speaches docs/usage/text-to-speech.md (port 8000, pcm and `sample_rate`
 * accepted); Groq via pipecat/livekit/jambonz docs (Orpheus, WAV only, 48 kHz); DeepInfra via
 * client code calling /v1/openai/audio/speech (its `pcm` support is unverified, so WAV).
 */
export const OPENAI_TTS_PRESETS: Readonly<Record<string, OpenAITtsPreset>> = {
  openai: {
    baseUrl: OPENAI_TTS_BASE_URL,
    model: OPENAI_TTS_DEFAULT_MODEL,
    voice: OPENAI_TTS_DEFAULT_VOICE,
    keyEnv: "OPENAI_API_KEY",
    format: "pcm",
    sampleRate: OPENAI_TTS_SAMPLE_RATE,
  },
  kokoro: {
    baseUrl: "http://127.0.0.1:8880/v1",
    model: "kokoro",
    voice: "af_bella",
    format: "pcm",
    sampleRate: 24000,
  },
  speaches: {
    baseUrl: "http://127.0.0.1:8000/v1",
    model: "speaches-ai/Kokoro-82M-v1.0-ONNX",
    voice: "af_heart",
    format: "pcm",
    sampleRate: 24000,
  },
  groq: {
    baseUrl: "https://api.groq.com/openai/v1",
    model: "canopylabs/orpheus-v1-english",
    voice: "autumn",
    keyEnv: "GROQ_API_KEY",
    format: "wav",
    sampleRate: 48000,
  },
  deepinfra: {
    baseUrl: "https://api.deepinfra.com/v1/openai",
    model: "hexgrad/Kokoro-82M",
    voice: "af_bella",
    keyEnv: "DEEPINFRA_API_KEY",
    format: "wav",
    sampleRate: 24000,
  },
};

/** A WAV header never needs more than this before its `data` chunk; beyond it is garbage. */
const MAX_WAV_HEADER = 64 * 1024;

/**
 * A WAV file decoded while it streams: header bytes are held until the `data` chunk starts,
 * then samples come out as they arrive, resampled to `outRate` if the file's rate differs.
 * Only 16-bit mono PCM is accepted (what speech servers send).
 */
export class WavStreamDecoder {
  readonly #provider: string;
  readonly #outRate: number;
  #head: Uint8Array = new Uint8Array(0);
  #pcm: PcmAssembler | undefined;
  #resampler: Resampler | undefined;
  /** Data bytes still expected; Infinity for a streaming writer's placeholder size. */
  #remaining = Infinity;

  /** Decode for output at `outRate`; errors name `provider`. */
  constructor(provider: string, outRate: number) {
    this.#provider = provider;
    this.#outRate = outRate;
  }

  /** Samples at the output rate completed by `bytes` (none while the header is incomplete). */
  push(bytes: Uint8Array): Int16Array {
    if (!this.#pcm) {
      const joined = new Uint8Array(this.#head.length + bytes.length);
      joined.set(this.#head);
      joined.set(bytes, this.#head.length);
      const dataAt = this.#findData(joined);
      if (dataAt === undefined) {
        if (joined.length > MAX_WAV_HEADER) throw this.#bad("no data chunk in the first 64 KiB");
        this.#head = joined;
        return new Int16Array(0);
      }
      this.#head = new Uint8Array(0);
      bytes = joined.subarray(dataAt);
    }
    if (this.#remaining !== Infinity) {
      bytes = bytes.subarray(0, Math.min(bytes.length, this.#remaining));
      this.#remaining -= bytes.length;
    }
    const pcm = this.#pcm!.push(bytes);
    return this.#resampler ? this.#resampler.process(pcm) : pcm;
  }

  /** Call at the end of the body: a WAV that never reached its samples is an error. */
  end(): void {
    if (!this.#pcm) throw this.#bad("the reply ended inside the WAV header");
  }

  /** Offset of the first sample once the header is complete (and parsed), else undefined. */
  #findData(buf: Uint8Array): number | undefined {
    if (buf.length < 12) return undefined;
    const ascii = (at: number) => String.fromCharCode(...buf.subarray(at, at + 4));
    // An error page or an MP3 must fail now, not after 64 KiB of waiting.
    if (ascii(0) !== "RIFF" || ascii(8) !== "WAVE") throw this.#bad("not a RIFF/WAVE file");
    const v = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    let at = 12;
    while (at + 8 <= buf.length) {
      const size = v.getUint32(at + 4, true);
      if (ascii(at) === "data") {
        this.#start(buf, at, size);
        return at + 8;
      }
      at += 8 + size + (size & 1);
    }
    return undefined;
  }

  /** Validate everything before the data chunk with decodeWav (given an empty data chunk). */
  #start(buf: Uint8Array, dataAt: number, size: number): void {
    const probe = new Uint8Array(dataAt + 8);
    probe.set(buf.subarray(0, dataAt + 4));
    const { sampleRate, numChannels } = decodeWav(probe);
    if (numChannels !== 1) throw this.#bad(`${numChannels} channels; only mono is supported`);
    // 0 and the huge placeholders mean a streaming writer that did not know the length.
    this.#remaining = size === 0 || size >= 0x7fff0000 ? Infinity : size;
    this.#pcm = new PcmAssembler();
    if (sampleRate !== this.#outRate) this.#resampler = new Resampler(sampleRate, this.#outRate);
  }

  #bad(msg: string): FlowcatError {
    return new FlowcatError("protocol", `${this.#provider}: bad WAV audio: ${msg}`);
  }
}

/** The OpenAI-compatible speech client. */
export class OpenAITts implements TtsService {
  readonly #provider: string;
  readonly #url: string;
  readonly #apiKey: string | undefined;
  readonly #model: string;
  readonly #voice: string;
  readonly #format: OpenAITtsFormat;
  readonly #rate: number;
  readonly #extra: Record<string, unknown>;
  readonly #timeoutMs: number | undefined;
  readonly #fetch: typeof fetch;

  /**
   * Options: `baseUrl`, `model`, `voice` (defaults from {@link OPENAI_TTS_PRESETS} for a known
   * provider name, else OpenAI's), `apiKey` (sent as a Bearer token; none for local servers),
   * and in `options`: `response_format` ("pcm" | "wav"),
   * `sample_rate` (rate of the frames yielded; for "pcm" it must be what the server sends),
   * `speed`, `instructions`, `extra_body` (more request fields, e.g. Speaches' `sample_rate`).
   * Bad options throw a `config` {@link FlowcatError} here, so a bad config fails at startup.
   */
  constructor(opts: ServiceOptions) {
    const p = opts.provider;
    const o = opts.options ?? {};
    const preset = Object.hasOwn(OPENAI_TTS_PRESETS, p) ? OPENAI_TTS_PRESETS[p] : undefined;
    this.#provider = p;
    const base = opts.baseUrl ?? preset?.baseUrl ?? OPENAI_TTS_BASE_URL;
    this.#url = `${base.replace(/\/+$/, "")}/audio/speech`;
    this.#apiKey = opts.apiKey || undefined;
    this.#model = opts.model ?? preset?.model ?? OPENAI_TTS_DEFAULT_MODEL;
    this.#voice = opts.voice ?? preset?.voice ?? OPENAI_TTS_DEFAULT_VOICE;
    const format = o.response_format ?? preset?.format ?? "pcm";
    if (format !== "pcm" && format !== "wav") {
      throw new FlowcatError("config", `${p}: options.response_format must be "pcm" or "wav"`);
    }
    this.#format = format;
    this.#rate = positiveOption(p, o, "sample_rate", true) ?? preset?.sampleRate ??
      OPENAI_TTS_SAMPLE_RATE;
    const extra = o.extra_body ?? {};
    if (typeof extra !== "object" || extra === null || Array.isArray(extra)) {
      throw new FlowcatError("config", `${p}: options.extra_body must be an object`);
    }
    this.#extra = { ...(extra as Record<string, unknown>) };
    const speed = positiveOption(p, o, "speed");
    if (speed !== undefined) this.#extra.speed = speed;
    if (o.instructions !== undefined) {
      if (typeof o.instructions !== "string") {
        throw new FlowcatError("config", `${p}: options.instructions must be a string`);
      }
      this.#extra.instructions = o.instructions;
    }
    this.#timeoutMs = opts.timeoutMs;
    this.#fetch = opts.fetch ?? fetch;
  }

  /** Provider name, as configured. */
  name(): string {
    return this.#provider;
  }

  /** Rate of the TtsAudio frames: `options.sample_rate`, else the preset's, else 24000. */
  sampleRate(): number {
    return this.#rate;
  }

  /** Nothing to open: every utterance is one HTTP request. */
  async start(_params: StartParams): Promise<void> {}

  /**
   * TtsStarted, a TtsAudio frame per received chunk, a `tts_usage` Metrics frame, TtsStopped.
   * Blank text gives TtsStarted, TtsStopped without a request. An abort through `signal`
   * cancels the request or the body read at once and ends the stream without TtsStopped (the
   * interruption owns the cleanup). HTTP failures throw a {@link FlowcatError} naming the
   * provider (401/403 `auth`, 5xx after retries `protocol`).
   */
  async *runTts(text: string, signal?: AbortSignal): AsyncGenerator<Frame> {
    if (signal?.aborted) return;
    const contextId = crypto.randomUUID();
    yield makeFrame("TtsStarted", { contextId });
    if (text.trim() === "") {
      yield makeFrame("TtsStopped", { contextId });
      return;
    }
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (this.#apiKey) headers.authorization = `Bearer ${this.#apiKey}`;
    const body = JSON.stringify({
      ...this.#extra,
      model: this.#model,
      input: text,
      voice: this.#voice,
      response_format: this.#format,
    });
    let res: Response;
    try {
      res = await providerFetch(this.#provider, this.#url, { method: "POST", headers, body }, {
        timeoutMs: this.#timeoutMs,
        signal,
        fetch: this.#fetch,
      });
    } catch (err) {
      if (signal?.aborted) return;
      throw err;
    }
    const decode = this.#format === "wav"
      ? new WavStreamDecoder(this.#provider, this.#rate)
      : new PcmAssembler();
    // `signal` also aborts the body read (providerFetch hands it to fetch), and leaving the
    // loop early cancels the body.
    try {
      for await (const bytes of res.body ?? []) {
        const pcm = decode.push(bytes);
        if (pcm.length > 0) {
          yield ttsAudio({ pcm, sampleRate: this.#rate, numChannels: 1 }, contextId);
        }
      }
    } catch (err) {
      if (signal?.aborted) return;
      if (err instanceof FlowcatError) throw err;
      throw new FlowcatError(
        "closed",
        `${this.#provider}: audio stream broke: ${err instanceof Error ? err.message : err}`,
        { cause: err },
      );
    }
    if (signal?.aborted) return;
    if (decode instanceof WavStreamDecoder) decode.end();
    yield ttsUsageFrame(this.#provider, this.#model, text.length);
    yield makeFrame("TtsStopped", { contextId });
  }
}

/** Make an {@link OpenAITts}. */
export const createOpenAITts = (opts: ServiceOptions): OpenAITts => new OpenAITts(opts);
