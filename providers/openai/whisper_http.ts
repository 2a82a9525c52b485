/**
 * Batch (segmented) speech-to-text over a Whisper-style HTTP endpoint.
 *
 * Audio is not streamed: the client resamples everything to 16 kHz mono, keeps a short
 * rolling pre-roll while the caller is silent, buffers one segment between
 * {@link WhisperHttpStt.speechStarted} and {@link WhisperHttpStt.speechStopped}, then uploads
 * that segment as a 16-bit WAV file and returns the final transcription.
 *
 * Two wire dialects:
 * - `openai`: `POST {baseUrl}/audio/transcriptions`, multipart fields `file`, `model`,
 *   `language`, `response_format=json`, bearer key; answer `{"text": ...}`. OpenAI, Groq,
 *   Together, Fireworks and speaches (ex faster-whisper-server) all speak it.
 * - `whisper.cpp`: the whisper.cpp example server, `POST {baseUrl}/inference`, multipart
 *   fields `file`, `response_format=json`, `temperature`, `language`; no key. Field names from
 *   whisper.cpp examples/server/server.cpp (`get_req_parameters`). That server answers some
 *   failures with HTTP 200 and `{"error": ...}`, so the body is checked too.
 *
 * @example
 * ```ts
 * import { createWhisperHttpStt } from "@flowcat/flowcat/stt/whisper-http";
 * import type { AudioFrame } from "@flowcat/flowcat";
 * declare const key: string;
 * declare const frame: AudioFrame;
 * const stt = createWhisperHttpStt({ provider: "groq", apiKey: key });
 * await stt.runStt(frame); // [] (batch service); audio is buffered
 * stt.speechStarted?.();
 * await stt.runStt(frame);
 * const frames = await stt.speechStopped?.(); // [Transcription]
 * ```
 *
 * Permissions: `--allow-net=<the server's host:port>` (a local whisper.cpp server, or the hosted
 * service's host).
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import { type AudioFrame, type Frame, makeFrame, type StartParams } from "../../core/frames.ts";
import type { SttService } from "../../core/seams.ts";
import { Resampler } from "../../core/audio/resample.ts";
import { encodeWav } from "../../core/audio/wav.ts";
import { silentLogger } from "../../core/log.ts";
import type { Logger } from "../../core/log.ts";
import type { ServiceOptions } from "../service_options.ts";

export type { ServiceOptions } from "../service_options.ts";
import { providerFetch } from "../http.ts";

/** The rate every Whisper model consumes (and whisper.cpp's server insists on). */
export const WHISPER_SAMPLE_RATE = 16000;

/** Wire dialect of a Whisper-style endpoint. */
export type WhisperDialect = "openai" | "whisper.cpp";

/** Defaults of one provider that rides on this family. */
export interface WhisperHttpPreset {
  /** Which request and reply format the endpoint speaks. */
  dialect: WhisperDialect;
  /** API root the transcription path is appended to. */
  baseUrl: string;
  /** Model sent in the `model` field (openai dialect only). */
  model?: string;
  /** Environment variable the server reads the key from; absent for local servers. */
  keyEnv?: string;
}

