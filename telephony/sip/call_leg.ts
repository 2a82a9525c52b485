/**
 * What a SIP call is to the code around it: what it needs from its agent ({@link CallHost}), the
 * options and reasons of its life, and {@link SipLeg}, the face of a call that the transfer
 * flows, the bridge and the dialler use (telephony/sip/call.ts implements it). A module of
 * types, so those flows and the call class do not import each other.
 * @module
 */

import type { TransferOutcome } from "../../core/frames.ts";
import type { Logger } from "../../core/log.ts";
import type { SipHeader } from "./message.ts";
import type { RtpSession } from "./rtp_session.ts";
import type { RtpHandlers } from "./rtp_session_types.ts";
import type { G711Codec, NegotiatedMedia } from "./sdp.ts";
import type { SipMediaTransport } from "./sip_transport.ts";
import type { TransactionLayer } from "./transaction.ts";

/** What a call needs from its agent. */
export interface CallHost {
  /** The transaction layer the call sends its in-dialog requests through. */
  readonly layer: TransactionLayer;
  /** Where call events are logged. */
  readonly log: Logger;
  /** A fresh Via value (new branch) for a request we send. */
  via(): string;
  /** Headers every request we send carries (User-Agent). */
  commonHeaders(): SipHeader[];
  /** The call ended: drop it from the dialog table. */
  forgetCall(key: string): void;
  /** How long hangup() waits for the BYE's response, ms. */
  readonly byeWaitMs: number;
  /** Our Contact URI (`sip:login@ip:port`), for the REFER of a transfer. */
  contactUri(): string;
  /** Place a call to a transfer target (a second leg); absent: no fallback, no warm transfer. */
  dial?(target: string, opts: DialOptions): Promise<SipLeg>;
  /** How transfers beyond REFER go (defaults: telephony/sip/transfer_flow.ts). */
  readonly transferPolicy?: SipTransferPolicy;
}

/** Options of {@link SipCall.transfer}. */
export interface TransferOptions {
  /** How long to wait for the target to answer, ms (default 60000). */
  waitMs?: number;
}

/** Why a call ended, as `ended` reports it. */
export type CallEndReason =
  | "remote hangup"
  | "local hangup"
  | "no ACK"
  | "agent closed"
  | (string & Record<never, never>);

/** Who placed the call. */
export type CallDirection = "inbound" | "outbound";

/** Identity of a call, as the agent learned it. */
export interface CallInfo {
  /** Whether we received the INVITE (`inbound`) or sent it (`outbound`). */
  direction: CallDirection;
  /** The From header value of the INVITE. */
  from: string;
  /** The To header value of the INVITE. */
  to: string;
}

/** A call as the transfer flows, the bridge and the dialler see it. */
export interface SipLeg {
  /** SIP Call-ID. */
  readonly callId: string;
  /** The media both sides agreed on. */
  readonly media: NegotiatedMedia;
  /** The pipeline's side of the call. */
  readonly transport: SipMediaTransport;
  /** Resolves with the reason once the call ends. */
  readonly ended: Promise<CallEndReason>;
  /** Why the call ended; undefined while it goes on. */
  readonly endReason: CallEndReason | undefined;
  /** The call's RTP session. */
  readonly rtp: RtpSession;
  /** What the agent's media hooks into. */
  agentMedia(): RtpHandlers;
  /** Send BYE and end the call. */
  hangup(reason?: CallEndReason): Promise<void>;
  /** Cold transfer by REFER. */
  transfer(target: string, opts?: TransferOptions): Promise<TransferOutcome>;
}

/** Options of {@link dialTarget}. */
export interface DialOptions {
  /** Aborting cancels the call before it is answered (CANCEL). */
  signal?: AbortSignal;
  /** The codec to prefer (the caller's): offered first, the other G.711 law second. */
  codec?: G711Codec;
}

/** How a SIP agent's calls transfer beyond REFER. */
export interface SipTransferPolicy {
  /**
   * When the peer refuses the REFER or its transfer fails, dial the target and bridge the
   * calls in process (default true).
   */
  bridgeFallback?: boolean;
  /** How long the target's phone may ring before the second leg is given up, ms (default 30000). */
  dialTimeoutMs?: number;
  /** Warm: bridge once the agent has been quiet this long after speaking, ms (default 700). */
  briefingQuietMs?: number;
  /** Warm: bridge anyway when the agent has said nothing this long after the answer, ms (default 10000). */
  briefingWaitMs?: number;
  /** Warm: bridge at the latest this long after the answer, ms (default 60000). */
  briefingMaxMs?: number;
  /** Warm: what the caller hears on hold, 8 kHz mono PCM played in a loop (default silence). */
  holdAudio?: Int16Array;
  /**
   * Told of each bridge the agent starts, with a promise that settles when it ends: a server
   * holds its drain for it, so a restart does not cut a caller already talking to a person.
   */
  onBridge?: (ended: Promise<unknown>) => void;
}
