/**
 * The next Gemini Live connection, readied during a `goAway` while the old one is still live:
 * resumed from a given handle, kept until a switch takes it or a fresher handle supersedes it.
 * @module
 */

import type { GeminiConnection } from "./gemini_live_session.ts";
import { retireConnection } from "./gemini_live_session.ts";

interface Standby {
  handle: string | undefined;
  ready: Promise<GeminiConnection | undefined>;
  conn?: GeminiConnection;
  failed: boolean;
  /** A switch took it: it must not be closed as superseded. */
  taken: boolean;
}

/** At most one standby connection. */
export class StandbySlot {
  #sb: Standby | undefined;

  /** The handle the standby resumes from; `null` when there is none. */
  get handle(): string | undefined | null {
    return this.#sb ? this.#sb.handle : null;
  }

  /** True when there is a standby and its `setupComplete` arrived. */
  get ready(): boolean {
    return this.#sb?.conn !== undefined && !this.#sb.failed;
  }

  /** The standby's connection is `conn` (to tell its close from the live one's). */
  holds(conn: GeminiConnection): boolean {
    return this.#sb?.conn === conn;
  }

  /** Mark the standby unusable (its socket closed). */
  fail(): void {
    if (this.#sb) this.#sb.failed = true;
  }

  /**
   * Replace any standby by `open(handle)`; `onReady` runs when it is ready and still wanted,
   * `onError` when it failed.
   */
  prepare(
    handle: string | undefined,
    open: (handle: string | undefined) => Promise<GeminiConnection>,
    onReady: () => void,
    onError: (err: unknown) => void,
  ): void {
    this.drop();
    const sb: Standby = { handle, failed: false, taken: false, ready: Promise.resolve(undefined) };
    sb.ready = open(handle).then((conn) => {
      sb.conn = conn;
      if (this.#sb !== sb && !sb.taken) retireConnection(conn);
      else if (!sb.taken) onReady();
      return conn;
    }, (err) => {
      sb.failed = true;
      onError(err);
      return undefined;
    });
    this.#sb = sb;
  }

  /** Take the standby for `handle` once ready; undefined when there is none (or another). */
  async take(handle: string | undefined): Promise<GeminiConnection | undefined> {
    const sb = this.#sb;
    this.#sb = undefined;
    if (!sb) return undefined;
    sb.taken = true;
    if (sb.handle !== handle || sb.failed) {
      if (sb.conn) retireConnection(sb.conn);
      return undefined;
    }
    const conn = await sb.ready;
    return conn && !conn.retired ? conn : undefined;
  }

  /** Close the standby (or have it closed once it is ready). */
  drop(): void {
    const sb = this.#sb;
    this.#sb = undefined;
    if (sb?.conn && !sb.conn.live) retireConnection(sb.conn);
  }
}
