/**
 * The SIP transaction layer (RFC 3261 §17) over one UDP endpoint: matches responses to client
 * transactions (top Via branch + CSeq method), matches requests to server transactions (branch
 * + sent-by + method, ACK counting as INVITE) so retransmissions are absorbed, routes the ACK
 * of a 2xx (a new branch) to its INVITE by Call-ID and CSeq, and hands new requests to the
 * transaction user. Timers come from {@link timerValues}; tests shorten T1.
 *
 * @example
 * ```ts
 * const layer = new TransactionLayer(send, (req, txn) => {
 *   if (req.method === "OPTIONS") txn?.respond(buildResponse(req, 200));
 * }, { timers: { T1: 50 } });
 * const txn = layer.request(register, { hostname: "192.0.2.1", port: 5060 });
 * const res = await txn.response; // final response, or a local 408 after Timer F
 * ```
 * @module
 */

import { type Logger, silentLogger } from "../../core/log.ts";
import { cseqOf, topVia } from "./build.ts";
import type { SipMessage, SipRequest, SipResponse } from "./message.ts";
import { newCounters, type TransactionCounters, type TxnContext } from "./txn_base.ts";
import { type ClientCallbacks, ClientTransaction } from "./txn_client.ts";
import { ServerTransaction } from "./txn_server.ts";
import { type BaseTimers, DEFAULT_TIMERS, type TimerValues, timerValues } from "./txn_timers.ts";
import type { UdpAddress } from "./udp.ts";

export { type ClientCallbacks, type ClientState, ClientTransaction } from "./txn_client.ts";
export { type ServerState, ServerTransaction } from "./txn_server.ts";
export type { TransactionCounters } from "./txn_base.ts";

/** Puts a message on the wire. */
export type SendMessage = (msg: SipMessage, to: UdpAddress) => void;

/**
 * Receives every new request. `txn` is undefined only for an ACK that matched nothing (a stray
 * ACK, or the ACK of a 2xx whose transaction is gone).
 */
export type RequestHandler = (
  req: SipRequest,
  txn: ServerTransaction | undefined,
  from: UdpAddress,
) => void;

/** Options of a {@link TransactionLayer}. */
export interface TransactionLayerOptions {
  /** Base timers (T1, T2, T4) in ms; unset ones keep the RFC defaults. */
  timers?: Partial<BaseTimers>;
  /** Where transaction events go. */
  logger?: Logger;
}

/** Client and server transactions of one SIP endpoint. */
export class TransactionLayer {
  /** Running counters. */
  readonly counters: TransactionCounters = newCounters();
  readonly #clients = new Map<string, ClientTransaction>();
  readonly #servers = new Map<string, ServerTransaction>();
  /** Accepted INVITE server transactions by `Call-ID|CSeq`, for the ACK of a 2xx. */
  readonly #byAckKey = new Map<string, ServerTransaction>();
  readonly #ctx: TxnContext;
  readonly #onRequest: RequestHandler;
  #closed = false;

