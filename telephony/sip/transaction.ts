/**
 * The SIP transaction layer (RFC 3261 §17) over one UDP endpoint: matches responses to client
 * transactions (top Via branch + CSeq method), matches requests to server transactions
 * (§17.2.3: branch + sent-by + method, or for old-style branches without the `z9hG4bK` cookie
 * the Request-URI, tags, Call-ID, CSeq and top Via; ACK counting as INVITE) so retransmissions
 * are absorbed, routes the ACK of a 2xx (a new branch) to its INVITE by Call-ID and CSeq, spots
 * merged requests (§8.2.2.2), and hands new requests to the transaction user. Branch and tag
 * values compare case-insensitively (they are tokens). Timers come from {@link timerValues}.
 *
 * @example
 * ```ts
 * import { buildResponse, type SipRequest, TransactionLayer } from "@flowcat/flowcat/sip";
 * declare const register: SipRequest;
 * declare const send: ConstructorParameters<typeof TransactionLayer>[0];
 * const layer = new TransactionLayer(send, (req, txn) => {
 *   if (req.method === "OPTIONS") txn?.respond(buildResponse(req, 200));
 * }, { timers: { T1: 50 } });
 * const txn = layer.request(register, { hostname: "192.0.2.1", port: 5060 });
 * const res = await txn.response; // final response, or a local 408 after Timer F
 * ```
 * @module
 */

import { type Logger, silentLogger } from "../../core/log.ts";
import { BRANCH_COOKIE } from "./address.ts";
import { cseqOf, tagOf, topVia } from "./build.ts";
import { getHeader, type SipMessage, type SipRequest, type SipResponse } from "./message.ts";
import { sameToken, tokenKey } from "./params.ts";
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
  /** Server transactions of requests without a To tag by From tag, Call-ID and CSeq (482). */
  readonly #byMergeKey = new Map<string, ServerTransaction>();
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
          const merge = mergeKey(st.request);
          if (merge !== undefined && this.#byMergeKey.get(merge) === st) {
            this.#byMergeKey.delete(merge);
          }
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
    if (msg.method === "ACK") {
      this.#receiveAck(msg, from);
      return;
    }
    const key = serverKey(msg);
    const existing = this.#servers.get(key);
    if (existing !== undefined) {
      existing.receiveRetransmit(msg);
      return;
    }
    const txn = new ServerTransaction(this.#ctx, msg, from, key);
    this.#servers.set(key, txn);
    if (txn.isInvite) this.#byAckKey.set(txn.ackKey, txn);
    const merge = mergeKey(msg);
    if (merge !== undefined && !this.#byMergeKey.has(merge)) this.#byMergeKey.set(merge, txn);
    this.#onRequest(msg, txn, from);
  }

  /**
   * An ACK: for a non-2xx it belongs to the INVITE transaction (same branch, or for an RFC 2543
   * peer the same INVITE fields with the To tag of our response, §17.2.3); for a 2xx it is
   * routed by Call-ID and CSeq; anything else goes to the transaction user without one.
   */
  #receiveAck(ack: SipRequest, from: UdpAddress): void {
    const toTag = tagOf(ack, "To");
    const candidates = hasCookie(ack)
      ? [serverKey(ack, "INVITE")]
      : [serverKey(ack, "INVITE", toTag ?? ""), serverKey(ack, "INVITE", "")];
    for (const key of candidates) {
      const txn = this.#servers.get(key);
      if (!txn?.isInvite) continue;
      const answeredTag = txn.lastResponse === undefined
        ? undefined
        : tagOf(txn.lastResponse, "To");
      if (!hasCookie(ack) && !sameToken(answeredTag, toTag)) continue;
      txn.receiveAck();
      return;
    }
    const seq = cseqOf(ack)?.seq;
    const accepted = this.#byAckKey.get(`${callIdOf(ack)}|${seq}`);
    if (accepted !== undefined && accepted.state === "accepted") {
      accepted.receiveAck();
      return;
    }
    this.#onRequest(ack, undefined, from);
  }

  /**
   * True when `txn`'s request is a merged request (RFC 3261 §8.2.2.2): no To tag, and its From
   * tag, Call-ID and CSeq match another live transaction that it does not match (it reached
   * us twice through different paths, e.g. a forking proxy). The UAS answers it 482.
   */
  isMerged(txn: ServerTransaction): boolean {
    const key = mergeKey(txn.request);
    if (key === undefined) return false;
    const first = this.#byMergeKey.get(key);
    return first !== undefined && first !== txn;
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

  /** The INVITE server transaction a CANCEL targets (§9.2: matched as its INVITE), if alive. */
  matchingInvite(cancel: SipRequest): ServerTransaction | undefined {
    const txn = this.#servers.get(serverKey(cancel, "INVITE"));
    return txn?.isInvite ? txn : undefined;
  }

  /** A connection to `to` could not be opened: its pending client transactions get a 503. */
  unreachable(to: UdpAddress): void {
    for (const t of [...this.#clients.values()]) {
      const d = t.destination;
      if (d.hostname === to.hostname && d.port === to.port && d.transport === to.transport) {
        t.transportError();
      }
    }
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
    this.#byMergeKey.clear();
  }
}

function callIdOf(msg: SipMessage): string {
  return getHeader(msg, "Call-ID") ?? "";
}

/** True when the top Via branch carries the RFC 3261 magic cookie (a real transaction id). */
function hasCookie(msg: SipMessage): boolean {
  return topVia(msg)?.branch?.startsWith(BRANCH_COOKIE) === true;
}

/** `branch|CSeq method` of a request we send or a response we receive. */
function clientKey(msg: SipMessage): string | undefined {
  const branch = topVia(msg)?.branch;
  const method = cseqOf(msg)?.method;
  if (branch === undefined || method === undefined) return undefined;
  return `${tokenKey(branch)}|${method}`;
}

/**
 * The key a received request is matched by (RFC 3261 §17.2.3), ACK and CANCEL mapped to
 * `method` INVITE by the callers. With the magic cookie: branch, sent-by and method. Without it
 * (RFC 2543 peers): Request-URI, To tag, From tag, Call-ID, CSeq and the top Via, so that two
 * requests reusing an old-style branch stay two transactions.
 */
function serverKey(
  req: SipRequest,
  method = req.method,
  toTag: string = tagOf(req, "To") ?? "",
): string {
  const via = topVia(req);
  if (via?.branch !== undefined && via.branch.startsWith(BRANCH_COOKIE)) {
    const sentBy = `${via.host.toLowerCase()}:${via.port ?? 5060}`;
    return `3261|${tokenKey(via.branch)}|${sentBy}|${method}`;
  }
  const topViaText = (getHeader(req, "Via") ?? "").replace(/\s+/g, " ");
  return [
    "2543",
    req.uri,
    tokenKey(toTag),
    tokenKey(tagOf(req, "From")),
    callIdOf(req),
    cseqOf(req)?.seq,
    method,
    topViaText,
  ].join("|");
}

/** `Call-ID|From tag|CSeq` of a request without a To tag (the merged-request check), else undefined. */
function mergeKey(req: SipRequest): string | undefined {
  if (tagOf(req, "To") !== undefined) return undefined;
  const cseq = cseqOf(req);
  const fromTag = tagOf(req, "From");
  if (cseq === undefined || fromTag === undefined) return undefined;
  return `${callIdOf(req)}|${tokenKey(fromTag)}|${cseq.seq} ${cseq.method}`;
}
