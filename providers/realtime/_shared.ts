/**
 * Pieces every realtime (speech-to-speech) client shares: an event queue that `nextEvent()`
 * reads, base64 16-bit PCM both ways, socket-message decoding, a connect and a close with a
 * deadline, and how a keypad press is told to a model (from core/keypad_text.ts).
 * @module
 */

import { bytesToInt16, int16ToBytes } from "../../core/audio/pcm.ts";
import { FlowcatError } from "../../core/errors.ts";
import type { RealtimeEvent } from "../../core/seams.ts";
import { wsDialFailure } from "../dial_errors.ts";

export { dtmfUserText } from "../../core/keypad_text.ts";

/**
 * Unbounded FIFO of realtime events; `next()` gives `undefined` once closed and drained. Or push
 * mode: after {@link RealtimeEventQueue.listen} every event goes straight to the listener.
 */
export class RealtimeEventQueue {
  #items: RealtimeEvent[] = [];
  #head = 0;
  #waiter: ((ev: RealtimeEvent | undefined) => void) | undefined;
  #listener: ((ev: RealtimeEvent | undefined) => void) | undefined;
  #closed = false;

  /** True once {@link RealtimeEventQueue.close} was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Append an event (ignored after close). */
  push(ev: RealtimeEvent): void {
    if (this.#closed) return;
    if (this.#listener !== undefined) return this.#listener(ev);
    const w = this.#waiter;
    if (w !== undefined) {
      this.#waiter = undefined;
      w(ev);
      return;
    }
    this.#items.push(ev);
  }

  /** Push a final `closed` event and stop accepting more; idempotent. */
  close(reason?: string): void {
    if (this.#closed) return;
    this.push(reason === undefined ? { type: "closed" } : { type: "closed", reason });
    this.#closed = true;
    const w = this.#waiter;
    this.#waiter = undefined;
    w?.(undefined);
    this.#listener?.(undefined);
  }

  /**
   * Push mode: deliver every event to `fn` as it is pushed (those already queued first, in
   * order), then `undefined` once closed, instead of through {@link RealtimeEventQueue.next}.
   */
  listen(fn: (ev: RealtimeEvent | undefined) => void): void {
    while (this.#head < this.#items.length) fn(this.#items[this.#head++]);
    this.#items = [];
    this.#head = 0;
    if (this.#closed) fn(undefined);
    else this.#listener = fn;
  }

  /** The next event; `undefined` once closed and drained. */
  next(): Promise<RealtimeEvent | undefined> {
    if (this.#head < this.#items.length) {
      const ev = this.#items[this.#head++];
      if (this.#head > 256 && this.#head * 2 > this.#items.length) {
        this.#items = this.#items.slice(this.#head);
        this.#head = 0;
      }
      return Promise.resolve(ev);
    }
    if (this.#closed) return Promise.resolve(undefined);
    return new Promise((resolve) => (this.#waiter = resolve));
  }
}

/** Base64 of 16-bit little-endian PCM. */
export function pcm16ToBase64(pcm: Int16Array): string {
  return int16ToBytes(pcm).toBase64();
}

/** 16-bit little-endian PCM from base64; `undefined` when it is not valid base64 of even length. */
export function pcm16FromBase64(b64: string): Int16Array | undefined {
  let bytes: Uint8Array;
  try {
    bytes = Uint8Array.fromBase64(b64);
  } catch {
    return undefined;
  }
  return bytes.length % 2 === 0 ? bytesToInt16(bytes) : undefined;
}

const utf8 = new TextDecoder();

/** Text of a WebSocket message: providers may send JSON in binary frames too. */
export function messageText(data: unknown): string | undefined {
  if (typeof data === "string") return data;
  if (data instanceof ArrayBuffer) return utf8.decode(new Uint8Array(data));
  if (ArrayBuffer.isView(data)) {
    return utf8.decode(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  }
  return undefined;
}

/** Options of {@link openRealtimeSocket}. */
export interface OpenSocketOptions {
  /** Extra request headers (e.g. `Authorization`). Deno's WebSocket accepts them. */
  headers?: Record<string, string>;
  /** Give up after this long (default 10 s). */
  timeoutMs?: number;
  /** Provider name for error messages. */
  provider: string;
}

/**
 * Open a WebSocket and wait until it is open. Binary frames arrive as ArrayBuffer. The URL is
 * never put in an error message (it may carry `?key=`); the reason is (the handshake's HTTP
 * status, a refused connection...), and 401/403 are `auth` errors.
 */
export function openRealtimeSocket(url: string, opts: OpenSocketOptions): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    let ws: WebSocket;
    try {
      ws = opts.headers
        // Deno extension: request headers on a client WebSocket.
        ? new WebSocket(url, { headers: opts.headers } as unknown as string[])
        : new WebSocket(url);
    } catch (err) {
      reject(
        new FlowcatError("config", `${opts.provider}: bad realtime URL`, { cause: err }),
      );
      return;
    }
    ws.binaryType = "arraybuffer";
    const timer = setTimeout(() => {
      cleanup();
      try {
        ws.close();
      } catch { /* already closing */ }
      reject(new FlowcatError("timeout", `${opts.provider}: connect timed out`));
    }, opts.timeoutMs ?? 10_000);
    const onOpen = () => {
      cleanup();
      resolve(ws);
    };
    const onError = (e: Event) => {
      cleanup();
      const why = wsDialFailure((e as ErrorEvent).message ?? "");
      reject(
        why.status === 401 || why.status === 403
          ? new FlowcatError("auth", `${opts.provider}: API key rejected (${why.text})`)
          : new FlowcatError("closed", `${opts.provider}: could not connect: ${why.text}`),
      );
    };
    const cleanup = () => {
      clearTimeout(timer);
      ws.removeEventListener("open", onOpen);
      ws.removeEventListener("error", onError);
      ws.removeEventListener("close", onError);
    };
    ws.addEventListener("open", onOpen);
    ws.addEventListener("error", onError);
    ws.addEventListener("close", onError);
  });
}

/**
 * Close `ws` (when open or opening) with 1000 and wait until `closed` resolves, or `waitMs` at
 * most: a peer that never answers the close must not hold a call's end.
 */
export async function closeSocket(
  ws: WebSocket,
  closed: Promise<void>,
  waitMs: number,
): Promise<void> {
  if (ws.readyState === WebSocket.CONNECTING || ws.readyState === WebSocket.OPEN) ws.close(1000);
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([closed, new Promise<void>((r) => (timer = setTimeout(r, waitMs)))]);
  clearTimeout(timer);
}