  /** A layer sending with `send` and handing new requests to `onRequest`. */
  constructor(send: SendMessage, onRequest: RequestHandler, opts: TransactionLayerOptions = {}) {
    const base: BaseTimers = { ...DEFAULT_TIMERS, ...opts.timers };
    this.#onRequest = onRequest;
    this.#ctx = {
      timers: timerValues(base),
      send: (msg, to) => {
        if (!this.#closed) send(msg, to);
      },
      counters: this.counters,
      log: opts.logger ?? silentLogger,
      terminated: (txn) => {
        if (this.#clients.get(txn.key) === txn) this.#clients.delete(txn.key);
        if (this.#servers.get(txn.key) === txn) {
          this.#servers.delete(txn.key);
          const st = txn as ServerTransaction;
          if (this.#byAckKey.get(st.ackKey) === st) this.#byAckKey.delete(st.ackKey);
        }
      },
    };
  }

  /** The timer values in use (ms). */
  get timers(): TimerValues {
    return this.#ctx.timers;
  }

  /** Live client and server transactions. */
  get size(): number {
    return this.#clients.size + this.#servers.size;
  }

  /**
   * Start a client transaction for `req` (its top Via must carry a fresh branch) towards `to`.
   * Await `.response` for the final response. ACK is not a transaction: use {@link sendStateless}.
   */
  request(req: SipRequest, to: UdpAddress, callbacks: ClientCallbacks = {}): ClientTransaction {
    const key = clientKey(req);
    const txn = new ClientTransaction(this.#ctx, req, to, key ?? "", callbacks);
    if (this.#closed || key === undefined) {
      txn.terminate();
      return txn;
    }
    this.#clients.set(key, txn);
    txn.start();
    return txn;
  }

  /** Send a message outside any transaction (the ACK of a 2xx). */
  sendStateless(msg: SipMessage, to: UdpAddress): void {
    this.#ctx.send(msg, to);
  }

  /** Feed a parsed message received from `from`. */
  receive(msg: SipMessage, from: UdpAddress): void {
    if (this.#closed) return;
    if (msg.kind === "response") {
      this.#receiveResponse(msg);
      return;
    }
    const key = serverKey(msg);
    if (msg.method === "ACK") {
      const byBranch = this.#servers.get(key);
      if (byBranch?.isInvite) {
        byBranch.receiveAck();
        return;
      }
      const seq = cseqOf(msg)?.seq;
      const accepted = this.#byAckKey.get(`${callIdOf(msg)}|${seq}`);
      if (accepted !== undefined) {
        accepted.receiveAck();
        return;
      }
      this.#onRequest(msg, undefined, from);
      return;
    }
    const existing = this.#servers.get(key);
    if (existing !== undefined) {
      existing.receiveRetransmit(msg);
      return;
    }
    const txn = new ServerTransaction(this.#ctx, msg, from, key);
    this.#servers.set(key, txn);
    if (txn.isInvite) this.#byAckKey.set(txn.ackKey, txn);
    this.#onRequest(msg, txn, from);
  }

  #receiveResponse(res: SipResponse): void {
    const key = clientKey(res);
    const txn = key === undefined ? undefined : this.#clients.get(key);
    if (txn === undefined) {
      this.counters.strayResponses++;
      this.#ctx.log.debug("sip response matches no transaction", { status: res.status });
      return;
    }
    txn.receive(res);
  }

  /** The INVITE server transaction a CANCEL targets (same branch and sent-by), if alive. */
  matchingInvite(cancel: SipRequest): ServerTransaction | undefined {
    const txn = this.#servers.get(serverKey(cancel, "INVITE"));
    return txn?.isInvite ? txn : undefined;
  }

  /** Terminate every transaction (pending client responses resolve as a local 408). */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const t of [...this.#clients.values()]) t.terminate();
    for (const t of [...this.#servers.values()]) t.terminate();
    this.#clients.clear();
    this.#servers.clear();
    this.#byAckKey.clear();
  }
}

function callIdOf(msg: SipMessage): string {
  return msg.headers.find((h) => h.name === "Call-ID")?.value ?? "";
}

/** `branch|CSeq method` of a request we send or a response we receive. */
function clientKey(msg: SipMessage): string | undefined {
  const branch = topVia(msg)?.branch;
  const method = cseqOf(msg)?.method;
  if (branch === undefined || method === undefined) return undefined;
  return `${branch}|${method}`;
}

/**
 * `branch|sent-by|method` of a received request (RFC 3261 §17.2.3), ACK mapped to INVITE. A
 * request without a branch (RFC 2543 peers) is keyed by Call-ID, From tag and CSeq instead.
 */
function serverKey(req: SipRequest, method = req.method === "ACK" ? "INVITE" : req.method): string {
  const via = topVia(req);
  const sentBy = `${via?.host ?? ""}:${via?.port ?? 5060}`;
  const branch = via?.branch ??
    `${callIdOf(req)}|${cseqOf(req)?.seq}|${req.headers.find((h) => h.name === "From")?.value}`;
  return `${branch}|${sentBy}|${method}`;
}
