/**
 * The streaming speech-to-text client that WebSocket vendors share (AssemblyAI, Speechmatics,
 * Gladia, Soniox, Cartesia ink, ElevenLabs Scribe). A vendor module describes its wire as a
 * {@link WsSttDialect} (where to dial, what to send first, how audio and control messages look,
 * how to read the server's messages); this module does the rest the same way for all of them:
 *
 * - audio is resampled to the dialect's rate and sent in chunks of `chunkMs` (nothing while
 *   muted; the dialect's keep-alive message holds the socket open instead);
 * - final pieces are held until the vendor says the utterance ended, then become one
 *   Transcription; partial results become InterimTranscription frames (held text first);
 * - frames arriving between `runStt` calls are queued and returned by the next call;
 * - a socket that drops mid-call is reopened after `reconnect_delay_ms` (default 250), audio
 *   in the gap held (up to 2 s); a failed reopen makes the next `runStt` throw, and later calls
 *   retry at most once per `retry_interval_ms` (default 2000);
 * - a refusal the vendor reports in a message (a wrong key sent in a configuration message)
 *   is the same `auth` FlowcatError a refused handshake gives.
 * @module
 */

import { FlowcatError, type FlowcatErrorKind } from "../core/errors.ts";
import type { WsSttDialect } from "./ws_stt_dialect.ts";
import { type AudioFrame, type Frame, makeFrame, type StartParams } from "../core/frames.ts";
import { type Logger, silentLogger } from "../core/log.ts";
import type { SttService } from "../core/seams.ts";
import { int16ToBytes } from "../core/audio/pcm.ts";
import { Resampler } from "../core/audio/resample.ts";
import type { ServiceOptions } from "./service_options.ts";
import { closeSocket, openSocket } from "./ws_client.ts";
import { SttConnection } from "./stt_connection.ts";
import { msOption } from "./service_option_values.ts";

export type { SttEvent, WsSttDialect, WsSttEndpoint } from "./ws_stt_dialect.ts";

/** A streaming WebSocket speech-to-text client; one per call. */
export class WsStt implements SttService {
  readonly #opts: ServiceOptions;
  readonly #dialect: WsSttDialect;
  readonly #log: Logger;
  readonly #chunkBytes: number;
  readonly #conn: SttConnection;
  /** Messages of a dialled socket that arrived before it was attached. */
  readonly #early = new WeakMap<WebSocket, unknown[]>();
  #sent = 0;
  #held: string[] = [];
  #language: string | undefined;
  #pending: Uint8Array[] = [];
  #pendingBytes = 0;
  #muted = false;
  #audioSinceTick = false;
  #keepalive: ReturnType<typeof setInterval> | undefined;
  #resampler: Resampler | undefined;

