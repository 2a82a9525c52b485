/**
 * Deepgram streaming speech-to-text over WebSocket (`wss://api.deepgram.com/v1/listen`).
 *
 * Audio is resampled to 16 kHz and sent as binary `linear16` frames; results arriving between
 * `runStt` calls are queued and returned by the next call (see {@link UtteranceJoiner} for how
 * interim and final results become frames). Control messages are text JSON: `KeepAlive` while
 * no audio flows (muted, or the caller stopped feeding), `Finalize` when the VAD says the user
 * stopped speaking, `CloseStream` on stop (developers.deepgram.com /docs/keep-alive,
 * /docs/finalize, /docs/close-stream).
 *
 * A socket that drops mid-call is reopened once after `reconnect_delay_ms`; audio in the gap is
 * held (up to 2 s) and sent on the new socket. If that reconnect fails, the next `runStt`
 * throws a FlowcatError (the STT processor turns it into a non-fatal Error frame), and
 * later calls retry at most once per `retry_interval_ms`, dropping audio meanwhile.
 *
 * @example
 * ```ts
 * import { createDeepgramStt } from "@flowcat/flowcat/stt/deepgram";
 * import type { AudioFrame, StartParams } from "@flowcat/flowcat";
 * declare const key: string;
 * declare const params: StartParams;
 * declare const audio8k: AudioFrame;
 * const stt = createDeepgramStt({ provider: "deepgram", apiKey: key, language: "en" });
 * await stt.start(params);
 * const frames = await stt.runStt(audio8k); // InterimTranscription / Transcription
 * await stt.stop?.();
 * ```
 *
 * Permissions: `--allow-net=api.deepgram.com:443` (or the `url` given).
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import type { AudioFrame, Frame, StartParams } from "../../core/frames.ts";
import { type Logger, silentLogger } from "../../core/log.ts";
import type { SttService } from "../../core/seams.ts";
import { int16ToBytes } from "../../core/audio/pcm.ts";
import { Resampler } from "../../core/audio/resample.ts";
import type { ServiceOptions } from "../service_options.ts";

export type { ServiceOptions } from "../service_options.ts";
import { messageText } from "../realtime/_shared.ts";
import { openSocket } from "../ws_client.ts";
import { SttConnection } from "../stt_connection.ts";
import {
  DEEPGRAM_DEFAULT_URL,
  DEEPGRAM_SAMPLE_RATE,
  deepgramListenUrl,
  type DeepgramTuning,
  deepgramTuning,
  parseDeepgramMessage,
  UtteranceJoiner,
} from "./stt_wire.ts";

export { DEEPGRAM_DEFAULT_MODEL, DEEPGRAM_SAMPLE_RATE } from "./stt_wire.ts";

/** Audio held while a dropped socket is reopened: 2 s of 16 kHz 16-bit mono. */
const BACKLOG_MAX_BYTES = DEEPGRAM_SAMPLE_RATE * 2 * 2;

/** Deepgram live transcription client; one instance per call. */
export class DeepgramStt implements SttService {
  readonly #opts: ServiceOptions;
  readonly #tuning: DeepgramTuning;
  readonly #log: Logger;
  readonly #joiner: UtteranceJoiner;
  readonly #conn: SttConnection;
  #muted = false;
  #audioSinceTick = false;
  #keepalive: ReturnType<typeof setInterval> | undefined;
  #resampler: Resampler | undefined;

