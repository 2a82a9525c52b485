/**
 * Requests inside an established dialog: BYE (200, the call ends), INFO (200; a SIP INFO
 * `application/dtmf-relay` key press is delivered like an RFC 4733 one), and re-INVITE (200
 * with our SDP, version bumped; the RTP filter follows the peer's new address), and NOTIFY (a
 * REFER's progress, telephony/sip/refer.ts). A request for a dialog we do not know gets 481.
 * @module
 */

import type { SrtpKeyMaterial } from "./srtp.ts";
import type { KeypadEntry } from "../../core/frames.ts";
import { sessionDescription } from "./body.ts";
import { buildResponse, cseqOf, type ResponseOptions } from "./build.ts";
import type { SipCall } from "./call.ts";
import { type AgentCore, dialogHeaders } from "./core.ts";
import { dialogNextHop } from "./dialog.ts";
import { getHeader, type SipRequest } from "./message.ts";
import type { UdpAddress } from "./udp.ts";
import { buildAnswer, buildOffer, formatSdp, nextSessionVersion, parseSdp } from "./sdp.ts";
import type { ServerTransaction } from "./transaction.ts";

/** The key of a SIP INFO key press (`Signal=5` in application/dtmf-relay), if any. */
export function dtmfFromInfo(req: SipRequest): KeypadEntry | undefined {
  const type = (getHeader(req, "Content-Type") ?? "").toLowerCase();
  if (!type.startsWith("application/dtmf")) return undefined;
  const m = /signal\s*=\s*([0-9*#a-d])/i.exec(req.body) ?? /^\s*([0-9*#a-d])\s*$/i.exec(req.body);
  return m === null ? undefined : (m[1].toUpperCase() as KeypadEntry);
}

/**
 * Whether an in-dialog request from `from` belongs to `call`, a call the agent placed, and comes
 * from the host it called (a transfer target's BYE).
 */
export function fromCalledPeer(call: SipCall | undefined, from: UdpAddress): boolean {
  return call?.direction === "outbound" && dialogNextHop(call.dialog)?.hostname === from.hostname;
}

/** Answer an in-dialog request for `call` (undefined: no such dialog, 481). */
export function handleInDialog(
  core: AgentCore,
  call: SipCall | undefined,
  txn: ServerTransaction,
): void {
  const req = txn.request;
  const reply = (status: number, opts: ResponseOptions = {}) =>
    txn.respond(
      buildResponse(req, status, {
        ...opts,
        headers: [...(opts.headers ?? []), ...core.commonHeaders()],
      }),
    );
  if (call === undefined || call.endReason !== undefined) return reply(481);
  const seq = cseqOf(req)?.seq ?? 0;
  if (!call.acceptRemoteSeq(seq)) return reply(500, { reason: "CSeq Out of Order" });
  switch (req.method) {
    case "BYE":
      reply(200);
      call.endFromRemote("remote hangup");
      return;
    case "INFO": {
      const key = dtmfFromInfo(req);
      if (key !== undefined) call.transport.pushDtmf(key);
      return reply(200);
    }
    case "INVITE":
      return reInvite(core, call, txn);
    case "NOTIFY":
      return reply(call.onNotify(req));
    default:
      return reply(501);
  }
}

/** Answer a re-INVITE (hold, codec refresh, address change) with our current media. */
function reInvite(core: AgentCore, call: SipCall, txn: ServerTransaction): void {
  const req = txn.request;
  const origin = call.sdpOrigin ?? { sessionId: "0", version: "0" };
  const version = nextSessionVersion(origin.version);
  let sdp: string;
  const offerText = sessionDescription(req);
  if (offerText === undefined) {
    // An offerless re-INVITE: we offer our current media again; the answer comes in the ACK.
    sdp = formatSdp(buildOffer({
      address: core.advertised,
      port: call.rtp.port,
      codecs: [call.media.codec],
      telephoneEventPt: call.media.telephoneEventPt ?? null,
      ...srtpOf(call),
      sessionId: origin.sessionId,
      sessionVersion: version,
    }));
  } else {
    const offer = parseSdp(offerText);
    const ans = offer.ok
      ? buildAnswer(offer.value, {
        address: core.advertised,
        port: call.rtp.port,
        codecs: [call.media.codec],
        ...srtpOf(call),
        sessionId: origin.sessionId,
        sessionVersion: version,
      })
      : undefined;
    if (ans === undefined || !ans.ok) {
      txn.respond(buildResponse(req, 488, { headers: core.commonHeaders() }));
      return;
    }
    call.rtp.updateRemote(ans.media);
    sdp = formatSdp(ans.answer);
  }
  call.sdpOrigin = { sessionId: origin.sessionId, version };
  txn.respond(buildResponse(req, 200, {
    headers: dialogHeaders(core, txn.source.transport),
    body: sdp,
    contentType: "application/sdp",
  }));
}

/** A re-negotiation keeps the call's security: SRTP with our key, or plain RTP. */
function srtpOf(call: SipCall): { srtp: "required"; srtpKey: SrtpKeyMaterial } | { srtp: "off" } {
  const keys = call.media.srtp;
  return keys === undefined ? { srtp: "off" } : { srtp: "required", srtpKey: keys.send };
}
