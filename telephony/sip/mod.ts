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
 * import { SipAgent } from "./mod.ts";
 * const agent = await SipAgent.start(config);
 * await agent.register();
 * const invite = await agent.nextInbound();
 * const call = await invite!.answer(); // call.transport is a MediaTransport
 * ```
 *
 * @example
 * ```ts
 * import { buildResponse, newTag, parseSipMessage, serializeSipMessage } from "./mod.ts";
 * const r = parseSipMessage(datagram);
 * if (r.ok && r.message.kind === "request" && r.message.method === "OPTIONS") {
 *   send(serializeSipMessage(buildResponse(r.message, 200, { toTag: newTag() })));
 * }
 * ```
 * @module
 */

export type { ParseResult } from "./result.ts";
export * from "./headers.ts";
export * from "./params.ts";
export * from "./body.ts";
export * from "./uas_checks.ts";
export * from "./uri.ts";
export * from "./address.ts";
export * from "./message.ts";
export * from "./build.ts";
export * from "./digest.ts";
export * from "./sdp.ts";
export * from "./rtp.ts";
export * from "./txn_timers.ts";
export * from "./udp.ts";
export * from "./transaction.ts";
export * from "./dialog.ts";
export * from "./config.ts";
export * from "./register.ts";
export * from "./rtp_session.ts";
export * from "./rtp_clock.ts";
export * from "./rtp_pacer.ts";
export * from "./sip_transport.ts";
export * from "./call.ts";
export { type InviteState, SipInvite } from "./inbound.ts";
export { buildCancel, type CallOptions } from "./outbound.ts";
export { dtmfFromInfo } from "./in_dialog.ts";
export { SipAgent, type SipAgentCounters, type SipAgentOptions } from "./agent.ts";
export { type InboundAuth, InboundGate, type InboundPolicy } from "./inbound_gate.ts";
export { type DigestVerdict, DigestVerifier, type DigestVerifierOptions } from "./digest_server.ts";
export { parseCidr, parseIp, SourceFilter } from "./source_filter.ts";
export { KeepAlive, type KeepAliveOptions } from "./keepalive.ts";
export type { AgentCore } from "./core.ts";