/** Providers served by this family, by the name a config gives them. */
export const WHISPER_HTTP_PRESETS: Readonly<Record<string, WhisperHttpPreset>> = Object.freeze({
  openai: {
    dialect: "openai",
    baseUrl: "https://api.openai.com/v1",
    model: "whisper-1",
    keyEnv: "OPENAI_API_KEY",
  },
  // https://console.groq.com/docs/speech-to-text
  groq: {
    dialect: "openai",
    baseUrl: "https://api.groq.com/openai/v1",
    model: "whisper-large-v3-turbo",
    keyEnv: "GROQ_API_KEY",
  },
  // https://docs.together.ai/reference/audio-transcriptions (servers: https://api.together.ai/v1)
  together: {
    dialect: "openai",
    baseUrl: "https://api.together.ai/v1",
    model: "openai/whisper-large-v3",
    keyEnv: "TOGETHER_API_KEY",
  },
  // https://docs.fireworks.ai/api-reference/audio-transcriptions: the serverless audio host is
  // separate from the chat one; whisper-v3-turbo lives on audio-turbo.us-virginia-1.
  fireworks: {
    dialect: "openai",
    baseUrl: "https://audio-prod.us-virginia-1.direct.fireworks.ai/v1",
    model: "whisper-v3",
    keyEnv: "FIREWORKS_API_KEY",
  },
  // speaches (formerly faster-whisper-server): local, OpenAI-compatible, port 8000, no key.
  speaches: {
    dialect: "openai",
    baseUrl: "http://127.0.0.1:8000/v1",
    model: "Systran/faster-whisper-small",
  },
  "faster-whisper-server": {
    dialect: "openai",
    baseUrl: "http://127.0.0.1:8000/v1",
    model: "Systran/faster-whisper-small",
  },
  // whisper.cpp examples/server: `whisper-server -m models/ggml-base.en.bin` (port 8080).
  "whisper.cpp": { dialect: "whisper.cpp", baseUrl: "http://127.0.0.1:8080" },
  whispercpp: { dialect: "whisper.cpp", baseUrl: "http://127.0.0.1:8080" },
});

const DEFAULT_PRE_ROLL_SECS = 0.3;
const DEFAULT_MIN_SEGMENT_SECS = 0.1;
const DEFAULT_MAX_SEGMENT_SECS = 30;
// whisper.cpp prints this for a segment without speech; it is not something the user said.
const NON_SPEECH = new Set(["[BLANK_AUDIO]"]);

/** Whisper takes ISO 639-1 codes: `en-US` -> `en`. */
export function whisperLanguage(language: string): string {
  return language.split(/[-_]/)[0].toLowerCase();
}

function numberOption(opts: ServiceOptions, key: string, fallback: number): number {
  const v = opts.options?.[key];
  if (v === undefined) return fallback;
  if (typeof v !== "number" || !Number.isFinite(v) || v < 0) {
    throw new FlowcatError("config", `${opts.provider}: options.${key} must be a number >= 0`);
  }
  return v;
}

function pickDialect(opts: ServiceOptions): WhisperDialect {
  const v = opts.options?.dialect;
  if (v === undefined) return WHISPER_HTTP_PRESETS[opts.provider]?.dialect ?? "openai";
  if (v === "openai" || v === "whisper.cpp") return v;
  throw new FlowcatError(
    "config",
    `${opts.provider}: options.dialect must be "openai" or "whisper.cpp"`,
  );
}

/** Average interleaved channels down to mono (Whisper wants one channel). */
function toMono(audio: AudioFrame): Int16Array {
  const ch = audio.numChannels;
  if (ch <= 1) return audio.pcm;
  const n = Math.floor(audio.pcm.length / ch);
  const out = new Int16Array(n);
  for (let i = 0; i < n; i++) {
    let sum = 0;
    for (let c = 0; c < ch; c++) sum += audio.pcm[i * ch + c];
    out[i] = Math.round(sum / ch);
  }
  return out;
}

