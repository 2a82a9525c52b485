/**
 * What client and server transactions share: the context the transaction layer hands them
 * (timer values, the send function, counters, a logger) and a bag of timers that is cleared
 * in one call when a transaction ends.
 * @module
 */

import type { Logger } from "../../core/log.ts";
import type { SipMessage } from "./message.ts";
import type { TimerValues } from "./txn_timers.ts";
import type { UdpAddress } from "./udp.ts";

/** Running counters of a transaction layer (for tests, metrics and diagnostics). */
export interface TransactionCounters {
  /** Requests and responses re-sent by a retransmission timer (A, E, G, 2xx). */
  retransmitted: number;
  /** Retransmitted requests absorbed by an existing server transaction. */
  absorbed: number;
  /** Client transactions that timed out (B, F) and server ones that never got an ACK (H, L). */
  timeouts: number;
  /** Responses that matched no client transaction. */
  strayResponses: number;
  /** ACKs generated for non-2xx final responses. */
  acksForNon2xx: number;
}

/** A fresh zeroed {@link TransactionCounters}. */
export function newCounters(): TransactionCounters {
  return { retransmitted: 0, absorbed: 0, timeouts: 0, strayResponses: 0, acksForNon2xx: 0 };
}

/** What a transaction needs from its layer. */
export interface TxnContext {
  /** Timer values in ms (T1, T2, T4, A..K). */
  readonly timers: TimerValues;
  /** Put a message on the wire. */
  send(msg: SipMessage, to: UdpAddress): void;
  /** Shared counters. */
  readonly counters: TransactionCounters;
  /** Where transaction events are logged. */
  readonly log: Logger;
  /** A transaction reached Terminated: forget it. */
  terminated(txn: { key: string }): void;
}

/** setTimeout handles that can all be cleared at once. */
export class TimerBag {
  #ids = new Set<ReturnType<typeof setTimeout>>();

  /** Run `fn` after `ms`; returns the handle for {@link clear}. */
  set(fn: () => void, ms: number): ReturnType<typeof setTimeout> {
    const id = setTimeout(() => {
      this.#ids.delete(id);
      fn();
    }, ms);
    this.#ids.add(id);
    return id;
  }

  /** Cancel one timer (a no-op when it already fired). */
  clear(id: ReturnType<typeof setTimeout> | undefined): void {
    if (id === undefined) return;
    clearTimeout(id);
    this.#ids.delete(id);
  }

  /** Cancel every pending timer. */
  clearAll(): void {
    for (const id of this.#ids) clearTimeout(id);
    this.#ids.clear();
  }

  /** Timers still pending. */
  get size(): number {
    return this.#ids.size;
  }
}
