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
import { msOption } from "./service_option_values.ts";

export type { SttEvent, WsSttDialect, WsSttEndpoint } from "./ws_stt_dialect.ts";

type State = "idle" | "open" | "reconnecting" | "failed" | "stopped";

/** A streaming WebSocket speech-to-text client; one per call. */
export class WsStt implements SttService {
  readonly #opts: ServiceOptions;
  readonly #dialect: WsSttDialect;
  readonly #log: Logger;
  readonly #reconnectDelayMs: number;
  readonly #retryMs: number;
  readonly #chunkBytes: number;
  readonly #backlogMax: number;
  #state: State = "idle";
  #ws: WebSocket | undefined;
  readonly #sockets = new Set<WebSocket>();
  /** Messages of a dialled socket that arrived before it was attached. */
  readonly #early = new WeakMap<WebSocket, unknown[]>();
  #dialing: Promise<WebSocket> | undefined;
  #sent = 0;
  #queue: Frame[] = [];
  #held: string[] = [];
  #language: string | undefined;
  #error: FlowcatError | undefined;
  #failedAt = 0;
  #pending: Uint8Array[] = [];
  #pendingBytes = 0;
  #backlog: Uint8Array[] = [];
  #backlogBytes = 0;
  #muted = false;
  #audioSinceTick = false;
  #keepalive: ReturnType<typeof setInterval> | undefined;
  #reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  #resampler: Resampler | undefined;
  readonly #stopped = new AbortController();

  /** Make a client for `dialect`; nothing is dialled until {@link WsStt.start}. */
  constructor(opts: ServiceOptions, dialect: WsSttDialect) {
    this.#opts = opts;
    this.#dialect = dialect;
    this.#log = opts.logger ?? silentLogger;
    const o = opts.options ?? {};
    this.#reconnectDelayMs = msOption(opts.provider, o, "reconnect_delay_ms", 250);
    this.#retryMs = msOption(opts.provider, o, "retry_interval_ms", 2000);
    this.#chunkBytes = Math.round((dialect.chunkMs ?? 0) * dialect.sampleRate / 1000) * 2;
    this.#backlogMax = dialect.sampleRate * 2 * 2;
  }

  /** The provider name from the config. */
  name(): string {
    return this.#opts.provider;
  }

