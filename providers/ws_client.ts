/**
 * WebSocket plumbing the streaming provider clients share (ElevenLabs and Cartesia TTS,
 * Deepgram STT): a dial that reports a refused key as an `auth` error, a close that waits for
 * the peer, a one-reader mailbox for socket events, base64 audio and JSON message decoding.
 * Realtime (speech-to-speech) clients have their own dial in providers/realtime/_shared.ts
 * (it has no abort signal and no auth status); its message text decoding is reused here.
 * @module
 */

import { FlowcatError } from "../core/errors.ts";
import { wsDialFailure } from "./dial_errors.ts";
import { messageText } from "./realtime/_shared.ts";

/** How long {@link closeSocket} waits for the peer's close before giving up. */
export const CLOSE_WAIT_MS = 1000;

/** Options of {@link openSocket}. */
export interface SocketDialOptions {
  /** Provider name for error messages. */
  provider: string;
  /** Give up (kind `timeout`) after this long. */
  timeoutMs: number;
  /** Aborting it ends the dial with a `closed` error. */
  signal?: AbortSignal;
}

/**
 * Open a WebSocket with request headers (a Deno extension) and wait until it is open. Deno's
 * error event for a refused handshake holds "Invalid status code: 401"; 401/403 become `auth`
 * errors. The URL and headers never go into an error message (keys ride in either).
 */
export function openSocket(
  url: string,
  headers: Record<string, string>,
  opts: SocketDialOptions,
): Promise<WebSocket> {
  const { provider, timeoutMs, signal } = opts;
  if (signal?.aborted) {
    return Promise.reject(new FlowcatError("closed", `${provider}: connect aborted`));
  }
  return new Promise((resolve, reject) => {
    let ws: WebSocket;
    try {
      ws = new WebSocket(url, { headers } as unknown as string[]);
    } catch (err) {
      return reject(new FlowcatError("config", `${provider}: bad WebSocket URL`, { cause: err }));
    }
    ws.binaryType = "arraybuffer";
    let settled = false;
    let handshakeError = "";
    const finish = (err?: FlowcatError) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      ws.removeEventListener("open", onOpen);
      ws.removeEventListener("error", onError);
      ws.removeEventListener("close", onClose);
      // On failure wait for the close, so no half-open socket outlives the call.
      if (err) closeSocket(ws).then(() => reject(err));
      else resolve(ws);
    };
    const onOpen = () => finish();
    const onError = (e: Event) => void (handshakeError = (e as ErrorEvent).message ?? "");
    const onClose = () => {
      const why = wsDialFailure(handshakeError);
      finish(
        why.status === 401 || why.status === 403
          ? new FlowcatError("auth", `${provider}: API key rejected (${why.text})`)
          : new FlowcatError("closed", `${provider}: could not connect: ${why.text}`),
      );
    };
    const onAbort = () => finish(new FlowcatError("closed", `${provider}: connect aborted`));
    const timeout = `${provider}: connect timed out after ${timeoutMs} ms`;
    const timer = setTimeout(() => finish(new FlowcatError("timeout", timeout)), timeoutMs);
    ws.addEventListener("open", onOpen);
    ws.addEventListener("error", onError);
    ws.addEventListener("close", onClose);
    signal?.addEventListener("abort", onAbort);
  });
}

/** Close `ws` (code 1000) and wait for its close event, at most {@link CLOSE_WAIT_MS}. */
export function closeSocket(ws: WebSocket): Promise<void> {
  if (ws.readyState === WebSocket.CLOSED) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, CLOSE_WAIT_MS);
    ws.addEventListener("close", () => (clearTimeout(timer), resolve()), { once: true });
    try {
      ws.close(1000);
    } catch { /* already closing */ }
  });
}

/** Unbounded FIFO one reader awaits; `poke()` wakes the reader with nothing (abort). */
export class Mailbox<T> {
  #items: T[] = [];
  #wake: (() => void) | undefined;

  /** Queue `item` and wake the reader. */
  push(item: T): void {
    this.#items.push(item);
    this.poke();
  }

  /** Wake a waiting reader without an item, so it can look at its abort signal. */
  poke(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  /** The oldest item, waiting for one; `undefined` when woken by {@link Mailbox.poke}. */
  async next(): Promise<T | undefined> {
    if (this.#items.length === 0) await new Promise<void>((r) => (this.#wake = r));
    return this.#items.shift();
  }
}

/** Bytes of a base64 audio chunk; invalid base64 is a `protocol` error naming `provider`. */
export function decodeBase64(provider: string, b64: string): Uint8Array {
  try {
    return Uint8Array.fromBase64(b64);
  } catch {
    throw new FlowcatError("protocol", `${provider}: audio chunk is not valid base64`);
  }
}

/** A JSON object from a text or binary message; `undefined` for anything else. */
export function parseJsonMessage(data: unknown): Record<string, unknown> | undefined {
  const text = messageText(data);
  if (text === undefined) return undefined;
  try {
    const value = JSON.parse(text);
    return isJsonObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** True for a plain JSON object (not null, not an array). */
export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** `https://` roots become `wss://` (configs often hold the HTTP root); no trailing slash. */
export function wsRoot(base: string): string {
  return base.replace(/^http(s?):\/\//i, "ws$1://").replace(/\/+$/, "");
}

/** A server text with the key blanked, in case a proxy echoes it. */
export function redact(text: string, key: string): string {
  return key ? text.split(key).join("***") : text;
}

/** `p`, or `undefined` as soon as `signal` aborts (the work behind `p` goes on). */
export function raceAbort<T>(p: Promise<T>, signal?: AbortSignal): Promise<T | undefined> {
  if (!signal) return p;
  return new Promise((resolve, reject) => {
    const onAbort = () => resolve(undefined);
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/**
 * One socket a client's requests share (Cartesia contexts, Azure synthesis turns): dialled once
 * for concurrent callers, forgotten when it closes, dialled again by the next request.
 */
export class SharedSocket {
  readonly #dial: () => Promise<WebSocket>;
  readonly #onOpen: (ws: WebSocket) => void;
  #ws: WebSocket | undefined;
  #connecting: Promise<WebSocket> | undefined;
  #closed = false;

  /** `dial` opens a socket; `onOpen` attaches listeners (and sends what opens a session). */
  constructor(dial: () => Promise<WebSocket>, onOpen: (ws: WebSocket) => void) {
    this.#dial = dial;
    this.#onOpen = onOpen;
  }

  /** The open socket, dialling one when there is none. */
  get(): Promise<WebSocket> {
    if (this.#ws?.readyState === WebSocket.OPEN) return Promise.resolve(this.#ws);
    this.#connecting ??= this.#dial().then((ws) => {
      this.#ws = ws;
      ws.addEventListener("close", () => {
        if (this.#ws === ws) this.#ws = undefined;
      });
      this.#onOpen(ws);
      return ws;
    }).finally(() => (this.#connecting = undefined));
    return this.#connecting;
  }

  /** Close `ws` without waiting; the next {@link SharedSocket.get} dials anew. */
  drop(ws: WebSocket): void {
    if (this.#ws === ws) this.#ws = undefined;
    closeSocket(ws).catch(() => {});
  }

  /** Dial now, in the background, so the next request finds a socket open; not after close. */
  prewarm(): void {
    if (!this.#closed) this.get().catch(() => {});
  }

  /** Close the socket (after a dial in flight settles) and wait for it. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#connecting?.catch(() => undefined);
    const ws = this.#ws;
    this.#ws = undefined;
    if (ws) await closeSocket(ws);
  }
}
