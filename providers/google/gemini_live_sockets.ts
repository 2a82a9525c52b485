/**
 * The WebSockets one Gemini Live client has dialled, so that close() can end every one of
 * them (also those still opening) and wait for the close handshakes with a deadline.
 * @module
 */

import { openRealtimeSocket, type OpenSocketOptions } from "../realtime/_shared.ts";

/** Tracks sockets from opening to closed. */
export class SocketPool {
  readonly #opening = new Set<Promise<unknown>>();
  readonly #open = new Map<WebSocket, Promise<void>>();

  /** Open a socket (see {@link openRealtimeSocket}) and track it until it closes. */
  async open(url: string, opts: OpenSocketOptions): Promise<WebSocket> {
    const opening = openRealtimeSocket(url, opts).then((ws) => {
      this.#open.set(ws, new Promise((r) => ws.addEventListener("close", () => r())));
      ws.addEventListener("close", () => this.#open.delete(ws));
      return ws;
    });
    this.#opening.add(opening);
    try {
      return await opening;
    } finally {
      this.#opening.delete(opening);
    }
  }

  /** Close every socket, those still opening included; wait at most `waitMs` for the peers. */
  async closeAll(waitMs: number): Promise<void> {
    await Promise.allSettled([...this.#opening]);
    for (const ws of this.#open.keys()) {
      try {
        ws.close(1000);
      } catch { /* already closing */ }
    }
    // A peer that never answers the close must not hold close() forever.
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      Promise.allSettled([...this.#open.values()]),
      new Promise((r) => (timer = setTimeout(r, waitMs))),
    ]);
    clearTimeout(timer);
  }
}