  /** Open the stream; a refused key is an `auth` FlowcatError. */
  async start(_params: StartParams): Promise<void> {
    if (this.#state !== "idle") return;
    const ws = await this.#dial();
    if (this.#state !== "idle") return void ws.close(1000);
    this.#attach(ws);
    const ka = this.#dialect.keepalive;
    if (ka) this.#keepalive = setInterval(() => this.#tick(ka.message), ka.everyMs);
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
      performance.now() - this.#failedAt >= this.#retryMs
    ) {
      this.#reconnect();
    }
    if (!this.#muted && audio.pcm.length > 0) this.#sendAudio(audio);
    const out = this.#queue;
    this.#queue = [];
    return Promise.resolve(out);
  }

  /** While muted no audio is sent. */
  setMuted(muted: boolean): void {
    this.#muted = muted;
  }

  /** The local VAD heard the end of speech: ask the vendor for its result now. */
  speechStopped(): Promise<Frame[]> {
    const ws = this.#ws;
    const msg = this.#dialect.finalize?.();
    if (ws?.readyState === WebSocket.OPEN && msg !== undefined) this.#sendRaw(ws, msg);
    return Promise.resolve([]);
  }

  /** Send the vendor's end-of-stream message, close, clear every timer. Idempotent. */
  async stop(): Promise<void> {
    if (this.#state === "stopped") return;
    this.#state = "stopped";
    clearInterval(this.#keepalive);
    clearTimeout(this.#reconnectTimer);
    const ws = this.#ws;
    // A tail shorter than a chunk is dropped: vendors with a minimum chunk refuse it.
    const msg = this.#dialect.closing?.(this.#sent);
    if (ws?.readyState === WebSocket.OPEN && msg !== undefined) this.#sendRaw(ws, msg);
    this.#stopped.abort();
    await this.#dialing?.catch(() => {});
    await Promise.all([...this.#sockets].map((s) => closeSocket(s)));
    this.#ws = undefined;
    this.#backlog = [];
  }

  // ---------------------------------------------------------------- socket

  #dial(): Promise<WebSocket> {
    const dialing = (async () => {
      const signal = this.#stopped.signal;
      const { url, headers } = await this.#dialect.endpoint(signal);
      const timeoutMs = this.#opts.timeoutMs ?? 15_000;
      const ws = await openSocket(url, headers, { provider: this.name(), timeoutMs, signal });
      this.#sockets.add(ws);
      ws.addEventListener("close", () => this.#sockets.delete(ws));
      const ready = this.#dialect.awaitReady ? this.#readyOf(ws, timeoutMs) : undefined;
      // A vendor may speak before the socket is attached (in the same event-loop turn as the
      // open): hold those messages for #attach rather than read them as a stale socket's.
      const early: unknown[] = [];
      this.#early.set(ws, early);
      ws.addEventListener("message", (ev) => {
        if (this.#ws === ws) this.#onMessage(ws, ev.data);
        else if (this.#early.has(ws)) early.push(ev.data);
      });
      for (const m of this.#dialect.opening?.() ?? []) ws.send(m);
      if (ready) await ready;
      return ws;
    })();
    this.#dialing = dialing;
    const clear = () => {
      if (this.#dialing === dialing) this.#dialing = undefined;
    };
    dialing.then(clear, clear);
    return dialing;
  }

  /** Resolves on the vendor's `ready`; rejects on its error, a close or the deadline. */
  #readyOf(ws: WebSocket, timeoutMs: number): Promise<void> {
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
        this.#stopped.signal.removeEventListener("abort", onAbort);
      };
      ws.addEventListener("message", onMessage);
      ws.addEventListener("close", onClose);
      // stop() during the wait ends it at once, not at the deadline.
      this.#stopped.signal.addEventListener("abort", onAbort);
    });
  }

  #attach(ws: WebSocket): void {
    this.#ws = ws;
    this.#state = "open";
    this.#sent = 0;
    const early = this.#early.get(ws) ?? [];
    this.#early.delete(ws);
    for (const data of early) this.#onMessage(ws, data);
    if (this.#ws !== ws) return; // an early message refused the key
    const onClose = (code: number) => {
      if (this.#ws !== ws) return;
      this.#ws = undefined;
      if (this.#state !== "open") return;
      this.#log.warn(`${this.name()}: socket closed, reconnecting`, { code });
      this.#state = "reconnecting";
      this.#reconnectTimer = setTimeout(() => {
        this.#reconnectTimer = undefined;
        this.#reconnect();
      }, this.#reconnectDelayMs);
    };
    ws.addEventListener("close", (ev) => onClose(ev.code));
    // Closed between its dial and now: the close event has been and gone.
    if (ws.readyState === WebSocket.CLOSED) return onClose(1006);
    this.#pending = this.#backlog;
    this.#pendingBytes = this.#backlogBytes;
    this.#backlog = [];
    this.#backlogBytes = 0;
    if (this.#pendingBytes >= this.#chunkBytes) this.#flush(ws);
  }

  #reconnect(): void {
    this.#state = "reconnecting";
    this.#dial().then(
      (ws) => {
        if (this.#state === "stopped") return void ws.close(1000);
        this.#log.info(`${this.name()}: reconnected`);
        this.#attach(ws);
      },
      (err: unknown) => {
        if (this.#state === "stopped") return;
        const why = err instanceof Error ? err.message : String(err);
        const kind = err instanceof FlowcatError ? err.kind : "closed";
        this.#fail(
          new FlowcatError(kind, `${this.name()}: connection lost (${why})`, { cause: err }),
        );
      },
    );
  }

  #fail(err: FlowcatError): void {
    this.#state = "failed";
    this.#failedAt = performance.now();
    this.#backlog = [];
    this.#backlogBytes = 0;
    this.#error = err;
    this.#log.error(`${this.name()}: connection failed`, { kind: err.kind });
  }

  #vendorError(kind: FlowcatErrorKind, message: string): FlowcatError {
    return new FlowcatError(kind, `${this.name()}: ${message}`);
  }

  #onMessage(ws: WebSocket, data: unknown): void {
    for (const e of this.#dialect.parse(data)) {
      if (e.type === "ready") continue;
      if (e.type === "error") {
        const err = this.#vendorError(e.kind, e.message);
        if (e.kind === "auth" && this.#ws === ws) {
          // A refused key is not cured by reopening at once: wait the retry interval.
          this.#ws = undefined;
          this.#fail(err);
          void closeSocket(ws);
        } else this.#error = err;
      } else if (e.type === "end") this.#flushUtterance();
      else {
        if (e.language) this.#language = e.language;
        if (e.type === "final") {
          if (e.text.trim()) this.#held.push(e.text.trim());
        } else if (e.text.trim()) {
          this.#queue.push(makeFrame("InterimTranscription", {
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
    this.#queue.push(
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
    const ws = this.#ws;
    if (this.#state === "open" && ws?.readyState === WebSocket.OPEN) {
      this.#pending.push(bytes);
      this.#pendingBytes += bytes.length;
      if (this.#pendingBytes >= this.#chunkBytes) this.#flush(ws);
      return;
    }
    if (this.#state !== "reconnecting") return;
    this.#backlog.push(bytes);
    this.#backlogBytes += bytes.length;
    while (this.#backlogBytes > this.#backlogMax) {
      this.#backlogBytes -= this.#backlog.shift()?.length ?? 0;
    }
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
    const ws = this.#ws;
    // Audio counts as keep-alive; only a quiet period needs the explicit message.
    if (!this.#audioSinceTick && ws?.readyState === WebSocket.OPEN) this.#sendRaw(ws, message);
    this.#audioSinceTick = false;
  }
}