  /** Make a client; nothing is dialled until {@link DeepgramStt.start}. */
  constructor(opts: ServiceOptions) {
    this.#opts = opts;
    this.#tuning = deepgramTuning(opts.options);
    this.#log = opts.logger ?? silentLogger;
    this.#joiner = new UtteranceJoiner(opts.language);
    this.#conn = new SttConnection({
      provider: opts.provider,
      log: this.#log,
      retryIntervalMs: this.#tuning.retryIntervalMs,
      reconnectDelayMs: this.#tuning.reconnectDelayMs,
      backlogMaxBytes: BACKLOG_MAX_BYTES,
      secret: opts.apiKey,
      dial: (signal) => this.#dial(signal),
      attach: (ws) => ws.addEventListener("message", (ev) => this.#onMessage(ev.data)),
      drain: (ws, held) => held.forEach((bytes) => ws.send(bytes)),
    });
  }

  /** The provider name from the config (`deepgram`). */
  name(): string {
    return this.#opts.provider;
  }

  /** Open the socket; throws FlowcatError (kind `auth` on a 401/403 handshake). */
  async start(_params: StartParams): Promise<void> {
    const usesDeepgramCloud = (this.#opts.baseUrl ?? DEEPGRAM_DEFAULT_URL)
      .includes("api.deepgram.com");
    if (!this.#opts.apiKey && usesDeepgramCloud) {
      throw new FlowcatError("config", `${this.name()}: missing API key (DEEPGRAM_API_KEY)`);
    }
    if (!(await this.#conn.start())) return;
    this.#keepalive = setInterval(() => this.#tick(), this.#tuning.keepaliveMs);
  }

  /** Send audio (unless muted) and return the frames that arrived since the last call. */
  runStt(audio: AudioFrame): Promise<Frame[]> {
    return this.#conn.exchange(() => {
      if (!this.#muted && audio.pcm.length > 0) this.#sendAudio(audio);
    });
  }

  /** While muted no audio is sent; KeepAlive holds the socket open. */
  setMuted(muted: boolean): void {
    this.#muted = muted;
  }

  /** The VAD heard the end of speech: ask Deepgram to finalize what it holds now. */
  speechStopped(): Promise<Frame[]> {
    this.#sendText({ type: "Finalize" });
    return Promise.resolve([]);
  }

  /** Send CloseStream, close the socket, clear every timer. Idempotent. */
  stop(): Promise<void> {
    clearInterval(this.#keepalive);
    this.#keepalive = undefined;
    return this.#conn.stop(() => this.#sendText({ type: "CloseStream" }));
  }

  // ---------------------------------------------------------------- socket

  #dial(signal: AbortSignal): Promise<WebSocket> {
    const headers: Record<string, string> = {};
    if (this.#opts.apiKey) headers.Authorization = `Token ${this.#opts.apiKey}`;
    const url = deepgramListenUrl(this.#opts, this.#tuning);
    return openSocket(url, headers, {
      timeoutMs: this.#opts.timeoutMs ?? 15_000,
      provider: this.name(),
      signal,
    });
  }

  #onMessage(data: unknown): void {
    const text = messageText(data);
    if (text === undefined) return;
    const msg = parseDeepgramMessage(text);
    if (msg.type === "error") {
      this.#conn.report(new FlowcatError("protocol", `${this.name()}: ${msg.description}`));
      return;
    }
    if (msg.type === "ignored") {
      this.#log.debug(`${this.name()}: ignored message`, { what: msg.what });
      return;
    }
    for (const f of this.#joiner.onMessage(msg)) this.#conn.emit(f);
  }

  // ---------------------------------------------------------------- sending

  #sendAudio(audio: AudioFrame): void {
    if (this.#resampler?.inRate !== audio.sampleRate) {
      this.#resampler = new Resampler(audio.sampleRate, DEEPGRAM_SAMPLE_RATE);
    }
    const pcm = this.#resampler.process(audio.pcm);
    if (pcm.length === 0) return;
    const bytes = int16ToBytes(pcm);
    const ws = this.#conn.live;
    if (ws !== undefined) {
      ws.send(bytes);
      this.#audioSinceTick = true;
      return;
    }
    // Copy: `bytes` may be a view on the caller's buffer, which it is free to reuse.
    if (this.#conn.holding) this.#conn.hold(bytes.slice());
  }

  #sendText(msg: { type: string }): void {
    const ws = this.#conn.socket;
    if (ws?.readyState !== WebSocket.OPEN) return;
    try {
      ws.send(JSON.stringify(msg));
    } catch (err) {
      this.#log.debug(`${this.name()}: send failed`, { type: msg.type, err: String(err) });
    }
  }

  #tick(): void {
    // Audio counts as keep-alive; only a quiet period needs the explicit message.
    if (!this.#audioSinceTick) this.#sendText({ type: "KeepAlive" });
    this.#audioSinceTick = false;
  }
}

/** Factory for the server's provider registry: a Deepgram live STT client. */
export function createDeepgramStt(opts: ServiceOptions): SttService {
  return new DeepgramStt(opts);
}
