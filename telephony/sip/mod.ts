/**
 * Flowcat's SIP/RTP stack. Pure layers: message parsing and serialization, digest auth, SDP
 * offer/answer, RTP packets / sender / jitter buffer / source filter, and the RFC 3261
 * transaction timers. Socket layer: the UDP endpoint, the transaction layer, dialogs,
 * registration, RTP sessions, the per-call MediaTransport, and the `SipAgent` tying them up.
 *
 * Permissions: the pure layers none; the socket layer `--unstable-net` (UDP) and
 * `--allow-net=<bind address>,<trunk host>` (RTP binds even ports on the same address);
 * binding `0.0.0.0` without `publicIp` also `--allow-sys=networkInterfaces`.
 *
 * @example
 * ```ts
 * import { SipAgent } from "@flowcat/flowcat/sip";
 * import type { SipConfig } from "@flowcat/flowcat/sip";
 * declare const config: SipConfig;
 * const agent = await SipAgent.start(config);
 * await agent.register();
 * const invite = await agent.nextInbound();
 * const call = await invite!.answer(); // call.transport is a MediaTransport
 * ```
 *
 * @example
 * ```ts
 * import { buildResponse, newTag, parseSipMessage, serializeSipMessage } from "@flowcat/flowcat/sip";
 * declare const datagram: Uint8Array;
 * declare function send(text: string): void;
 * const r = parseSipMessage(datagram);
 * if (r.ok && r.message.kind === "request" && r.message.method === "OPTIONS") {
 *   send(serializeSipMessage(buildResponse(r.message, 200, { toTag: newTag() })));
 * }
 * ```
 * @module
 */

