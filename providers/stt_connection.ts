/**
 * The connection state machine of the streaming speech-to-text clients (Deepgram, Amazon
 * Transcribe, Azure Speech, and the WebSocket vendors of providers/ws_stt.ts). A client supplies
 * its wire (how to dial, what a new socket is sent, how held audio goes out); this module runs
 * one call's socket the same way for all of them:
 *
 * - `start` dials once; a refused key throws there;
 * - a socket that drops mid-call is redialled after `reconnectDelayMs` (0: at once), the audio
 *   of the gap held (up to `backlogMaxBytes`) and handed to the new socket;
 * - a failed redial, or a refusal the client calls {@link SttConnection.fail} for, is thrown
 *   once by the next {@link SttConnection.exchange}; later ones redial at most once per
 *   `retryIntervalMs`, and audio is dropped meanwhile;
 * - `stop` sends the client's farewell, ends a dial in flight and closes every socket it opened.
 *
 * The frames, the failure thrown once, the retry interval and the held audio are
 * providers/stt_exchange.ts's, which the gRPC client (a stream an utterance) shares.
 * @module
 */

import { FlowcatError } from "../core/errors.ts";
import type { Frame } from "../core/frames.ts";
import type { Logger } from "../core/log.ts";
import { HeldAudio, SttExchange } from "./stt_exchange.ts";
import { closeSocket, redact } from "./ws_client.ts";

type State = "idle" | "open" | "reconnecting" | "failed" | "stopped";

/** A client's wire and pacing, for {@link SttConnection}. */
export interface SttConnectionOptions {
  /** Provider name for errors and logs. */
  provider: string;
  /** Where reconnects and failures are told. */
  log: Logger;
  /** After a failure, how long until the next exchange redials. */
  retryIntervalMs: number;
  /** Wait before redialling a dropped socket; 0 redials at once. */
  reconnectDelayMs: number;
  /** Audio held while a dropped socket is redialled, bytes; 0 drops the audio of the gap. */
  backlogMaxBytes: number;
  /** The key, blanked out of a close reason before it is logged; without it none is logged. */
  secret?: string;
  /** Open a socket ready for audio; `signal` aborts on stop. */
  dial(signal: AbortSignal): Promise<WebSocket>;
  /** A socket became the current one: listen to it, send what opens a session. */
  attach(ws: WebSocket): void;
  /** Send the audio held during a redial on the new socket (called on every attach). */
  drain?(ws: WebSocket, held: Uint8Array[], heldBytes: number): void;
  /** A drop that redialling would not cure (the service refused the session): its error. */
  refusal?(code: number, reason: string): FlowcatError | undefined;
}

/** One call's streaming STT socket: dial, redial, failure reported once, stop. */
export class SttConnection {
  readonly #o: SttConnectionOptions;
  #state: State = "idle";
  #ws: WebSocket | undefined;
  /** Every socket this connection opened, until each has closed. */
  readonly #sockets = new Set<WebSocket>();
  #dialing: Promise<WebSocket> | undefined;
  readonly #exchange: SttExchange;
  readonly #backlog: HeldAudio;
  #reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  /** Aborted by stop(): ends a dial in flight at once. */
  readonly #stopped = new AbortController();

  /** Nothing is dialled until {@link SttConnection.start}. */
  constructor(opts: SttConnectionOptions) {
    this.#o = opts;
    this.#exchange = new SttExchange(opts.retryIntervalMs);
    this.#backlog = new HeldAudio(opts.backlogMaxBytes);
  }

  /** The current socket, open or closing; `undefined` between sockets. */
  get socket(): WebSocket | undefined {
    return this.#ws;
  }

  /** The current socket when audio can go out on it now. */
  get live(): WebSocket | undefined {
    const ws = this.#ws;
    return this.#state === "open" && ws?.readyState === WebSocket.OPEN ? ws : undefined;
  }

  /** True when audio that cannot go out now would be held for the next socket. */
  get holding(): boolean {
    return this.#o.backlogMaxBytes > 0 &&
      (this.#state === "reconnecting" || (this.#state === "open" && this.live === undefined));
  }

  /** Dial and attach the first socket; true when this call did. Throws a dial's FlowcatError. */
  async start(): Promise<boolean> {
    if (this.#state !== "idle") return false;
    const ws = await this.#dial();
    if (this.#state !== "idle") {
      ws.close(1000);
      return false;
    }
    this.#attach(ws);
    return true;
  }

  /**
   * One `runStt`: reject with the failure not yet reported, if any; else redial a failed link
   * whose retry interval has passed, run `send` and resolve with the frames queued since.
   */
  exchange(send: () => void): Promise<Frame[]> {
    return this.#exchange.take(() => {
      if (this.#state === "failed" && this.#dialing === undefined && this.#exchange.retryDue) {
        this.#reconnect();
      }
      send();
    });
  }

