/**
 * Outbound calls (UAC): INVITE to `sip:<E.164>@<server>` with From user = caller_id and our
 * SDP offer, digest answer to a 401/407 (new branch, CSeq+1), ACK for the 2xx (re-sent for
 * every 2xx retransmission), CANCEL when the caller's AbortSignal fires before the answer.
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import { assertE164 } from "../security.ts";
import { buildRequest, newCallId, newTag } from "./build.ts";
import { serverAddress } from "./config.ts";
import { SipCall } from "./call.ts";
import { type AgentCore, dialogHeaders } from "./core.ts";
import { buildInDialogRequest, dialogAsUac, dialogNextHop } from "./dialog.ts";
import { type DigestChallenge, selectChallenge } from "./digest.ts";
import { getHeader, getHeaders, type SipHeader, type SipRequest } from "./message.ts";
import { acceptAnswer, buildOffer, formatSdp, type G711Codec, parseSdp } from "./sdp.ts";
import type { UdpAddress } from "./udp.ts";

/** Options of {@link SipAgent.call}. */
export interface CallOptions {
  /** Aborting cancels the call before it is answered (CANCEL, then the call rejects). */
  signal?: AbortSignal;
  /** Each provisional response (100, 180, 183). */
  onProgress?(status: number, reason: string): void;
  /** Extra INVITE headers (never credentials). */
  headers?: SipHeader[];
}

/** The CANCEL for `invite` (RFC 3261 §9.1): same Request-URI, Call-ID, From, To, branch. */
export function buildCancel(invite: SipRequest): SipRequest {
  const seq = (getHeader(invite, "CSeq") ?? "1").trim().split(/\s+/)[0];
  const headers: SipHeader[] = [
    { name: "Via", value: getHeader(invite, "Via") ?? "" },
    { name: "Max-Forwards", value: "70" },
    { name: "From", value: getHeader(invite, "From") ?? "" },
    { name: "To", value: getHeader(invite, "To") ?? "" },
    { name: "Call-ID", value: getHeader(invite, "Call-ID") ?? "" },
    { name: "CSeq", value: `${seq} CANCEL` },
  ];
  for (const r of getHeaders(invite, "Route")) headers.push({ name: "Route", value: r });
  return buildRequest("CANCEL", invite.uri, headers);
}

/** Where an INVITE goes and who it is for. */
export interface InviteTarget {
  /** The Request-URI. */
  ruri: string;
  /** The To header's URI. */
  toUri: string;
  /** Where the INVITE is sent (the trunk, or the target's own host). */
  dest: UdpAddress;
  /** The trunk's credentials may answer a 401/407 (never sent to any other host). */
  trunk: boolean;
  /** How the call is named in errors (a number or a URI). */
  label: string;
  /** Codecs to offer in preference order; default PCMU then PCMA. */
  codecs?: G711Codec[];
}

/** Place a call to `toNumber` (E.164) through the configured server. */
export async function placeCall(
  core: AgentCore,
  toNumber: string,
  opts: CallOptions = {},
): Promise<SipCall> {
  assertE164(toNumber, "toNumber");
  const server = core.settings.server;
  return await placeInvite(core, {
    ruri: `sip:${toNumber}@${server.hostPort}`,
    toUri: `sip:${toNumber}@${server.host}`,
    dest: serverAddress(server),
    trunk: true,
    label: toNumber,
  }, opts);
}

