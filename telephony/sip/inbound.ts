/**
 * Inbound calls (UAS): a new INVITE is answered 100 Trying at once, checked for a usable SDP
 * offer (488 when there is no common codec), rung (180), and handed to the embedder as a
 * {@link SipInvite}. `answer()` binds RTP, sends 200 OK with the SDP answer (re-sent until
 * the ACK) and returns the {@link SipCall}; `reject(code)` sends a final error; a CANCEL
 * before either gets 487 and resolves `cancelled`.
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import { sessionDescription } from "./body.ts";
import { addressOf, buildResponse, newTag } from "./build.ts";
import { SipCall } from "./call.ts";
import { type AgentCore, dialogHeaders } from "./core.ts";
import { dialogAsUas } from "./dialog.ts";
import { getHeader, type SipRequest } from "./message.ts";
import type { RtpSession } from "./rtp_session.ts";
import { buildAnswer, formatSdp, parseSdp, type SdpSession } from "./sdp.ts";
import type { ServerTransaction } from "./transaction.ts";
import { parseUri } from "./uri.ts";

/** Where an inbound INVITE stands. */
export type InviteState = "ringing" | "answering" | "answered" | "rejected" | "cancelled";

/** An inbound call offer waiting for `answer()` or `reject()`. */
export class SipInvite {
  /** SIP Call-ID. */
  readonly callId: string;
  /** From header value (the caller). */
  readonly from: string;
  /** To header value. */
  readonly to: string;
  /** Request-URI. */
  readonly requestUri: string;
  /** User part of the From URI (the caller's number), when present. */
  readonly caller: string | undefined;
  /** User part of the Request-URI (the dialled number), when present. */
  readonly dialled: string | undefined;
  /** The INVITE as received (read-only: identity must come from the dialled route). */
  readonly request: SipRequest;
  /** Resolves when the caller cancels before an answer (then the INVITE got 487). */
  readonly cancelled: Promise<void>;
  readonly #core: AgentCore;
  readonly #txn: ServerTransaction;
  readonly #offer: SdpSession;
  readonly #localTag: string;
  #state: InviteState = "ringing";
  #resolveCancelled!: () => void;
  #answerTimer: ReturnType<typeof setTimeout> | undefined;

  /** Wrap an INVITE already answered 100/180 (see {@link acceptInvite}). */
  constructor(core: AgentCore, txn: ServerTransaction, offer: SdpSession, localTag: string) {
    const req = txn.request;
    this.#core = core;
    this.#txn = txn;
    this.#offer = offer;
    this.#localTag = localTag;
    this.request = req;
    this.callId = getHeader(req, "Call-ID") ?? "";
    this.from = getHeader(req, "From") ?? "";
    this.to = getHeader(req, "To") ?? "";
    this.requestUri = req.uri;
    this.caller = addressOf(req, "From")?.uri.user;
    const ruri = parseUri(req.uri);
    this.dialled = ruri.ok ? ruri.value.user : addressOf(req, "To")?.uri.user;
    this.cancelled = new Promise((resolve) => (this.#resolveCancelled = resolve));
    if (core.answerTimeoutMs > 0) {
      this.#answerTimer = setTimeout(() => {
        this.#answerTimer = undefined;
        core.log.warn("sip invite not answered in time", { callId: this.callId });
        this.reject(480);
      }, core.answerTimeoutMs);
    }
  }

  /** Current state. */
  get state(): InviteState {
    return this.#state;
  }