  /** Queue a frame for the next {@link SttConnection.exchange}. */
  emit(frame: Frame): void {
    this.#exchange.emit(frame);
  }

  /** An error the next exchange throws (the latest wins); the socket goes on. */
  report(err: FlowcatError): void {
    this.#exchange.report(err);
  }

  /**
   * Give up for now: close the current socket, drop held audio; the next exchange throws `err`
   * and later ones redial once per retry interval (a refusal is not cured by redialling at once).
   */
  fail(err: FlowcatError): void {
    if (this.#state === "stopped") return;
    const ws = this.#ws;
    this.#ws = undefined;
    this.#state = "failed";
    this.#exchange.failed();
    this.#exchange.report(err);
    this.#backlog.clear();
    this.#o.log.error(`${this.#o.provider}: connection failed`, { kind: err.kind });
    if (ws !== undefined) void closeSocket(ws);
  }

  /** Hold audio for the socket being redialled (the oldest goes first past the cap), if any. */
  hold(bytes: Uint8Array): void {
    if (this.holding) this.#backlog.push(bytes);
  }

  /**
   * Send `farewell` on an open socket, end a dial in flight, close every socket and wait for
   * them. Idempotent.
   */
  async stop(farewell?: (ws: WebSocket) => void): Promise<void> {
    if (this.#state === "stopped") return;
    this.#state = "stopped";
    clearTimeout(this.#reconnectTimer);
    this.#reconnectTimer = undefined;
    const ws = this.#ws;
    if (farewell && ws?.readyState === WebSocket.OPEN) {
      try {
        farewell(ws);
      } catch { /* closing anyway */ }
    }
    this.#stopped.abort();
    await this.#dialing?.catch(() => {});
    // closeSocket gives up on a server that never answers the close, so stop() cannot hang.
    await Promise.all([...this.#sockets].map((s) => closeSocket(s)));
    this.#ws = undefined;
    this.#backlog.clear();
  }

  #dial(): Promise<WebSocket> {
    const dialing = this.#o.dial(this.#stopped.signal).then((ws) => {
      this.#sockets.add(ws);
      ws.addEventListener("close", () => this.#sockets.delete(ws));
      return ws;
    });
    this.#dialing = dialing;
    const clear = () => {
      if (this.#dialing === dialing) this.#dialing = undefined;
    };
    dialing.then(clear, clear);
    return dialing;
  }

  #attach(ws: WebSocket): void {
    this.#ws = ws;
    this.#state = "open";
    this.#o.attach(ws);
    if (this.#ws !== ws) return; // the client refused it at once (a key refused in a message)
    ws.addEventListener("close", (ev) => this.#dropped(ws, ev.code, ev.reason));
    // Closed between its dial and now: the close event has been and gone.
    if (ws.readyState === WebSocket.CLOSED) return this.#dropped(ws, 1006, "");
    const held = this.#backlog.take();
    this.#o.drain?.(ws, held.chunks, held.bytes);
  }

  #dropped(ws: WebSocket, code: number, reason: string): void {
    if (this.#ws !== ws) return;
    this.#ws = undefined;
    if (this.#state !== "open") return;
    const refused = this.#o.refusal?.(code, reason);
    if (refused !== undefined) return this.fail(refused);
    const { secret } = this.#o;
    const why = secret !== undefined && reason
      ? { code, reason: redact(reason, secret).slice(0, 200) }
      : { code };
    this.#o.log.warn(`${this.#o.provider}: socket closed, reconnecting`, why);
    if (this.#o.reconnectDelayMs <= 0) return this.#reconnect();
    this.#state = "reconnecting";
    this.#reconnectTimer = setTimeout(() => {
      this.#reconnectTimer = undefined;
      this.#reconnect();
    }, this.#o.reconnectDelayMs);
  }

  #reconnect(): void {
    this.#state = "reconnecting";
    this.#dial().then(
      (ws) => {
        if (this.#state === "stopped") return void ws.close(1000);
        this.#o.log.info(`${this.#o.provider}: reconnected`);
        this.#attach(ws);
      },
      (err: unknown) => {
        if (this.#state === "stopped") return;
        const why = err instanceof Error ? err.message : String(err);
        const kind = err instanceof FlowcatError ? err.kind : "closed";
        this.fail(
          new FlowcatError(kind, `${this.#o.provider}: connection lost (${why})`, { cause: err }),
        );
      },
    );
  }
}