export type { ParseResult } from "./result.ts";
export { formatParams, type Params, parseParams, parseUriParams } from "./params.ts";
export { type BodyPart, mediaType, multipartParts, sessionDescription } from "./body.ts";
export { answerMalformed, type Refusal } from "./uas_checks.ts";
export {
  formatUri,
  isKnownScheme,
  type KnownScheme,
  parseHostPort,
  parseUri,
  type SipUri,
} from "./uri.ts";
export {
  BRANCH_COOKIE,
  type CSeq,
  formatCSeq,
  formatNameAddr,
  formatVia,
  type NameAddr,
  parseCSeq,
  parseNameAddr,
  parseVia,
  type Via,
} from "./address.ts";
export {
  encodeSipMessage,
  getHeader,
  getHeaders,
  isKeepAlive,
  MAX_HEADERS,
  MAX_MESSAGE_BYTES,
  parseSipMessage,
  removeHeader,
  serializeSipMessage,
  setHeader,
  type SipHeader,
  type SipMessage,
  type SipParseFailure,
  type SipParseOptions,
  type SipParseResult,
  type SipRequest,
  type SipResponse,
} from "./message.ts";
export {
  addressOf,
  buildRequest,
  buildResponse,
  cseqOf,
  newBranch,
  newCallId,
  newTag,
  reasonPhrase,
  type ResponseOptions,
  tagOf,
  topVia,
} from "./build.ts";
export {
  computeDigestResponse,
  type DigestAlgorithm,
  type DigestChallenge,
  DigestClient,
  type DigestClientOptions,
  DigestCredentials,
  digestHash,
  type DigestInputs,
  parseAuthParams,
  parseDigestChallenge,
  selectChallenge,
} from "./digest.ts";
export {
  acceptAnswer,
  type AnswerResult,
  buildAnswer,
  buildOffer,
  DEFAULT_TELEPHONE_EVENT_PT,
  formatSdp,
  type G711Codec,
  type LocalMediaOptions,
  type MediaDirection,
  type NegotiatedMedia,
  parseSdp,
  type RtpMap,
  type SdpAttribute,
  type SdpConnection,
  type SdpMedia,
  type SdpOrigin,
  type SdpSession,
  STATIC_PT,
} from "./sdp.ts";
export {
  decodeRtp,
  encodeRtp,
  RTP_HEADER_BYTES,
  type RtpPacket,
  type RtpPacketInit,
  rtpPacketLength,
  RtpSender,
  type RtpSenderOptions,
  SAMPLES_PER_20MS,
} from "../../core/rtp.ts";
export { type LatchMode, type RtpAddress, RtpSourceFilter } from "./rtp_source.ts";
export {
  SRTP_SUITES,
  SrtpContext,
  type SrtpKeyMaterial,
  type SrtpStats,
  type SrtpSuite,
  srtpTagBytes,
} from "./srtp.ts";
export {
  type CryptoLine,
  formatCrypto,
  type NegotiatedSrtp,
  newSrtpKey,
  parseCrypto,
  type SrtpPolicy,
} from "./sdes.ts";
export { type BaseTimers, DEFAULT_TIMERS, type TimerValues } from "./txn_timers.ts";
export {
  type DatagramHandler,
  openEvenPort,
  type StreamTransport,
  type UdpAddress,
  UdpEndpoint,
} from "./udp.ts";
export type { SipTlsOptions } from "./tcp.ts";
export {
  type ClientCallbacks,
  type ClientState,
  ClientTransaction,
  type RequestHandler,
  type SendMessage,
  type ServerState,
  ServerTransaction,
  type TransactionCounters,
  TransactionLayer,
  type TransactionLayerOptions,
} from "./transaction.ts";
export {
  buildInDialogRequest,
  type Dialog,
  dialogAsUac,
  dialogAsUas,
  dialogKey,
  dialogKeyOfRequest,
  dialogNextHop,
  type InDialogOptions,
  uriDestination,
} from "./dialog.ts";
export {
  advertisedAddress,
  parseServer,
  resolveSipConfig,
  SIP_CONFIG_DEFAULTS,
  type SipConfig,
  type SipServer,
  type SipSettings,
} from "./config.ts";
export {
  Registration,
  type RegistrationHost,
  type RegistrationOptions,
  type RegistrationState,
} from "./register.ts";
export { RtpSession } from "./rtp_session.ts";
export type {
  DtmfSendOptions,
  RtpHandlers,
  RtpSessionOptions,
  RtpStats,
} from "./rtp_session_types.ts";
export type { RtcpStats } from "./rtcp_channel.ts";
export { joinRtpClock, leaveRtpClock, RTP_TICK_MS, type RtpTick } from "./rtp_clock.ts";
export { type PacerSink, type PacerStats, RtpPacer } from "./rtp_pacer.ts";
export { SIP_CARRIER_RATE, SipMediaTransport, type SipTransferHooks } from "./sip_transport.ts";
export { bridgeCalls, type BridgeStats, type CallBridge } from "./bridge.ts";
export { type DialOptions, dialTarget, inviteTargetOf } from "./dial.ts";
export {
  coldTransfer,
  SIP_TRANSFER_DEFAULTS,
  type SipTransferPolicy,
  warmTransfer,
} from "./transfer_flow.ts";
export {
  type CallDirection,
  type CallEndReason,
  type CallHost,
  type CallInfo,
  SipCall,
  type SipLeg,
  type TransferOptions,
} from "./call.ts";
export {
  DEFAULT_TRANSFER_WAIT_MS,
  ReferProgress,
  referRefusal,
  referTargetProblem,
  referToUri,
  sipfragStatus,
} from "./refer.ts";
export { type InviteState, SipInvite } from "./inbound.ts";
export { buildCancel, type CallOptions, type InviteTarget, placeInvite } from "./outbound.ts";
export { dtmfFromInfo } from "./in_dialog.ts";
export { SipAgent, type SipAgentCounters, type SipAgentOptions } from "./agent.ts";
export { type InboundAuth, InboundGate, type InboundPolicy } from "./inbound_gate.ts";
export { type DigestVerdict, DigestVerifier, type DigestVerifierOptions } from "./digest_server.ts";
export { parseCidr, parseIp, SourceFilter } from "./source_filter.ts";
export { KeepAlive, type KeepAliveOptions } from "./keepalive.ts";
export type { AgentCore } from "./core.ts";
