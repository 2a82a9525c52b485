/**
 * Flowcat's SIP/RTP stack, pure layers: message parsing and serialization, digest auth,
 * SDP offer/answer, RTP packets / sender / jitter buffer / source filter, and the RFC 3261
 * transaction timers. Everything here is synchronous and socket-free.
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
export * from "./uri.ts";
export * from "./address.ts";
export * from "./message.ts";
export * from "./build.ts";
export * from "./digest.ts";
export * from "./sdp.ts";
export * from "./rtp.ts";
export * from "./txn_timers.ts";
