/**
 * Client transactions over UDP (RFC 3261 §17.1, with the RFC 6026 Accepted state for INVITE):
 *
 * - INVITE: Calling retransmits on Timer A (T1 doubling) until any response; Timer B (64·T1)
 *   times it out. A provisional moves to Proceeding (no more retransmits). A 2xx moves to
 *   Accepted for 64·T1, where 2xx retransmissions go to the TU so it re-sends its ACK. A
 *   300-699 moves to Completed: the transaction sends the ACK itself (same branch) and re-sends
 *   it for every retransmitted final response until Timer D.
 * - non-INVITE: Trying retransmits on Timer E (T1 doubling, capped at T2), every T2 once a
 *   provisional arrived; Timer F (64·T1) times it out; Completed absorbs retransmitted finals
 *   until Timer K.
 *
 * A timeout resolves {@link ClientTransaction.response} with a locally built 408 and sets
 * {@link ClientTransaction.timedOut} (RFC 3261 §8.1.3.1 treats a timeout as a 408).
 * @module
 */

import { buildRequest, buildResponse } from "./build.ts";
import { getHeader, getHeaders, type SipRequest, type SipResponse } from "./message.ts";
import { TimerBag, type TxnContext } from "./txn_base.ts";
import { nextInterval } from "./txn_timers.ts";
import type { UdpAddress } from "./udp.ts";

/** States of a client transaction. */
export type ClientState =
  | "calling"
  | "trying"
  | "proceeding"
  | "accepted"
  | "completed"
  | "terminated";

/** Hooks a transaction user can set on a client transaction. */
export interface ClientCallbacks {
  /** A 1xx arrived. */
  onProvisional?(res: SipResponse): void;
  /** A 2xx arrived again in Accepted (INVITE only): the TU re-sends its ACK. */
  on2xxRetransmit?(res: SipResponse): void;
}

/** One client transaction: a request we sent and its retransmissions. */
export class ClientTransaction {
  /** The request as sent. */
  readonly request: SipRequest;
  /** Where it was sent. */
  readonly destination: UdpAddress;
  /** Matching key (`branch|method`). */
  readonly key: string;
  /** True for INVITE. */
  readonly isInvite: boolean;
  /** The final response (or a local 408 on timeout). */
  readonly response: Promise<SipResponse>;
  /** Current state. */
  state: ClientState;
  /** True when the final response is a local 408 because nothing answered. */
  timedOut = false;
  /** True once a provisional response arrived (CANCEL may be sent only then). */
  provisionalSeen = false;
  readonly #ctx: TxnContext;
  readonly #cb: ClientCallbacks;
  readonly #timers = new TimerBag();
  #retransmit: ReturnType<typeof setTimeout> | undefined;
  #interval: number;
  #resolve!: (res: SipResponse) => void;
  #ack: SipRequest | undefined;

  /** Create (not yet sent: call {@link start}). */
  constructor(
    ctx: TxnContext,
    request: SipRequest,
    destination: UdpAddress,
    key: string,
    callbacks: ClientCallbacks = {},
  ) {
    this.#ctx = ctx;
    this.request = request;
    this.destination = destination;
    this.key = key;
    this.isInvite = request.method === "INVITE";
    this.state = this.isInvite ? "calling" : "trying";
    this.#cb = callbacks;
    this.#interval = ctx.timers.T1;
    this.response = new Promise((resolve) => (this.#resolve = resolve));
  }

  /** Send the request and arm Timer A/B (INVITE) or E/F (non-INVITE). */
  start(): void {
    this.#ctx.send(this.request, this.destination);
    // Timers A and E are for unreliable transports (RFC 3261 §17.1.1.2, §17.1.2.2).
    if (this.destination.transport === undefined) this.#armRetransmit();
    const timeout = this.isInvite ? this.#ctx.timers.B : this.#ctx.timers.F;
    this.#timers.set(() => this.#timeout(), timeout);
  }

  #armRetransmit(): void {
    this.#retransmit = this.#timers.set(() => {
      if (this.state !== "calling" && this.state !== "trying" && this.state !== "proceeding") {
        return;
      }
      this.#ctx.counters.retransmitted++;
      this.#ctx.send(this.request, this.destination);
      const kind = this.isInvite
        ? "invite-client"
        : this.state === "proceeding"
        ? "non-invite-proceeding"
        : "non-invite-client";
      this.#interval = nextInterval(kind, this.#interval, this.#ctx.timers);
      this.#armRetransmit();
    }, this.#interval);
  }

