/**
 * The socket skeleton of streaming text-to-speech clients whose WebSocket carries one utterance
 * at a time (Deepgram Aura, Rime, LMNT, ...): one kept socket, dialled by the first utterance and
 * redialled after a close; utterances take it in turn; each streams TtsStarted, TtsAudio...,
 * a `tts_usage` Metrics frame, TtsStopped. A provider supplies only its wire: what to send, how
 * to read a server message, how to cancel.
 * @module
 */

import type { Frame } from "../../core/frames.ts";
import { closeSocket, Mailbox, openSocket, redact } from "../ws_client.ts";
import {
  silentUtterance,
  type SocketEvent,
  type SpeakStep,
  type UtteranceEnd,
  utteranceFrames,
} from "./_socket_utterance.ts";

export type { SpeakStep } from "./_socket_utterance.ts";

/** Where and how to dial. */
export interface SerialSocketOptions {
  /** Provider name for errors. */
  provider: string;
  /** Handshake URL. */
  url: string;
  /** Handshake headers (the key rides here). */
  headers: Record<string, string>;
  /** Handshake deadline, ms. */
  timeoutMs: number;
  /** The key, blanked out of any server text put in an error. */
  secret: string;
  /** Sees every message first; false drops it (stale audio of a cancelled utterance). */
  admit?(data: unknown): boolean;
  /** Sent first on every new socket (a session init message). */
  hello?: string | Uint8Array;
  /** A socket per utterance: closed when the utterance ends, however it ends. */
  oneShot?: boolean;
  /** Called when a new socket is open (state about the previous one is void). */
  opened?(): void;
  /** Sent before closing the socket in {@link SerialSocket.stop}. */
  goodbye?: string | Uint8Array;
}

/** One utterance's wire. */
export interface Utterance {
  /** Text to speak (blank: no request at all). */
  text: string;
  /** Model name for the usage frame. */
  model: string;
  /** Rate of the PCM the server sends. */
  sampleRate: number;
  /** Send the request(s) for the utterance. */
  send(ws: WebSocket, contextId: string): void;
  /** Read one server message; throw a FlowcatError for a server error. */
  step(data: unknown, contextId: string): SpeakStep | undefined;
  /** Stop generation for an utterance left before its end (abort, early exit). */
  cancel(ws: WebSocket, contextId: string): void;
}

/** One kept WebSocket that utterances use in turn. */
export class SerialSocket {
  readonly #o: SerialSocketOptions;
  #ws: WebSocket | undefined;
  #current: Mailbox<SocketEvent<unknown>> | undefined;
  #turn: Promise<void> = Promise.resolve();
  /** One-shot sockets being closed, awaited by {@link SerialSocket.stop}. */
  readonly #closing = new Set<Promise<void>>();

  /** A socket not yet dialled. */
  constructor(opts: SerialSocketOptions) {
    this.#o = opts;
  }

  /** Send the goodbye message if any and close the socket. Idempotent. */
  async stop(): Promise<void> {
    await Promise.all(this.#closing);
    const ws = this.#ws;
    this.#ws = undefined;
    if (!ws) return;
    if (ws.readyState === WebSocket.OPEN && this.#o.goodbye) ws.send(this.#o.goodbye);
    await closeSocket(ws);
  }

  /**
   * Stream one utterance. Aborting `signal` (or leaving the loop early) cancels it and ends the
   * stream at once (no TtsStopped); a socket closed mid-utterance is a `closed` error.
   */
  async *speak(u: Utterance, signal?: AbortSignal): AsyncGenerator<Frame> {
    if (signal?.aborted) return;
    const contextId = crypto.randomUUID();
    if (u.text.trim() === "") return yield* silentUtterance(contextId);
    const previous = this.#turn;
    let release!: () => void;
    this.#turn = new Promise((r) => (release = r));
    const events = new Mailbox<SocketEvent<unknown>>();
    let ws: WebSocket | undefined;
    const end: UtteranceEnd = { ended: false };
    try {
      await untilAborted(previous, signal);
      if (signal?.aborted) return;
      try {
        ws = await this.#socket(signal);
      } catch (err) {
        if (signal?.aborted) return; // the dial was given up for the abort
        throw err;
      }
      this.#current = events;
      u.send(ws, contextId);
      const { provider, secret } = this.#o;
      yield* utteranceFrames(
        events,
        {
          provider,
          secret,
          contextId,
          model: u.model,
          characters: u.text.length,
          sampleRate: u.sampleRate,
          step: (data) => u.step(data, contextId),
        },
        end,
        signal,
      );
    } finally {
      if (this.#current === events) this.#current = undefined;
      if (!end.ended && ws?.readyState === WebSocket.OPEN) u.cancel(ws, contextId);
      if (this.#o.oneShot && ws) this.#retire(ws);
      release();
    }
  }

  /** Close a one-shot socket without waiting here; {@link SerialSocket.stop} waits for it. */
  #retire(ws: WebSocket): void {
    if (this.#ws === ws) this.#ws = undefined;
    const closing = closeSocket(ws).finally(() => this.#closing.delete(closing));
    this.#closing.add(closing);
  }

  /** A server text for an error message: the key blanked, at most 300 characters. */
  clean(text: string): string {
    return redact(text, this.#o.secret).slice(0, 300);
  }

  /** The open socket, dialling one when there is none. */
  async #socket(signal?: AbortSignal): Promise<WebSocket> {
    if (this.#ws?.readyState === WebSocket.OPEN) return this.#ws;
    const { provider, timeoutMs } = this.#o;
    const ws = await openSocket(this.#o.url, this.#o.headers, { provider, timeoutMs, signal });
    this.#ws = ws;
    this.#o.opened?.();
    if (this.#o.hello) ws.send(this.#o.hello);
    ws.addEventListener("message", (e) => {
      if (this.#o.admit && !this.#o.admit(e.data)) return;
      this.#current?.push({ type: "message", msg: e.data });
    });
    ws.addEventListener("close", (e) => {
      if (this.#ws !== ws) return;
      this.#ws = undefined;
      this.#current?.push({ type: "closed", code: e.code, reason: e.reason });
    });
    return ws;
  }
}

/** Resolves when `p` settles or `signal` aborts, whichever is first (the work behind `p` goes on). */
function untilAborted(p: Promise<void>, signal?: AbortSignal): Promise<void> {
  if (!signal) return p;
  return new Promise((resolve) => {
    const done = () => {
      signal.removeEventListener("abort", done);
      resolve();
    };
    signal.addEventListener("abort", done, { once: true });
    p.then(done, done);
  });
}