  /** Make a client for `dialect`; nothing is dialled until {@link WsStt.start}. */
  constructor(opts: ServiceOptions, dialect: WsSttDialect) {
    this.#opts = opts;
    this.#dialect = dialect;
    this.#log = opts.logger ?? silentLogger;
    const o = opts.options ?? {};
    this.#chunkBytes = Math.round((dialect.chunkMs ?? 0) * dialect.sampleRate / 1000) * 2;
    this.#conn = new SttConnection({
      provider: opts.provider,
      log: this.#log,
      retryIntervalMs: msOption(opts.provider, o, "retry_interval_ms", 2000),
      reconnectDelayMs: msOption(opts.provider, o, "reconnect_delay_ms", 250),
      backlogMaxBytes: dialect.sampleRate * 2 * 2,
      dial: (signal) => this.#dial(signal),
      attach: (ws) => this.#attach(ws),
      drain: (ws, held, heldBytes) => {
        this.#pending = held;
        this.#pendingBytes = heldBytes;
        if (this.#pendingBytes >= this.#chunkBytes) this.#flush(ws);
      },
    });
  }

  /** The provider name from the config. */
  name(): string {
    return this.#opts.provider;
  }

  /** Open the stream; a refused key is an `auth` FlowcatError. */
  async start(_params: StartParams): Promise<void> {
    if (!(await this.#conn.start())) return;
    const ka = this.#dialect.keepalive;
    if (ka) this.#keepalive = setInterval(() => this.#tick(ka.message), ka.everyMs);
  }

  /** Send audio (unless muted) and return the frames that arrived since the last call. */
  runStt(audio: AudioFrame): Promise<Frame[]> {
    return this.#conn.exchange(() => {
      if (!this.#muted && audio.pcm.length > 0) this.#sendAudio(audio);
    });
  }

  /** While muted no audio is sent. */
  setMuted(muted: boolean): void {
    this.#muted = muted;
  }

  /** The local VAD heard the end of speech: ask the vendor for its result now. */
  speechStopped(): Promise<Frame[]> {
    const ws = this.#conn.socket;
    const msg = this.#dialect.finalize?.();
    if (ws?.readyState === WebSocket.OPEN && msg !== undefined) this.#sendRaw(ws, msg);
    return Promise.resolve([]);
  }

  /** Send the vendor's end-of-stream message, close, clear every timer. Idempotent. */
  stop(): Promise<void> {
    clearInterval(this.#keepalive);
    return this.#conn.stop((ws) => {
      // A tail shorter than a chunk is dropped: vendors with a minimum chunk refuse it.
      const msg = this.#dialect.closing?.(this.#sent);
      if (msg !== undefined) this.#sendRaw(ws, msg);
    });
  }

  // ---------------------------------------------------------------- socket

  async #dial(signal: AbortSignal): Promise<WebSocket> {
    const { url, headers } = await this.#dialect.endpoint(signal);
    const timeoutMs = this.#opts.timeoutMs ?? 15_000;
    const ws = await openSocket(url, headers, { provider: this.name(), timeoutMs, signal });
    const ready = this.#dialect.awaitReady ? this.#readyOf(ws, timeoutMs, signal) : undefined;
    // A vendor may speak before the socket is attached (in the same event-loop turn as the
    // open): hold those messages for #attach rather than read them as a stale socket's.
    const early: unknown[] = [];
    this.#early.set(ws, early);
    ws.addEventListener("message", (ev) => {
      if (this.#conn.socket === ws) this.#onMessage(ws, ev.data);
      else if (this.#early.has(ws)) early.push(ev.data);
    });
    for (const m of this.#dialect.opening?.() ?? []) ws.send(m);
    if (ready) await ready;
    return ws;
  }

  /** Resolves on the vendor's `ready`; rejects on its error, a close or the deadline. */
  #readyOf(ws: WebSocket, timeoutMs: number, stopped: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const fail = (err: FlowcatError) => {
        cleanup();
        void closeSocket(ws).then(() => reject(err));
      };
      const onMessage = (ev: MessageEvent) => {
        for (const e of this.#dialect.parse(ev.data)) {
          if (e.type === "ready") return void (cleanup(), resolve());
          if (e.type === "error") return fail(this.#vendorError(e.kind, e.message));
        }
      };
      const onClose = (ev: CloseEvent) =>
        fail(this.#vendorError("closed", `closed before the session began (${ev.code})`));
      const timer = setTimeout(
        () => fail(this.#vendorError("timeout", `no session within ${timeoutMs} ms`)),
        timeoutMs,
      );
      const onAbort = () => fail(this.#vendorError("closed", "connect aborted"));
      const cleanup = () => {
        clearTimeout(timer);
        ws.removeEventListener("message", onMessage);
        ws.removeEventListener("close", onClose);
        stopped.removeEventListener("abort", onAbort);
      };
      ws.addEventListener("message", onMessage);
      ws.addEventListener("close", onClose);
      // stop() during the wait ends it at once, not at the deadline.
      stopped.addEventListener("abort", onAbort);
    });
  }

  /** A new socket: read what the vendor said before it was attached. */
  #attach(ws: WebSocket): void {
    this.#sent = 0;
    const early = this.#early.get(ws) ?? [];
    this.#early.delete(ws);
    for (const data of early) this.#onMessage(ws, data);
  }

  #vendorError(kind: FlowcatErrorKind, message: string): FlowcatError {
    return new FlowcatError(kind, `${this.name()}: ${message}`);
  }

  #onMessage(ws: WebSocket, data: unknown): void {
    for (const e of this.#dialect.parse(data)) {
      if (e.type === "ready") continue;
      if (e.type === "error") {
        const err = this.#vendorError(e.kind, e.message);
        // A refused key is not cured by reopening at once: wait the retry interval.
        if (e.kind === "auth" && this.#conn.socket === ws) this.#conn.fail(err);
        else this.#conn.report(err);
      } else if (e.type === "end") this.#flushUtterance();
      else {
        if (e.language) this.#language = e.language;
        if (e.type === "final") {
          if (e.text.trim()) this.#held.push(e.text.trim());
        } else if (e.text.trim()) {
          this.#conn.emit(makeFrame("InterimTranscription", {
            text: [...this.#held, e.text.trim()].join(" "),
            userId: "user",
            ...this.#languageField(),
          }));
        }
      }
    }
  }

  #flushUtterance(): void {
    if (this.#held.length === 0) return;
    const text = this.#held.join(" ");
    const language = this.#languageField();
    this.#held = [];
    this.#language = undefined;
    this.#conn.emit(
      makeFrame("Transcription", { text, userId: "user", final: true, ...language }),
    );
  }

  #languageField(): { language?: string } {
    const language = this.#language ?? this.#opts.language;
    return language ? { language } : {};
  }

  // ---------------------------------------------------------------- sending

  #sendAudio(audio: AudioFrame): void {
    const rate = this.#dialect.sampleRate;
    if (this.#resampler?.inRate !== audio.sampleRate) {
      this.#resampler = new Resampler(audio.sampleRate, rate);
    }
    const pcm = this.#resampler.process(audio.pcm);
    if (pcm.length === 0) return;
    // Copy: the bytes may be a view on the caller's buffer, which it is free to reuse.
    const bytes = int16ToBytes(pcm).slice();
    const ws = this.#conn.live;
    if (ws === undefined) return this.#conn.hold(bytes);
    this.#pending.push(bytes);
    this.#pendingBytes += bytes.length;
    if (this.#pendingBytes >= this.#chunkBytes) this.#flush(ws);
  }

  /** Send the audio held for the current chunk, if any. */
  #flush(ws: WebSocket): void {
    if (this.#pendingBytes === 0) return;
    const chunk = new Uint8Array(this.#pendingBytes);
    let at = 0;
    for (const p of this.#pending) chunk.set(p, (at += p.length) - p.length);
    this.#pending = [];
    this.#pendingBytes = 0;
    this.#sendChunk(ws, chunk);
  }

  #sendChunk(ws: WebSocket, pcm: Uint8Array): void {
    if (this.#sendRaw(ws, this.#dialect.audio(pcm))) {
      this.#sent++;
      this.#audioSinceTick = true;
    }
  }

  #sendRaw(ws: WebSocket, msg: string | Uint8Array): boolean {
    try {
      ws.send(msg as string | Uint8Array<ArrayBuffer>);
      return true;
    } catch (err) {
      this.#log.debug(`${this.name()}: send failed`, { err: String(err) });
      return false;
    }
  }

  #tick(message: string): void {
    const ws = this.#conn.socket;
    // Audio counts as keep-alive; only a quiet period needs the explicit message.
    if (!this.#audioSinceTick && ws?.readyState === WebSocket.OPEN) this.#sendRaw(ws, message);
    this.#audioSinceTick = false;
  }
}