function concat(chunks: readonly Int16Array[], total: number): Int16Array {
  const out = new Int16Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/** A segmented Whisper-style speech-to-text client (see the module doc). */
export class WhisperHttpStt implements SttService {
  readonly #provider: string;
  readonly #dialect: WhisperDialect;
  readonly #url: string;
  readonly #model: string | undefined;
  readonly #apiKey: string | undefined;
  readonly #language: string | undefined;
  readonly #timeoutMs: number | undefined;
  readonly #fetch: typeof fetch | undefined;
  readonly #log: Logger;
  readonly #preRollMax: number;
  readonly #minSamples: number;
  readonly #maxSamples: number;
  #resampler: Resampler | undefined;
  #preRoll: Int16Array[] = [];
  #preRollLen = 0;
  /** The open segment's chunks; undefined while the user is not speaking. */
  #segment: Int16Array[] | undefined;
  #segmentLen = 0;
  #capWarned = false;
  #muted = false;
  #abort = new AbortController();

  /** Build a client from service options (see {@link createWhisperHttpStt}). */
  constructor(opts: ServiceOptions) {
    this.#provider = opts.provider;
    this.#dialect = pickDialect(opts);
    const preset = WHISPER_HTTP_PRESETS[opts.provider];
    const presetFits = preset?.dialect === this.#dialect;
    const fallbackBase = this.#dialect === "openai"
      ? WHISPER_HTTP_PRESETS.openai.baseUrl
      : WHISPER_HTTP_PRESETS["whisper.cpp"].baseUrl;
    const base = (opts.baseUrl ?? (presetFits ? preset.baseUrl : fallbackBase)).replace(/\/+$/, "");
    this.#url = base + (this.#dialect === "openai" ? "/audio/transcriptions" : "/inference");
    this.#model = this.#dialect === "openai"
      ? opts.model ?? (presetFits ? preset.model : undefined) ?? "whisper-1"
      : undefined;
    this.#apiKey = opts.apiKey || undefined;
    this.#language = opts.language || undefined;
    this.#timeoutMs = opts.timeoutMs;
    this.#fetch = opts.fetch;
    this.#log = opts.logger ?? silentLogger;
    const rate = WHISPER_SAMPLE_RATE;
    this.#preRollMax = Math.round(
      numberOption(opts, "pre_roll_secs", DEFAULT_PRE_ROLL_SECS) * rate,
    );
    this.#minSamples = Math.round(
      numberOption(opts, "min_segment_secs", DEFAULT_MIN_SEGMENT_SECS) * rate,
    );
    this.#maxSamples = Math.round(
      numberOption(opts, "max_segment_secs", DEFAULT_MAX_SEGMENT_SECS) * rate,
    );
  }

  /** The provider name from the config. */
  name(): string {
    return this.#provider;
  }

  /** The wire dialect this client speaks. */
  dialect(): WhisperDialect {
    return this.#dialect;
  }

  /** Forget buffered audio; the HTTP calls need no connection set-up. */
  start(_params: StartParams): Promise<void> {
    this.#reset();
    if (this.#abort.signal.aborted) this.#abort = new AbortController();
    return Promise.resolve();
  }

  /** Buffer audio (pre-roll or the open segment). A batch service: always returns []. */
  runStt(audio: AudioFrame): Promise<Frame[]> {
    if (this.#muted || audio.pcm.length === 0) return Promise.resolve([]);
    const mono = toMono(audio);
    if (this.#resampler?.inRate !== audio.sampleRate) {
      this.#resampler = new Resampler(audio.sampleRate, WHISPER_SAMPLE_RATE);
    }
    // Copy: without a filter the resampler hands back the caller's buffer.
    const pcm = this.#resampler.process(mono).slice();
    if (this.#segment) this.#append(pcm);
    else this.#keepPreRoll(pcm);
    return Promise.resolve([]);
  }

  /** Muted audio is dropped, pre-roll included. */
  setMuted(muted: boolean): void {
    this.#muted = muted;
    if (muted) {
      this.#preRoll = [];
      this.#preRollLen = 0;
    }
  }

  /** The user started speaking: open a segment that begins with the pre-roll. */
  speechStarted(): void {
    if (this.#segment) return;
    const preRoll = this.#preRoll;
    this.#preRoll = [];
    this.#preRollLen = 0;
    this.#segment = [];
    this.#segmentLen = 0;
    this.#capWarned = false;
    for (const c of preRoll) this.#append(c);
  }

  /** The user stopped speaking: upload the segment and return its final transcription. */
  async speechStopped(): Promise<Frame[]> {
    const chunks = this.#segment;
    const len = this.#segmentLen;
    this.#segment = undefined;
    this.#segmentLen = 0;
    if (!chunks || len === 0) return [];
    if (len < this.#minSamples) {
      this.#log.debug("whisper segment too short, not sent", {
        provider: this.#provider,
        ms: Math.round((len / WHISPER_SAMPLE_RATE) * 1000),
      });
      return [];
    }
    const text = await this.#transcribe(encodeWav(concat(chunks, len), WHISPER_SAMPLE_RATE));
    if (text === "") return [];
    const payload = this.#language
      ? { text, userId: "user", final: true, language: this.#language }
      : { text, userId: "user", final: true };
    return [makeFrame("Transcription", payload)];
  }

  /** Cancel any upload in flight and drop buffered audio. */
  stop(): Promise<void> {
    this.#abort.abort(new DOMException("stt stopped", "AbortError"));
    this.#reset();
    return Promise.resolve();
  }

  #reset(): void {
    this.#preRoll = [];
    this.#preRollLen = 0;
    this.#segment = undefined;
    this.#segmentLen = 0;
    this.#resampler = undefined;
  }

  #keepPreRoll(pcm: Int16Array): void {
    if (this.#preRollMax === 0) return;
    this.#preRoll.push(pcm);
    this.#preRollLen += pcm.length;
    while (this.#preRollLen > this.#preRollMax) {
      const excess = this.#preRollLen - this.#preRollMax;
      const first = this.#preRoll[0];
      if (first.length <= excess) {
        this.#preRoll.shift();
        this.#preRollLen -= first.length;
      } else {
        this.#preRoll[0] = first.subarray(excess);
        this.#preRollLen -= excess;
      }
    }
  }

  #append(pcm: Int16Array): void {
    const room = this.#maxSamples - this.#segmentLen;
    if (room <= 0 || pcm.length > room) {
      // Past the cap the rest of the utterance is dropped rather than growing without bound.
      if (!this.#capWarned) {
        this.#capWarned = true;
        this.#log.warn("whisper segment reached its cap; further audio dropped", {
          provider: this.#provider,
          maxSecs: this.#maxSamples / WHISPER_SAMPLE_RATE,
        });
      }
      if (room <= 0) return;
      pcm = pcm.subarray(0, room);
    }
    this.#segment!.push(pcm);
    this.#segmentLen += pcm.length;
  }

  #form(wav: Uint8Array): FormData {
    const form = new FormData();
    form.append(
      "file",
      new Blob([wav as Uint8Array<ArrayBuffer>], { type: "audio/wav" }),
      "audio.wav",
    );
    if (this.#dialect === "openai") form.append("model", this.#model!);
    else form.append("temperature", "0.0");
    if (this.#language) form.append("language", whisperLanguage(this.#language));
    form.append("response_format", "json");
    return form;
  }

  async #transcribe(wav: Uint8Array): Promise<string> {
    const headers: Record<string, string> = { accept: "application/json" };
    // whisper.cpp ignores it, but a key given for it is meant for a proxy in front.
    if (this.#apiKey) headers.authorization = `Bearer ${this.#apiKey}`;
    const res = await providerFetch(
      this.#provider,
      this.#url,
      { method: "POST", headers, body: this.#form(wav) },
      { timeoutMs: this.#timeoutMs, signal: this.#abort.signal, fetch: this.#fetch },
    );
    let body: unknown;
    try {
      body = await res.json();
    } catch (err) {
      throw new FlowcatError("protocol", `${this.#provider}: transcription is not JSON`, {
        cause: err,
      });
    }
    const rec = (body ?? {}) as Record<string, unknown>;
    if (typeof rec.text !== "string") {
      const why = typeof rec.error === "string" ? `: ${rec.error.slice(0, 300)}` : "";
      throw new FlowcatError("protocol", `${this.#provider}: no text in transcription${why}`);
    }
    const text = rec.text.trim();
    return NON_SPEECH.has(text) ? "" : text;
  }
}

/**
 * A Whisper-style batch speech-to-text client. The dialect comes from `options.dialect` or
 * the provider name ({@link WHISPER_HTTP_PRESETS}); unknown names speak the openai dialect.
 * Options: `dialect`, `pre_roll_secs` (0.3), `min_segment_secs` (0.1), `max_segment_secs` (30).
 */
export function createWhisperHttpStt(opts: ServiceOptions): SttService {
  return new WhisperHttpStt(opts);
}