  #timeout(): void {
    if (this.state === "completed" || this.state === "accepted" || this.state === "terminated") {
      return;
    }
    // An INVITE in Proceeding waits for its final response as long as the TU wants.
    if (this.isInvite && this.state === "proceeding") return;
    this.#ctx.counters.timeouts++;
    this.#ctx.log.debug("sip transaction timed out", {
      method: this.request.method,
      callId: getHeader(this.request, "Call-ID"),
    });
    this.timedOut = true;
    this.#resolve(buildResponse(this.request, 408, { reason: "Request Timeout (no response)" }));
    this.terminate();
  }

  /** The transport could not reach the destination: a local 503 (RFC 3261 §8.1.3.1). */
  transportError(): void {
    if (this.state !== "calling" && this.state !== "trying") return;
    this.#resolve(
      buildResponse(this.request, 503, { reason: "Service Unavailable (transport error)" }),
    );
    this.terminate();
  }

  /** Feed a response whose branch and CSeq method matched this transaction. */
  receive(res: SipResponse): void {
    if (this.state === "terminated") return;
    if (res.status < 200) {
      if (this.state === "calling" || this.state === "trying" || this.state === "proceeding") {
        this.provisionalSeen = true;
        if (this.state !== "proceeding") {
          this.state = "proceeding";
          if (this.isInvite) this.#timers.clear(this.#retransmit);
          else {
            // Non-INVITE keeps retransmitting, now every T2.
            this.#timers.clear(this.#retransmit);
            this.#interval = this.#ctx.timers.T2;
            this.#armRetransmit();
          }
        }
        this.#cb.onProvisional?.(res);
      }
      return;
    }
    if (this.state === "accepted") {
      if (res.status < 300) this.#cb.on2xxRetransmit?.(res);
      return;
    }
    if (this.state === "completed") {
      // A retransmitted final: our ACK was lost (INVITE) or it is just a copy (non-INVITE).
      if (this.#ack !== undefined) this.#ctx.send(this.#ack, this.destination);
      return;
    }
    this.#timers.clearAll();
    if (this.isInvite && res.status < 300) {
      this.state = "accepted";
      this.#timers.set(() => this.terminate(), 64 * this.#ctx.timers.T1);
    } else if (this.isInvite) {
      this.state = "completed";
      this.#ack = buildNon2xxAck(this.request, res);
      this.#ctx.counters.acksForNon2xx++;
      this.#ctx.send(this.#ack, this.destination);
      this.#timers.set(() => this.terminate(), this.#ctx.timers.D);
    } else {
      this.state = "completed";
      this.#timers.set(() => this.terminate(), this.#ctx.timers.K);
    }
    this.#resolve(res);
  }

  /** Stop every timer and leave the layer; resolves a still-pending response with 408. */
  terminate(): void {
    if (this.state === "terminated") return;
    this.state = "terminated";
    this.#timers.clearAll();
    this.#resolve(
      buildResponse(this.request, 408, { reason: "Request Timeout (transaction ended)" }),
    );
    this.#ctx.terminated(this);
  }
}

/**
 * The ACK a client INVITE transaction sends for a 300-699 response (RFC 3261 §17.1.1.3): same
 * Request-URI, Call-ID, From, CSeq number and top Via (branch) as the INVITE, the response's To
 * (with its tag), and the INVITE's Route headers.
 */
export function buildNon2xxAck(invite: SipRequest, res: SipResponse): SipRequest {
  const cseq = (getHeader(invite, "CSeq") ?? "1 INVITE").trim().split(/\s+/)[0];
  const headers = [
    { name: "Via", value: getHeader(invite, "Via") ?? "" },
    { name: "Max-Forwards", value: "70" },
    { name: "From", value: getHeader(invite, "From") ?? "" },
    { name: "To", value: getHeader(res, "To") ?? getHeader(invite, "To") ?? "" },
    { name: "Call-ID", value: getHeader(invite, "Call-ID") ?? "" },
    { name: "CSeq", value: `${cseq} ACK` },
  ];
  for (const r of getHeaders(invite, "Route")) headers.push({ name: "Route", value: r });
  return buildRequest("ACK", invite.uri, headers);
}