/** Send an INVITE to `target` with our SDP offer; resolves with the call once answered. */
export async function placeInvite(
  core: AgentCore,
  target: InviteTarget,
  opts: CallOptions = {},
): Promise<SipCall> {
  const callerId = assertE164(core.settings.callerId, "SipConfig.callerId");
  if (core.closing) throw new FlowcatError("closed", "SIP agent is closed");
  if (opts.signal?.aborted) throw new FlowcatError("closed", "call cancelled before it started");
  const server = core.settings.server;
  const { ruri, dest, label: toNumber } = target;
  const rtp = core.openRtp();
  try {
    const callId = newCallId(core.advertised);
    const from = `<sip:${callerId}@${server.host}>;tag=${newTag()}`;
    const to = `<${target.toUri}>`;
    const offer = buildOffer({
      address: core.advertised,
      port: rtp.port,
      srtp: core.srtp,
      ...(target.codecs !== undefined ? { codecs: target.codecs } : {}),
    });
    const sdp = formatSdp(offer);
    let challenge: DigestChallenge | undefined;
    let fresh = false;
    for (let seq = 1; seq <= 4; seq++) {
      const headers: SipHeader[] = [
        { name: "Via", value: core.via() },
        { name: "Max-Forwards", value: "70" },
        { name: "From", value: from },
        { name: "To", value: to },
        { name: "Call-ID", value: callId },
        { name: "CSeq", value: `${seq} INVITE` },
        ...dialogHeaders(core, dest.transport),
        ...(opts.headers ?? []),
        { name: "Content-Type", value: "application/sdp" },
      ];
      if (challenge !== undefined) {
        const auth = core.digest.authorize(challenge, "INVITE", ruri);
        if (auth.ok) headers.push(auth.value);
      }
      const invite = buildRequest("INVITE", ruri, headers, sdp);
      let ack: { msg: SipRequest; to: UdpAddress } | undefined;
      let cancelWanted = false;
      let cancelSent = false;
      const cancel = () => {
        if (cancelSent) return;
        cancelSent = true;
        core.layer.request(buildCancel(invite), dest);
      };
      const txn = core.layer.request(invite, dest, {
        onProvisional: (res) => {
          opts.onProgress?.(res.status, res.reason);
          if (cancelWanted && res.status > 100) cancel();
        },
        on2xxRetransmit: () => {
          if (ack !== undefined) core.layer.sendStateless(ack.msg, ack.to);
        },
      });
      const onAbort = () => {
        cancelWanted = true;
        // RFC 3261 §9.1: CANCEL only once a provisional response arrived.
        if (txn.provisionalSeen) cancel();
      };
      opts.signal?.addEventListener("abort", onAbort, { once: true });
      const res = await txn.response;
      opts.signal?.removeEventListener("abort", onAbort);
      if (res.status >= 200 && res.status < 300) {
        const dialog = dialogAsUac(invite, res);
        const hop = dialogNextHop(dialog) ?? dest;
        ack = { msg: buildInDialogRequest(dialog, "ACK", core.via(), { seq }), to: hop };
        core.layer.sendStateless(ack.msg, ack.to);
        const answer = parseSdp(res.body);
        const media = answer.ok
          ? acceptAnswer(answer.value, "sendrecv", target.codecs, {
            policy: core.srtp,
            offer,
          })
          : answer;
        const call = new SipCall(
          core,
          dialog,
          rtp,
          media.ok ? media.value : { ...placeholderMedia(), remoteAddress: dest.hostname },
          { direction: "outbound", from, to },
        );
        call.sdpOrigin = {
          sessionId: offer.origin.sessionId,
          version: offer.origin.sessionVersion,
        };
        core.addCall(call);
        if (!media.ok || cancelWanted) {
          await call.hangup(cancelWanted ? "local hangup" : "no common codec");
          throw media.ok ? new FlowcatError("closed", "call cancelled") : new FlowcatError(
            "protocol",
            `call to ${toNumber}: unusable SDP answer (${media.reason})`,
          );
        }
        call.startMedia();
        core.log.info("sip call connected", { callId, codec: media.value.codec });
        return call;
      }
      if ((res.status === 401 || res.status === 407) && !target.trunk) {
        // The trunk's password is for the trunk: another host asking for it gets nothing.
        throw new FlowcatError("auth", `call to ${toNumber}: ${res.status} (not our trunk)`);
      }
      if (res.status === 401 || res.status === 407) {
        const ch = selectChallenge(res);
        if (!ch.ok || (fresh && !ch.value.stale)) {
          throw new FlowcatError("auth", `call to ${toNumber}: ${res.status} credentials refused`);
        }
        challenge = ch.value;
        fresh = true;
        continue;
      }
      if (cancelWanted && res.status === 487) throw new FlowcatError("closed", "call cancelled");
      if (txn.timedOut) {
        const where = `${dest.hostname}:${dest.port}`;
        throw new FlowcatError("timeout", `call to ${toNumber}: no answer from ${where}`);
      }
      throw new FlowcatError("other", `call to ${toNumber} failed: ${res.status} ${res.reason}`);
    }
    throw new FlowcatError("auth", `call to ${toNumber}: too many challenges`);
  } catch (err) {
    await rtp.close();
    throw err;
  }
}

/** Media for a call that is hung up at once because its answer was unusable. */
function placeholderMedia() {
  return {
    codec: "PCMU" as const,
    payloadType: 0,
    remoteAddress: "0.0.0.0",
    remotePort: 9,
    ptime: 20,
    remoteDirection: "inactive" as const,
    localDirection: "inactive" as const,
    hold: true,
  };
}
