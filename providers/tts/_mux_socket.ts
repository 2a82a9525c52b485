/**
 * The socket skeleton of streaming text-to-speech clients whose one WebSocket carries several
 * utterances told apart by an id in each message (Cartesia contexts, Azure Speech request ids):
 * dialled at start and by the first utterance after a close, each message routed to its
 * utterance, a close failing every utterance in flight. A provider supplies only its wire: how
 * to read a message's id, what to send, how to read a message, how to cancel.
 * @module
 */

import type { Frame } from "../../core/frames.ts";
import { Mailbox, openSocket, raceAbort, SharedSocket } from "../ws_client.ts";
import {
  silentUtterance,
  socketClosedError,
  type SocketEvent,
  type SpeakStep,
  type UtteranceEnd,
  utteranceFrames,
} from "./_socket_utterance.ts";

/** Where and how to dial, and how to route a message. */
export interface MuxSocketOptions<M> {
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
  /**
   * Read one server message: `id` names the utterance it is for (none: every utterance in
   * flight); `undefined` ignores the message.
   */
  route(data: unknown): { id?: string; msg: M } | undefined;
  /** Sent first on every new socket (a per-connection configuration). */
  hello?(): string;
}

/** One utterance's wire. */
export interface MuxUtterance<M> {
  /** The id its messages carry; also its frames' context id. */
  id: string;
  /** Text to speak (blank: no request at all). */
  text: string;
  /** Model (or voice) name for the usage frame. */
  model: string;
  /** Rate of the PCM the server sends. */
  sampleRate: number;
  /** Send the request(s) for the utterance. */
  send(ws: WebSocket): void;
  /** Read one routed message; throw a FlowcatError for a server error. */
  step(msg: M): SpeakStep | undefined;
  /** Stop generation for an utterance left before its end (abort, early exit). */
  cancel(ws: WebSocket): void;
}

/** One WebSocket that utterances share, each under its own id. */
export class MuxSocket<M> {
  readonly #o: MuxSocketOptions<M>;
  readonly #socket: SharedSocket;
  readonly #utterances = new Map<string, Mailbox<SocketEvent<M>>>();

  /** A socket not yet dialled. */
  constructor(opts: MuxSocketOptions<M>) {
    this.#o = opts;
    const { provider, timeoutMs } = opts;
    this.#socket = new SharedSocket(
      () => openSocket(opts.url, opts.headers, { provider, timeoutMs }),
      (ws) => this.#attach(ws),
    );
  }

  /** Dial now so the first utterance does not pay for it; a refused key throws kind `auth`. */
  async start(): Promise<void> {
    await this.#socket.get();
  }

  /** Close the socket; utterances in flight end with a `closed` error. Idempotent. */
  stop(): Promise<void> {
    return this.#socket.close();
  }

  /** Close `ws` without waiting and dial the next socket now, in the background. */
  redial(ws: WebSocket): void {
    this.#socket.drop(ws);
    this.#socket.prewarm();
  }

  /**
   * Stream one utterance. Aborting `signal` (or leaving the loop early) cancels it and ends the
   * stream at once (no TtsStopped); a socket closed mid-utterance is a `closed` error.
   */
  async *speak(u: MuxUtterance<M>, signal?: AbortSignal): AsyncGenerator<Frame> {
    if (signal?.aborted) return;
    if (u.text.trim() === "") return yield* silentUtterance(u.id);
    const ws = await raceAbort(this.#socket.get(), signal);
    if (!ws) return;
    const { provider, secret } = this.#o;
    if (ws.readyState !== WebSocket.OPEN) throw socketClosedError(provider, secret, 1006, "");
    const events = new Mailbox<SocketEvent<M>>();
    this.#utterances.set(u.id, events);
    const end: UtteranceEnd = { ended: false };
    try {
      u.send(ws);
      yield* utteranceFrames(
        events,
        {
          provider,
          secret,
          contextId: u.id,
          model: u.model,
          characters: u.text.length,
          sampleRate: u.sampleRate,
          step: (msg) => u.step(msg),
        },
        end,
        signal,
      );
    } finally {
      this.#utterances.delete(u.id);
      if (!end.ended) u.cancel(ws);
    }
  }

  /** Route each message to its utterance; a close fails every utterance in flight. */
  #attach(ws: WebSocket): void {
    ws.addEventListener("message", (e) => {
      const routed = this.#o.route(e.data);
      if (routed === undefined) return;
      const { id, msg } = routed;
      if (id !== undefined) this.#utterances.get(id)?.push({ type: "message", msg });
      else for (const box of this.#utterances.values()) box.push({ type: "message", msg });
    });
    ws.addEventListener("close", (e) => {
      for (const box of this.#utterances.values()) {
        box.push({ type: "closed", code: e.code, reason: e.reason });
      }
    });
    const hello = this.#o.hello?.();
    if (hello !== undefined) ws.send(hello);
  }
}
