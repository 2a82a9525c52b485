/**
 * The agent internals that inbound and outbound call handling use: one interface so that
 * `inbound.ts` and `outbound.ts` do not depend on the agent class itself.
 * @module
 */

import type { SrtpPolicy } from "./sdes.ts";
import type { StreamTransport } from "./udp.ts";
import type { CallHost, SipCall } from "./call.ts";
import type { SipSettings } from "./config.ts";
import type { DigestClient } from "./digest.ts";
import type { SipHeader } from "./message.ts";
import type { RtpSession } from "./rtp_session.ts";
import type { ServerTransaction } from "./transaction.ts";

/** Methods we answer, for Allow headers. */
export const ALLOWED_METHODS = "INVITE, ACK, CANCEL, BYE, OPTIONS, INFO, NOTIFY";

/** What the agent gives its call handlers. */
export interface AgentCore extends CallHost {
  /** Validated settings (no password). */
  readonly settings: SipSettings;
  /** The address we advertise in Via, Contact and SDP. */
  readonly advertised: string;
  /** Answers digest challenges (holds the password). */
  readonly digest: DigestClient;
  /** True once close() started. */
  readonly closing: boolean;
  /** Send 180 Ringing on a new INVITE. */
  readonly sendRinging: boolean;
  /** Reject an unanswered INVITE with 480 after this long, ms (0: never). */
  readonly answerTimeoutMs: number;
  /** Whether media is encrypted (SRTP with SDES keys). */
  readonly srtp: SrtpPolicy;
  /** Our Contact URI (`sip:login@ip:port`), for a dialog over `transport` (default UDP). */
  contactUri(transport?: StreamTransport): string;
  /** Bind an RTP port for a new call (throws when all are taken). */
  openRtp(): RtpSession;
  /** Put an established call in the dialog table. */
  addCall(call: SipCall): void;
  /** An INVITE server transaction got its final response: stop tracking it. */
  inviteSettled(txn: ServerTransaction): void;
}

/**
 * Contact, Allow and User-Agent: what our INVITEs and 2xx answers carry. `transport` is the one
 * the dialog's INVITE travels over, so the Contact invites the peer back over it.
 */
export function dialogHeaders(core: AgentCore, transport?: StreamTransport): SipHeader[] {
  return [
    { name: "Contact", value: `<${core.contactUri(transport)}>` },
    { name: "Allow", value: ALLOWED_METHODS },
    ...core.commonHeaders(),
  ];
}
