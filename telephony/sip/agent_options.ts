/**
 * What {@link SipAgent.start} takes beyond the SipConfig, and the agent's counters.
 * @module
 */

import type { Logger } from "../../core/log.ts";
import type { InboundPolicy } from "./inbound_gate.ts";
import type { KeepAliveOptions } from "./keepalive.ts";
import type { RegistrationOptions } from "./register.ts";
import type { LatchMode } from "./rtp_source.ts";
import type { SrtpPolicy } from "./sdes.ts";
import type { TransactionCounters } from "./transaction.ts";
import type { SipTransferPolicy } from "./transfer_flow.ts";
import type { BaseTimers } from "./txn_timers.ts";

/** Options of `SipAgent.start` beyond the {@link SipConfig}. */
export interface SipAgentOptions {
  /** Where the agent logs (never the password). Default silent. */
  logger?: Logger;
  /** Transaction timers T1/T2/T4 in ms (tests shorten T1). Default 500/4000/5000. */
  timers?: Partial<BaseTimers>;
  /** REGISTER expiry and retry backoff. */
  registration?: RegistrationOptions;
  /** User-Agent header value. Default `Flowcat`. */
  userAgent?: string;
  /** Send 180 Ringing for a new INVITE. Default true. */
  ringing?: boolean;
  /** Reject an INVITE left unanswered this long with 480, ms (0: never). Default 60000. */
  answerTimeoutMs?: number;
  /** How long `hangup()` waits for the BYE's response, ms. Default 2000. */
  byeWaitMs?: number;
  /** RTP: jitter depth (20 ms packets), symmetric-RTP latching, idle silence, SRTP policy. */
  rtp?: {
    jitterDepth?: number;
    latch?: LatchMode;
    keepAliveSilence?: boolean;
    /** SRTP with SDES keys: `required`, `optional` or `off` (the default). */
    srtp?: SrtpPolicy;
    /** Mean time between our RTCP reports, ms; default 5000. */
    rtcpIntervalMs?: number;
  };
  /** Source allowlist and digest challenge of inbound requests. Default: anyone, no auth. */
  inbound?: InboundPolicy;
  /**
   * Close a TCP or TLS connection after this long without traffic when no live dialog, ringing
   * INVITE or registration used it, ms (0: never). Default 300000.
   */
  streamIdleMs?: number;
  /** NAT keep-alive towards the server (CRLF or OPTIONS on an interval). Default none. */
  keepAlive?: KeepAliveOptions;
  /**
   * While this returns true (the embedder is draining) OPTIONS and new INVITEs get 503, so
   * proxies and SBCs that health-check the agent route calls elsewhere.
   */
  unavailable?: () => boolean;
  /**
   * Transfers beyond REFER: the bridge when the peer refuses REFER (on by default), how long
   * the target may ring, when a warm transfer's briefing counts as spoken.
   */
  transfer?: SipTransferPolicy;
}

/** Counters of an agent (transaction counters plus datagram-level ones). */
export interface SipAgentCounters extends TransactionCounters {
  /** Datagrams dropped because they did not parse as SIP. */
  malformed: number;
  /** Requests refused (403 or ignored) because of their source address. */
  refusedSources: number;
}
