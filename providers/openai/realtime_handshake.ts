/**
 * The start of an OpenAI Realtime session: wait for `session.created` (xAI:
 * `conversation.created`), send the
 * `session.update`, wait for `session.updated`, all within a deadline. While it runs, the
 * client hands it every server event.
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import { serverErrorInfo, type ServerEvent } from "./realtime_inbound.ts";
import type { ClientEvent } from "./realtime_wire.ts";

interface Pending {
  phase: "created" | "updated";
  resolve(): void;
  reject(err: Error): void;
}

/** At most one handshake at a time. */
export class SessionHandshake {
  #pending: Pending | undefined;

  /** @param provider name for error messages */
  constructor(readonly provider: string) {}

  /** True while a handshake waits for the server. */
  get running(): boolean {
    return this.#pending !== undefined;
  }

  /** Start one: `send(update)` goes out on `session.created`; rejects after `timeoutMs`. */
  run(update: ClientEvent, send: (ev: ClientEvent) => void, timeoutMs: number): Promise<void> {
    const p = this.provider;
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        const what = this.#pending?.phase === "updated" ? "session.updated" : "session.created";
        this.fail(new FlowcatError("timeout", `${p}: no ${what} within ${timeoutMs} ms`));
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        this.#pending = undefined;
      };
      this.#pending = {
        phase: "created",
        resolve: () => {
          done();
          resolve();
        },
        reject: (err) => {
          done();
          reject(err);
        },
      };
      this.#send = () => send(update);
    });
  }

  /** Fail the running handshake (socket closed, client closed). */
  fail(err: Error): void {
    this.#pending?.reject(err);
  }

  /** A server event while running. */
  onEvent(ev: ServerEvent): void {
    const hs = this.#pending;
    if (hs === undefined) return;
    // xAI greets with `conversation.created` where OpenAI sends `session.created`.
    const hello = ev.type === "session.created" || ev.type === "conversation.created";
    if (hello && hs.phase === "created") {
      hs.phase = "updated";
      this.#send();
    } else if (ev.type === "session.updated" && hs.phase === "updated") {
      hs.resolve();
    } else if (ev.type === "error") {
      // Nothing but the session.update is in flight: its rejection would only end in a timeout.
      const e = serverErrorInfo(ev.error);
      const what = `${e.code ?? e.type ?? "error"} ${e.message ?? ""}`.trim();
      hs.reject(new FlowcatError("protocol", `${this.provider}: session rejected: ${what}`));
    }
  }

  #send: () => void = () => {};
}
