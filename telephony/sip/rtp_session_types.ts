/**
 * The shapes around an {@link RtpSession}: its options, where decoded media goes, its counters,
 * and the options of sending key presses.
 * @module
 */

import type { Logger } from "../../core/log.ts";
import type { KeypadEntry } from "../../core/frames.ts";
import type { RtcpStats } from "./rtcp_channel.ts";
import type { LatchMode } from "./rtp_source.ts";

/** Options of `RtpSession.open`. */
export interface RtpSessionOptions {
  /** Local address to bind. */
  bindHost: string;
  /** First even port probed. */
  portBase: number;
  /** Even ports probed. */
  portTries: number;
  /** Where media events are logged (debug). */
  logger?: Logger;
  /**
   * Least jitter-buffer depth in 20 ms packets; default 1. The buffer (the one the WebRTC leg
   * uses) deepens by itself as the measured jitter grows, to 200 ms at most.
   */
  jitterDepth?: number;
  /** Symmetric-RTP latching; default `port`. */
  latch?: LatchMode;
  /** Send silence packets while idle (else only the timestamps advance); default true. */
  keepAliveSilence?: boolean;
  /** Mean time between our RTCP reports, ms; default 5000 (RFC 3550 §6.2's minimum). */
  rtcpIntervalMs?: number;
}

/** Where decoded media goes. */
export interface RtpHandlers {
  /** 8 kHz mono PCM, 160 samples per packet (concealment frames included). */
  onAudio(pcm: Int16Array): void;
  /** One RFC 4733 key press (reported once). */
  onDtmf(key: KeypadEntry): void;
}

/** Counters of a session. */
export interface RtpStats {
  /** RTP packets sent (audio and DTMF events). */
  packetsSent: number;
  /** RTP packets accepted from the negotiated source. */
  packetsReceived: number;
  /** Packets from an address other than the negotiated one (symmetric RTP), dropped. */
  droppedForeign: number;
  /** Packets with a payload type we did not negotiate (comfort noise included), dropped. */
  droppedPayloadType: number;
  /** Datagrams that are not RTP. */
  malformed: number;
  /** Sequence numbers never received (concealed). */
  lost: number;
  /** Packets too late for the jitter buffer, or duplicates. */
  late: number;
  /** Buffered packets the jitter buffer discarded to keep its delay bounded. */
  discarded: number;
  /** RFC 4733 key presses received. */
  dtmfIn: number;
  /** RFC 4733 key presses sent. */
  dtmfOut: number;
  /** SRTP packets whose authentication tag did not match, dropped. */
  srtpAuthFailed: number;
  /** SRTP packets replaying an index already received (or too old), dropped. */
  srtpReplayed: number;
  /** RTCP on the port above (SRTCP when SRTP is on). */
  rtcp: RtcpStats;
}

/** Options of {@link RtpSession.sendDtmf}. */
export interface DtmfSendOptions {
  /** Tone length, ms; default 100. */
  durationMs?: number;
  /** Pause after each key, ms; default 60. */
  gapMs?: number;
}
