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
import { closeSocket, openSocket } from "../ws_client.ts";
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

type State = "idle" | "open" | "reconnecting" | "failed" | "stopped";

/** Deepgram live transcription client; one instance per call. */
export class DeepgramStt implements SttService {
  readonly #opts: ServiceOptions;
  readonly #tuning: DeepgramTuning;
  readonly #log: Logger;
  readonly #joiner: UtteranceJoiner;
  #state: State = "idle";
  #ws: WebSocket | undefined;
  /** Every socket this client opened, until each has closed. */
  readonly #sockets = new Set<WebSocket>();
  #dialing: Promise<unknown> | undefined;
  #queue: Frame[] = [];
  #error: FlowcatError | undefined;
  #failedAt = 0;
  #backlog: Uint8Array[] = [];
  #backlogBytes = 0;
  #muted = false;
  #audioSinceTick = false;
  #keepalive: ReturnType<typeof setInterval> | undefined;
  #reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  #resampler: Resampler | undefined;
  /** Aborted by stop(): ends a dial in flight at once. */
  readonly #stopped = new AbortController();

  /** Make a client; nothing is dialled until {@link DeepgramStt.start}. */
  constructor(opts: ServiceOptions) {
    this.#opts = opts;
    this.#tuning = deepgramTuning(opts.options);
    this.#log = opts.logger ?? silentLogger;
    this.#joiner = new UtteranceJoiner(opts.language);
  }

  /** The provider name from the config (`deepgram`). */
  name(): string {
    return this.#opts.provider;
  }

  /** Open the socket; throws FlowcatError (kind `auth` on a 401/403 handshake). */
  async start(_params: StartParams): Promise<void> {
    if (this.#state !== "idle") return;
    const usesDeepgramCloud = (this.#opts.baseUrl ?? DEEPGRAM_DEFAULT_URL)
      .includes("api.deepgram.com");
    if (!this.#opts.apiKey && usesDeepgramCloud) {
      throw new FlowcatError("config", `${this.name()}: missing API key (DEEPGRAM_API_KEY)`);
    }
    const ws = await this.#dial();
    if (this.#state !== "idle") {
      ws.close(1000);
      return;
    }
    this.#attach(ws);
    this.#keepalive = setInterval(() => this.#tick(), this.#tuning.keepaliveMs);
  }

  /** Send audio (unless muted) and return the frames that arrived since the last call. */
  runStt(audio: AudioFrame): Promise<Frame[]> {
    const err = this.#error;
    if (err !== undefined) {
      this.#error = undefined;
      return Promise.reject(err);
    }
    if (
      this.#state === "failed" && this.#dialing === undefined &&
      performance.now() - this.#failedAt >= this.#tuning.retryIntervalMs
    ) {
      this.#reconnect();
    }
    if (!this.#muted && audio.pcm.length > 0) this.#sendAudio(audio);
    const out = this.#queue;
    this.#queue = [];
    return Promise.resolve(out);
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
  async stop(): Promise<void> {
    if (this.#state === "stopped") return;
    this.#state = "stopped";
    clearInterval(this.#keepalive);
    clearTimeout(this.#reconnectTimer);
    this.#keepalive = this.#reconnectTimer = undefined;
    this.#sendText({ type: "CloseStream" });
    this.#stopped.abort();
    await this.#dialing?.catch(() => {});
    // closeSocket gives up on a server that never answers the close, so stop() cannot hang.
    await Promise.all([...this.#sockets].map((ws) => closeSocket(ws)));
    this.#ws = undefined;
    this.#backlog = [];
  }

  // ---------------------------------------------------------------- socket

  #dial(): Promise<WebSocket> {
    const headers: Record<string, string> = {};
    if (this.#opts.apiKey) headers.Authorization = `Token ${this.#opts.apiKey}`;
    const url = deepgramListenUrl(this.#opts, this.#tuning);
    const dialing = openSocket(url, headers, {
      timeoutMs: this.#opts.timeoutMs ?? 15_000,
      provider: this.name(),
      signal: this.#stopped.signal,
    });
    const tracked = dialing.then((ws) => {
      this.#sockets.add(ws);
      ws.addEventListener("close", () => this.#sockets.delete(ws));
      return ws;
    });
    this.#dialing = tracked;
    const clear = () => {
      if (this.#dialing === tracked) this.#dialing = undefined;
    };
    tracked.then(clear, clear);
    return tracked;
  }

  #attach(ws: WebSocket): void {
    this.#ws = ws;
    this.#state = "open";
    ws.addEventListener("message", (ev) => this.#onMessage(ev.data));
    ws.addEventListener("close", (ev) => {
      if (this.#ws !== ws) return;
      this.#ws = undefined;
      if (this.#state !== "open") return;
      this.#log.warn(`${this.name()}: socket closed, reconnecting`, { code: ev.code });
      this.#state = "reconnecting";
      this.#reconnectTimer = setTimeout(() => {
        this.#reconnectTimer = undefined;
        this.#reconnect();
      }, this.#tuning.reconnectDelayMs);
    });
    const held = this.#backlog;
    this.#backlog = [];
    this.#backlogBytes = 0;
    for (const bytes of held) ws.send(bytes);
  }

  #reconnect(): void {
    this.#state = "reconnecting";
    this.#dial().then(
      (ws) => {
        if (this.#state === "stopped") {
          ws.close(1000);
          return;
        }
        this.#log.info(`${this.name()}: reconnected`);
        this.#attach(ws);
      },
      (err: unknown) => {
        if (this.#state === "stopped") return;
        this.#state = "failed";
        this.#failedAt = performance.now();
        this.#backlog = [];
        this.#backlogBytes = 0;
        const why = err instanceof Error ? err.message : String(err);
        const kind = err instanceof FlowcatError ? err.kind : "closed";
        this.#error = new FlowcatError(kind, `${this.name()}: connection lost (${why})`, {
          cause: err,
        });
        this.#log.error(`${this.name()}: reconnect failed`, { kind });
      },
    );
  }

  #onMessage(data: unknown): void {
    const text = messageText(data);
    if (text === undefined) return;
    const msg = parseDeepgramMessage(text);
    if (msg.type === "error") {
      this.#error = new FlowcatError("protocol", `${this.name()}: ${msg.description}`);
      return;
    }
    if (msg.type === "ignored") {
      this.#log.debug(`${this.name()}: ignored message`, { what: msg.what });
      return;
    }
    for (const f of this.#joiner.onMessage(msg)) this.#queue.push(f);
  }

  // ---------------------------------------------------------------- sending

  #sendAudio(audio: AudioFrame): void {
    if (this.#resampler?.inRate !== audio.sampleRate) {
      this.#resampler = new Resampler(audio.sampleRate, DEEPGRAM_SAMPLE_RATE);
    }
    const pcm = this.#resampler.process(audio.pcm);
    if (pcm.length === 0) return;
    const bytes = int16ToBytes(pcm);
    const ws = this.#ws;
    if (this.#state === "open" && ws?.readyState === WebSocket.OPEN) {
      ws.send(bytes);
      this.#audioSinceTick = true;
      return;
    }
    if (this.#state !== "reconnecting") return;
    // Copy: `bytes` may be a view on the caller's buffer, which it is free to reuse.
    this.#backlog.push(bytes.slice());
    this.#backlogBytes += bytes.length;
    while (this.#backlogBytes > BACKLOG_MAX_BYTES) {
      this.#backlogBytes -= this.#backlog.shift()?.length ?? 0;
    }
  }

  #sendText(msg: { type: string }): void {
    const ws = this.#ws;
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
