/**
 * An established SIP call (a confirmed or early-confirmed dialog with RTP media): its
 * {@link SipMediaTransport}, an `ended` promise that resolves with the reason when the dialog
 * ends (BYE from either side, a missing ACK, the agent closing), `hangup()` which sends BYE,
 * and `transfer()`, a cold transfer by REFER (telephony/sip/refer.ts). The pipeline's transfers
 * (the transport's) add the agent's own second leg: a bridge when REFER fails, and warm
 * transfers (telephony/sip/transfer_flow.ts).
 * @module
 */

import type { KeypadEntry, TransferOutcome } from "../../core/frames.ts";
import { buildInDialogRequest, type Dialog, dialogKey, dialogNextHop } from "./dialog.ts";
import type { SipRequest } from "./message.ts";
import { ReferProgress, referRefusal, referTargetProblem, referToUri } from "./refer.ts";
import type { RtpSession } from "./rtp_session.ts";
import type { RtpHandlers, RtpStats } from "./rtp_session_types.ts";
import { coldTransfer, warmTransfer } from "./transfer_flow.ts";
import type {
  CallDirection,
  CallEndReason,
  CallHost,
  CallInfo,
  SipLeg,
  TransferOptions,
} from "./call_leg.ts";

export type {
  CallDirection,
  CallEndReason,
  CallHost,
  CallInfo,
  DialOptions,
  SipLeg,
  SipTransferPolicy,
  TransferOptions,
} from "./call_leg.ts";
import type { NegotiatedMedia } from "./sdp.ts";
import { SipMediaTransport } from "./sip_transport.ts";

/** One SIP call with media. */
export class SipCall implements SipLeg {
  /** SIP Call-ID. */
  readonly callId: string;
  /** inbound (we answered) or outbound (we placed it). */
  readonly direction: CallDirection;
  /** From of the INVITE. */
  readonly from: string;
  /** To of the INVITE. */
  readonly to: string;
  /** The media both sides agreed on. */
  readonly media: NegotiatedMedia;
  /** The call's media leg for the pipeline. Closing it hangs up. */
  readonly transport: SipMediaTransport;
  /** Resolves with the reason once the call is over (never rejects). */
  readonly ended: Promise<CallEndReason>;
  /** Dialog key (`Call-ID|local tag|remote tag`). */
  readonly key: string;
  /** Our SDP o= id and version, bumped when a re-INVITE is answered. */
  sdpOrigin: { sessionId: string; version: string } | undefined;
  readonly #host: CallHost;
  readonly #dialog: Dialog;
  readonly #rtp: RtpSession;
  #resolveEnded!: (reason: CallEndReason) => void;
  #endReason: CallEndReason | undefined;
  #bye: Promise<void> | undefined;
  /** Resolves on the ACK for our 2xx (or its timeout); outbound calls start resolved. */
  #acked: Promise<void>;
  #ack!: () => void;
  /** The last transfer asked for: NOTIFYs report its progress. */
  #refer: ReferProgress | undefined;