  /**
   * Answer: bind RTP, send 200 OK with the SDP answer, start media. Throws a FlowcatError when
   * the invite is no longer ringing, or when no RTP port is free (the caller then gets 503).
   */
  answer(): Promise<SipCall> {
    if (this.#state !== "ringing") {
      return Promise.reject(
        new FlowcatError("closed", `cannot answer call ${this.callId}: it is ${this.#state}`),
      );
    }
    this.#state = "answering";
    const core = this.#core;
    let rtp: RtpSession;
    try {
      rtp = core.openRtp();
    } catch (err) {
      this.#final(503);
      this.#state = "rejected";
      return Promise.reject(err);
    }
    const ans = buildAnswer(this.#offer, {
      address: core.advertised,
      port: rtp.port,
      srtp: core.srtp,
    });
    if (!ans.ok) {
      // Cannot happen: the offer was checked on arrival. Fail closed anyway.
      this.#final(488);
      this.#state = "rejected";
      return rtp.close().then(() => {
        throw new FlowcatError("protocol", `SDP: ${ans.reason}`);
      });
    }
    const dialog = dialogAsUas(this.request, this.#localTag);
    const call = new SipCall(core, dialog, rtp, ans.media, {
      direction: "inbound",
      from: this.from,
      to: this.to,
    });
    call.sdpOrigin = {
      sessionId: ans.answer.origin.sessionId,
      version: ans.answer.origin.sessionVersion,
    };
    core.addCall(call);
    this.#txn.onAck = () => call.confirm();
    this.#txn.onTimeout = () => {
      call.confirm();
      void call.hangup("no ACK");
    };
    this.#final(200, formatSdp(ans.answer));
    this.#state = "answered";
    call.startMedia();
    core.log.info("sip call answered", { callId: this.callId, codec: ans.media.codec });
    return Promise.resolve(call);
  }

  /** Decline with `code` (300-699; default 486 Busy Here). A no-op once settled. */
  reject(code = 486, reason?: string): void {
    if (!Number.isInteger(code) || code < 300 || code > 699) {
      throw new FlowcatError("config", `reject code must be 300..699, got ${code}`);
    }
    if (this.#state !== "ringing") return;
    this.#final(code, undefined, reason);
    this.#state = "rejected";
  }

  /** The caller sent CANCEL: answer the INVITE 487 (when still ringing). */
  cancelByCaller(): void {
    if (this.#state !== "ringing") return;
    this.#final(487);
    this.#state = "cancelled";
    this.#core.log.info("sip invite cancelled by caller", { callId: this.callId });
    this.#resolveCancelled();
  }

  #final(status: number, sdp?: string, reason?: string): void {
    if (this.#answerTimer !== undefined) clearTimeout(this.#answerTimer);
    this.#answerTimer = undefined;
    const ok = status >= 200 && status < 300;
    this.#txn.respond(buildResponse(this.request, status, {
      toTag: this.#localTag,
      reason,
      headers: ok
        ? dialogHeaders(this.#core, this.#txn.source.transport)
        : this.#core.commonHeaders(),
      body: sdp,
      contentType: sdp === undefined ? undefined : "application/sdp",
    }));
    this.#core.inviteSettled(this.#txn);
  }
}

/**
 * Handle a new (out-of-dialog) INVITE: 100 Trying, offer checks (488), 180 Ringing. Returns
 * the invite for the embedder, or undefined when it was already answered with an error.
 */
export function acceptInvite(core: AgentCore, txn: ServerTransaction): SipInvite | undefined {
  const req = txn.request;
  const respond = (status: number, reason?: string) =>
    txn.respond(
      buildResponse(req, status, { toTag: newTag(), reason, headers: core.commonHeaders() }),
    );
  txn.respond(buildResponse(req, 100));
  if (core.closing) {
    respond(503);
    return undefined;
  }
  const sdp = sessionDescription(req);
  if (sdp === undefined) {
    // Offerless INVITEs (offer in the ACK) are not supported.
    respond(488, "SDP Offer Required");
    return undefined;
  }
  const offer = parseSdp(sdp);
  if (!offer.ok) {
    core.log.debug("sip invite with bad SDP", { reason: offer.reason });
    respond(488);
    return undefined;
  }
  const check = buildAnswer(offer.value, { address: core.advertised, port: 9, srtp: core.srtp });
  if (!check.ok) {
    core.log.info("sip invite rejected", {
      callId: getHeader(req, "Call-ID"),
      reason: check.reason,
    });
    respond(488);
    return undefined;
  }
  const localTag = newTag();
  if (core.sendRinging) {
    txn.respond(
      buildResponse(req, 180, {
        toTag: localTag,
        headers: dialogHeaders(core, txn.source.transport),
      }),
    );
  }
  return new SipInvite(core, txn, offer.value, localTag);
}
