/**
 * Amazon Transcribe streaming speech-to-text over WebSocket (wire: transcribe_wire.ts).
 *
 * Audio is resampled to `options.sample_rate` (8000 or 16000, default 16000) and sent in
 * 50 ms event-stream `AudioEvent` messages; `TranscriptEvent` results arriving between `runStt` calls
 * are queued and returned by the next call: a partial result as InterimTranscription, a final
 * one as Transcription. While muted, silence of the same length is sent instead of the audio:
 * Transcribe ends a stream that gets no audio for 15 s. `stop()` sends the empty AudioEvent
 * that ends the stream, then closes.
 *
 * A socket that drops mid-call is reopened at once with a freshly presigned URL (audio in the
 * gap is dropped). If that fails, the next `runStt` throws a FlowcatError (the STT processor
 * turns it into a non-fatal Error frame) and later calls retry at most once per
 * `options.retry_interval_ms` (default 2000). An `exception` message from Transcribe
 * (`LimitExceededException`, `BadRequestException`...) is thrown by the next `runStt` too.
 *
 * @example
 * ```ts
 * import { createTranscribeStt } from "@flowcat/flowcat/stt/aws";
 * import type { AudioFrame, StartParams } from "@flowcat/flowcat";
 * declare const id: string, secret: string, params: StartParams, audio: AudioFrame;
 * const stt = createTranscribeStt({
 *   provider: "aws",
 *   language: "en-US",
 *   credentials: { AWS_ACCESS_KEY_ID: id, AWS_SECRET_ACCESS_KEY: secret, AWS_REGION: "eu-west-1" },
 * });
 * await stt.start(params);
 * const frames = await stt.runStt(audio); // InterimTranscription / Transcription
 * await stt.stop?.();
 * ```
 *
 * Permissions: `--allow-net=transcribestreaming.<region>.amazonaws.com:8443` (or the `url`).
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import { type AudioFrame, type Frame, makeFrame, type StartParams } from "../../core/frames.ts";
import { type Logger, silentLogger } from "../../core/log.ts";
import type { SttService } from "../../core/seams.ts";
import { int16ToBytes } from "../../core/audio/pcm.ts";
import { Resampler } from "../../core/audio/resample.ts";
import type { ServiceOptions } from "../service_options.ts";
import { openSocket } from "../ws_client.ts";
import { SttConnection } from "../stt_connection.ts";
import { type AwsAccess, awsAccess, TRANSCRIBE_DEFAULT_LANGUAGE } from "./defaults.ts";
import { EventStreamDecoder } from "./event_stream.ts";
import {
  audioEvent,
  parseTranscribeMessage,
  TRANSCRIBE_PCM_RATES,
  type TranscribeParams,
  type TranscribeResult,
  transcribeUrl,
} from "./transcribe_wire.ts";

export type { ServiceOptions } from "../service_options.ts";

const STABILITY = ["low", "medium", "high"];
/**
 * Audio per AudioEvent, ms. "Latency depends on the size of your audio chunks": AWS advises 50 to
 * 200 ms for PCM (docs.aws.amazon.com/transcribe/latest/dg/streaming.html, "Best practices");
 * the shortest adds the least delay.
 */
const CHUNK_MS = 50;

/** Amazon Transcribe streaming client; one per call. */
export class TranscribeStt implements SttService {
  readonly #opts: ServiceOptions;
  readonly #access: AwsAccess;
  readonly #params: TranscribeParams;
  readonly #log: Logger;
  readonly #conn: SttConnection;
  #muted = false;
  #resampler: Resampler | undefined;
  /** Audio held until a chunk of {@link CHUNK_MS} is complete. */
  #pending: Uint8Array[] = [];
  #pendingBytes = 0;

