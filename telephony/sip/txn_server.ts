/**
 * Server transactions over UDP (RFC 3261 §17.2, with the RFC 6026 Accepted state):
 *
 * - INVITE: Proceeding re-sends the last provisional for a retransmitted INVITE. A 2xx moves
 *   to Accepted: the 2xx is re-sent on T1 doubling (capped at T2) until the ACK arrives, and
 *   Timer L (64·T1) ends the transaction, reporting "no ACK" when none came. A 300-699 moves
 *   to Completed: Timer G re-sends it until the ACK (then Confirmed, Timer I), Timer H
 *   (64·T1) gives up and reports "no ACK".
 * - non-INVITE: Trying absorbs retransmissions silently, Proceeding and Completed re-send the
 *   last response; Timer J ends Completed.
 *
 * Responses go back to the source address of the request (RFC 3581 symmetric response).
 * @module
 */

import { getHeader, type SipRequest, type SipResponse } from "./message.ts";
import { TimerBag, type TxnContext } from "./txn_base.ts";
import { nextInterval } from "./txn_timers.ts";
import type { UdpAddress } from "./udp.ts";

/** States of a server transaction. */
export type ServerState =
  | "trying"
  | "proceeding"
  | "accepted"
  | "completed"
  | "confirmed"
  | "terminated";

/** One server transaction: a request we received and our responses to it. */
export class ServerTransaction {
  /** The request that created the transaction. */
  readonly request: SipRequest;
  /** Where it came from (responses go there). */
  readonly source: UdpAddress;
  /** Matching key (`branch|sent-by|method`). */
  readonly key: string;
  /** True for INVITE. */
  readonly isInvite: boolean;
  /** Current state. */
  state: ServerState;
  /** The last response sent. */
  lastResponse: SipResponse | undefined;
  /** True once the ACK for our final response arrived. */
  acked = false;
  /** The ACK for our final response arrived (for a 2xx: the dialog is confirmed). */
  onAck?: () => void;
  /** No ACK came for our final response before Timer H / L. */
  onTimeout?: (reason: string) => void;
  readonly #ctx: TxnContext;
  readonly #timers = new TimerBag();
  #retransmit: ReturnType<typeof setTimeout> | undefined;

  /** Create for `request` received from `source`. */
  constructor(ctx: TxnContext, request: SipRequest, source: UdpAddress, key: string) {
    this.#ctx = ctx;
    this.request = request;
    this.source = source;
    this.key = key;
    this.isInvite = request.method === "INVITE";
    this.state = this.isInvite ? "proceeding" : "trying";
  }

  /** Status of the final response sent, if any. */
  get finalStatus(): number | undefined {
    const s = this.lastResponse?.status;
    return s !== undefined && s >= 200 ? s : undefined;
  }

  /** Send a response. Provisionals after a final, and a second final, are ignored. */
  respond(res: SipResponse): void {
    if (this.state !== "trying" && this.state !== "proceeding") {
      this.#ctx.log.debug("sip response after final ignored", { status: res.status });
      return;
    }
    this.lastResponse = res;
    this.#ctx.send(res, this.source);
    if (res.status < 200) {
      this.state = "proceeding";
      return;
    }
    const t = this.#ctx.timers;
    if (!this.isInvite) {
      this.state = "completed";
      this.#timers.set(() => this.terminate(), t.J);
      return;
    }
    this.state = res.status < 300 ? "accepted" : "completed";
    this.#armRetransmit(t.T1);
    // Timer L (2xx) or H (non-2xx): both are 64*T1.
    this.#timers.set(() => {
      if (!this.acked) {
        this.#ctx.counters.timeouts++;
        this.onTimeout?.(res.status < 300 ? "no ACK for 2xx" : "no ACK for final response");
      }
      this.terminate();
    }, t.H);
  }

  #armRetransmit(interval: number): void {
    this.#retransmit = this.#timers.set(() => {
      if (this.acked || this.lastResponse === undefined) return;
      if (this.state !== "accepted" && this.state !== "completed") return;
      // Timer G is for unreliable transports; a 2xx is re-sent end to end whatever the hop.
      if (this.state === "completed" && this.source.transport !== undefined) return;
      this.#ctx.counters.retransmitted++;
      this.#ctx.send(this.lastResponse, this.source);
      this.#armRetransmit(nextInterval("invite-server", interval, this.#ctx.timers));
    }, interval);
  }

  /** A retransmission of our request arrived: absorb it and re-send the last response. */
  receiveRetransmit(_req: SipRequest): void {
    this.#ctx.counters.absorbed++;
    if (this.state === "trying" || this.lastResponse === undefined) return;
    if (this.state === "terminated" || this.state === "confirmed" || this.acked) return;
    this.#ctx.send(this.lastResponse, this.source);
  }

  /** The ACK for our final response (same branch for non-2xx; matched by dialog for 2xx). */
  receiveAck(): void {
    if (!this.isInvite || this.acked) {
      if (this.acked) this.#ctx.counters.absorbed++;
      return;
    }
    if (this.state !== "accepted" && this.state !== "completed") return;
    this.acked = true;
    this.#timers.clear(this.#retransmit);
    if (this.state === "completed") {
      this.state = "confirmed";
      this.#timers.clearAll();
      this.#timers.set(() => this.terminate(), this.#ctx.timers.I);
    }
    this.onAck?.();
  }

  /** Stop every timer and leave the layer. */
  terminate(): void {
    if (this.state === "terminated") return;
    this.state = "terminated";
    this.#timers.clearAll();
    this.#ctx.terminated(this);
  }

  /** `Call-ID|CSeq number`: how an ACK for a 2xx (a new branch) finds this transaction. */
  get ackKey(): string {
    const seq = (getHeader(this.request, "CSeq") ?? "").trim().split(/\s+/)[0];
    return `${getHeader(this.request, "Call-ID") ?? ""}|${seq}`;
  }
}