  /** A call over `dialog` with media on `rtp` (not started: see {@link startMedia}). */
  constructor(
    host: CallHost,
    dialog: Dialog,
    rtp: RtpSession,
    media: NegotiatedMedia,
    info: CallInfo,
  ) {
    this.#host = host;
    this.#dialog = dialog;
    this.#rtp = rtp;
    this.callId = dialog.callId;
    this.direction = info.direction;
    this.from = info.from;
    this.to = info.to;
    this.media = media;
    this.key = dialogKey(dialog.callId, dialog.localTag, dialog.remoteTag);
    this.ended = new Promise((resolve) => (this.#resolveEnded = resolve));
    this.#acked = new Promise((resolve) => (this.#ack = resolve));
    if (info.direction === "outbound") this.#ack();
    this.transport = new SipMediaTransport(dialog.callId, rtp, () => this.hangup(), {
      transfer: (target) => coldTransfer(this, host, target),
      warmTransfer: (target, opts) => warmTransfer(this, host, target, opts),
    });
  }

  /** Start RTP: inbound audio and keys flow into {@link transport}. */
  startMedia(): void {
    this.#rtp.start(this.media, this.agentMedia());
  }

  /** Handlers that feed inbound audio and keys to {@link transport} (the agent's pipeline). */
  agentMedia(): RtpHandlers {
    return {
      onAudio: (pcm) => this.transport.pushAudio(pcm),
      onDtmf: (key) => this.transport.pushDtmf(key),
    };
  }

  /** The dialog state (tags, target, route set, CSeq). */
  get dialog(): Readonly<Dialog> {
    return this.#dialog;
  }

  /** The reason once ended, else undefined. */
  get endReason(): CallEndReason | undefined {
    return this.#endReason;
  }

  /** RTP counters. */
  get stats(): RtpStats {
    return this.#rtp.stats;
  }

  /** The local RTP session (port, remote address). */
  get rtp(): RtpSession {
    return this.#rtp;
  }

  /**
   * Check and record the CSeq of a request the peer sent in this dialog: false when it is
   * lower than the last one (RFC 3261 §12.2.2: answer 500).
   */
  acceptRemoteSeq(seq: number): boolean {
    if (this.#dialog.remoteSeq >= 0 && seq < this.#dialog.remoteSeq) return false;
    this.#dialog.remoteSeq = seq;
    return true;
  }

  /** The ACK for our 2xx arrived, or will not (Timer L): a BYE may now be sent. */
  confirm(): void {
    this.#ack();
  }

  /** Send key presses to the peer as RFC 4733 events. */
  sendDtmf(keys: readonly KeypadEntry[]): Promise<void> {
    return this.transport.sendDtmf(keys);
  }

  /**
   * Cold transfer: send REFER with `Refer-To: target` (a SIP or tel URI, or a number at the
   * peer's host) and follow the NOTIFYs until the target answers or fails. Resolves with the
   * outcome (never rejects) and does not hang up: on success the caller of this sends BYE.
   */
  async transfer(target: string, opts: TransferOptions = {}): Promise<TransferOutcome> {
    if (this.#endReason !== undefined) return { ok: false, reason: "the call has ended" };
    if (this.#refer !== undefined && !this.#refer.done) {
      return { ok: false, reason: "a transfer is already in progress" };
    }
    const problem = referTargetProblem(target);
    if (problem !== undefined) return { ok: false, reason: `transfer needs ${problem}` };
    const host = this.#host;
    const to = dialogNextHop(this.#dialog);
    if (to === undefined) return { ok: false, reason: "the peer's address is not routable" };
    const progress = new ReferProgress(opts.waitMs);
    this.#refer = progress;
    const referTo = referToUri(target, this.#dialog.remoteTarget);
    const refer = buildInDialogRequest(this.#dialog, "REFER", host.via(), {
      contact: `<${host.contactUri()}>`,
      headers: [
        { name: "Refer-To", value: `<${referTo}>` },
        { name: "Referred-By", value: this.#dialog.localAddress.replace(/;\s*tag=[^;]*/i, "") },
        ...host.commonHeaders(),
      ],
    });
    host.log.info("sip REFER sent", { callId: this.callId, referTo });
    const txn = host.layer.request(refer, to);
    txn.response.then((res) => {
      if (txn.timedOut) return progress.finish({ ok: false, reason: "the peer did not answer" });
      const refusal = referRefusal(res);
      if (refusal === undefined) progress.accept();
      else progress.finish(refusal);
    });
    void this.ended.then(() => progress.callEnded());
    const outcome = await progress.outcome;
    host.log.info("sip transfer finished", {
      callId: this.callId,
      ok: outcome.ok,
      status: outcome.status ?? null,
      ...(outcome.ok ? {} : { reason: outcome.reason }),
    });
    return outcome;
  }

  /** A NOTIFY in this dialog (a REFER's progress): the status to answer it with. */
  onNotify(req: SipRequest): number {
    return this.#refer === undefined ? 481 : this.#refer.onNotify(req);
  }

  /** The peer hung up (its BYE was answered 200), or the dialog died under us. */
  endFromRemote(reason: CallEndReason = "remote hangup"): void {
    this.#finish(reason);
  }

  /**
   * Hang up: end the call at once (media stops, `ended` resolves), send BYE and wait for its
   * response up to `byeWaitMs`. Idempotent; a no-op BYE-wise when the peer already hung up.
   */
  hangup(reason: CallEndReason = "local hangup"): Promise<void> {
    if (this.#bye !== undefined) return this.#bye;
    if (this.#endReason !== undefined) return (this.#bye = this.#rtp.close());
    this.#finish(reason);
    this.#bye = this.#sendBye();
    return this.#bye;
  }

  async #sendBye(): Promise<void> {
    const host = this.#host;
    // RFC 3261 §15: the callee waits for the ACK before sending BYE (here at most byeWaitMs).
    let ackTimer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      this.#acked,
      new Promise<void>((r) => (ackTimer = setTimeout(r, host.byeWaitMs))),
    ]);
    clearTimeout(ackTimer);
    const to = dialogNextHop(this.#dialog);
    if (to === undefined) {
      host.log.warn("sip BYE not sent: peer target is not routable", { callId: this.callId });
      await this.#rtp.close();
      return;
    }
    const bye = buildInDialogRequest(this.#dialog, "BYE", host.via(), {
      headers: host.commonHeaders(),
    });
    const txn = host.layer.request(bye, to);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const res = await Promise.race([
      txn.response,
      new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), host.byeWaitMs))),
    ]);
    clearTimeout(timer);
    host.log.debug("sip BYE answered", { callId: this.callId, status: res?.status ?? "no answer" });
    await this.#rtp.close();
  }

  #finish(reason: CallEndReason): void {
    if (this.#endReason !== undefined) return;
    this.#endReason = reason;
    this.transport.stop();
    this.#host.forgetCall(this.key);
    this.#host.log.info("sip call ended", { callId: this.callId, reason, ...this.#rtp.stats });
    // Media stops at once; hangup() awaits the same close after its BYE.
    void this.#rtp.close();
    this.#resolveEnded(reason);
  }
}