  /** Make a client; nothing is dialled until {@link TranscribeStt.start}. */
  constructor(opts: ServiceOptions) {
    const p = opts.provider;
    const o = opts.options ?? {};
    this.#opts = opts;
    this.#access = awsAccess(opts);
    const rate = o.sample_rate ?? 16000;
    if (typeof rate !== "number" || !TRANSCRIBE_PCM_RATES.includes(rate)) {
      throw new FlowcatError("config", `${p}: options.sample_rate must be 8000 or 16000`);
    }
    const stability = o.partial_results_stability;
    if (stability !== undefined && !STABILITY.includes(stability as string)) {
      throw new FlowcatError(
        "config",
        `${p}: options.partial_results_stability must be low, medium or high`,
      );
    }
    const language = opts.language || TRANSCRIBE_DEFAULT_LANGUAGE;
    if (!/^[a-z]{2,3}-[A-Z]{2}$/.test(language)) {
      throw new FlowcatError(
        "config",
        `${p}: language "${language}" is not a Transcribe language code (en-US, en-GB, es-US...)`,
      );
    }
    this.#params = {
      languageCode: language,
      sampleRate: rate,
      ...(typeof o.vocabulary_name === "string" ? { vocabularyName: o.vocabulary_name } : {}),
      ...(stability ? { stability: stability as TranscribeParams["stability"] } : {}),
    };
    this.#log = opts.logger ?? silentLogger;
    this.#conn = new SttConnection({
      provider: p,
      log: this.#log,
      retryIntervalMs: typeof o.retry_interval_ms === "number" ? o.retry_interval_ms : 2000,
      // A dropped socket is redialled at once (a freshly presigned URL); the gap's audio is lost.
      reconnectDelayMs: 0,
      backlogMaxBytes: 0,
      dial: (signal) => this.#dial(signal),
      attach: (ws) => {
        const decoder = new EventStreamDecoder();
        ws.addEventListener("message", (ev) => this.#onMessage(decoder, ev.data));
      },
    });
  }

  /** The provider name from the config (`aws`). */
  name(): string {
    return this.#opts.provider;
  }

  /** Open the stream; a refused signature is an `auth` FlowcatError. */
  async start(_params: StartParams): Promise<void> {
    await this.#conn.start();
  }

  /** Send audio (silence while muted) and return the frames that arrived since the last call. */
  runStt(audio: AudioFrame): Promise<Frame[]> {
    return this.#conn.exchange(() => {
      if (audio.pcm.length > 0) this.#send(audio);
    });
  }

  /** While muted, silence is sent in place of the caller's audio. */
  setMuted(muted: boolean): void {
    this.#muted = muted;
  }

  /** End the audio stream (an empty AudioEvent) and close. Idempotent. */
  stop(): Promise<void> {
    return this.#conn.stop((ws) => {
      this.#flush(ws);
      ws.send(audioEvent(new Uint8Array(0)));
    });
  }

  // ---------------------------------------------------------------- socket

  async #dial(signal: AbortSignal): Promise<WebSocket> {
    const url = await transcribeUrl(this.#params, this.#access, this.#opts.baseUrl, new Date());
    return await openSocket(url, {}, {
      provider: this.name(),
      timeoutMs: this.#opts.timeoutMs ?? 15_000,
      signal,
    });
  }

  #onMessage(decoder: EventStreamDecoder, data: unknown): void {
    if (!(data instanceof ArrayBuffer)) return;
    let messages;
    try {
      messages = decoder.push(new Uint8Array(data));
    } catch (err) {
      this.#conn.report(
        err instanceof FlowcatError ? err : new FlowcatError("protocol", String(err)),
      );
      this.#conn.socket?.close(1000);
      return;
    }
    for (const m of messages) {
      const msg = parseTranscribeMessage(this.name(), m);
      if (msg.type === "error") this.#conn.report(msg.error);
      else if (msg.type === "ignored") {
        this.#log.debug(`${this.name()}: ignored`, { what: msg.what });
      } else for (const r of msg.results) this.#onResult(r);
    }
  }

  #onResult(r: TranscribeResult): void {
    const text = r.text.trim();
    if (text === "") return;
    const language = r.language ?? this.#params.languageCode;
    this.#conn.emit(
      r.partial
        ? makeFrame("InterimTranscription", { text, userId: "user", language })
        : makeFrame("Transcription", { text, userId: "user", language, final: true }),
    );
  }

  // ---------------------------------------------------------------- sending

  #send(audio: AudioFrame): void {
    const ws = this.#conn.live;
    if (ws === undefined) return;
    if (this.#resampler?.inRate !== audio.sampleRate) {
      this.#resampler = new Resampler(audio.sampleRate, this.#params.sampleRate);
    }
    const pcm = this.#resampler.process(audio.pcm);
    if (pcm.length === 0) return;
    const bytes = this.#muted ? new Uint8Array(pcm.length * 2) : int16ToBytes(pcm);
    // Copy: `bytes` may view the resampler's or the caller's buffer.
    this.#pending.push(bytes.slice());
    this.#pendingBytes += bytes.length;
    if (this.#pendingBytes >= (this.#params.sampleRate * 2 * CHUNK_MS) / 1000) this.#flush(ws);
  }

  /** Send the held audio as one AudioEvent. */
  #flush(ws: WebSocket): void {
    if (this.#pendingBytes === 0) return;
    const chunk = new Uint8Array(this.#pendingBytes);
    let at = 0;
    for (const part of this.#pending) {
      chunk.set(part, at);
      at += part.length;
    }
    this.#pending = [];
    this.#pendingBytes = 0;
    ws.send(audioEvent(chunk));
  }
}

/** Factory for the server's provider registry: an Amazon Transcribe streaming client. */
export function createTranscribeStt(opts: ServiceOptions): SttService {
  return new TranscribeStt(opts);
}
