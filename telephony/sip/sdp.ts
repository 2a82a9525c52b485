/**
 * SDP offer/answer for G.711 audio (RFC 3264, RFC 4566, RFC 4733 telephone-event).
 *
 * - {@link buildOffer}: PCMU/0, PCMA/8, telephone-event/101 (`fmtp 0-16`), ptime 20.
 * - {@link buildAnswer}: picks the first codec of the peer's list that we support, keeps the
 *   peer's payload type numbers (telephone-event included), rejects other streams with port 0,
 *   and reports `{ ok: false, status: 488 }` when nothing is acceptable.
 * - {@link acceptAnswer}: the UAC side, reading the negotiated media out of the peer's answer.
 *
 * Also re-exports the SDP model, {@link parseSdp} and {@link formatSdp}.
 *
 * @example
 * ```ts
 * import { buildAnswer, formatSdp, parseSdp, type SipRequest } from "@flowcat/flowcat/sip";
 * declare const invite: SipRequest;
 * declare function reply(status: number, sdp?: string): void;
 * const offer = parseSdp(invite.body);
 * if (offer.ok) {
 *   const ans = buildAnswer(offer.value, { address: "192.0.2.10", port: 16000 });
 *   if (!ans.ok) reply(488); else reply(200, formatSdp(ans.answer));
 * }
 * ```
 * @module
 */

import { fail, ok, type ParseResult } from "./result.ts";
import type { MediaDirection, RtpMap, SdpAttribute, SdpMedia, SdpSession } from "./sdp_parse.ts";
import {
  answeredSrtp,
  formatCrypto,
  isPlainProfile,
  isSecureProfile,
  type NegotiatedSrtp,
  newSrtpKey,
  offerCrypto,
  type SrtpPolicy,
  streamSecurity,
} from "./sdes.ts";
import type { SrtpKeyMaterial } from "./srtp.ts";

export * from "./sdp_parse.ts";

/** The G.711 codecs the stack speaks. */
export type G711Codec = "PCMU" | "PCMA";

/** Static payload types of RFC 3551. */
export const STATIC_PT: Readonly<Record<G711Codec, number>> = Object.freeze({ PCMU: 0, PCMA: 8 });

/** Default dynamic payload type offered for telephone-event. */
export const DEFAULT_TELEPHONE_EVENT_PT = 101;

/** What both sides agreed on for the audio stream. */
export interface NegotiatedMedia {
  /** Codec to send and expect. */
  codec: G711Codec;
  /** Payload type of `codec` as the peer numbers it. */
  payloadType: number;
  /** Peer's telephone-event payload type, when both sides support RFC 4733. */
  telephoneEventPt?: number;
  /** Where to send RTP (before any symmetric-RTP latching). */
  remoteAddress: string;
  /** Peer's RTP port. */
  remotePort: number;
  /** Packet time the peer wants to receive, ms (20 when it did not say). */
  ptime: number;
  /** The peer's direction for this stream. */
  remoteDirection: MediaDirection;
  /** Our direction for this stream (the answer's, or our offer's). */
  localDirection: MediaDirection;
  /** True when the peer put us on hold (sendonly/inactive or c=0.0.0.0). */
  hold: boolean;
  /** SRTP master keys of both directions, when the stream is encrypted (SDES). */
  srtp?: NegotiatedSrtp;
}

/** Our side of a session description. */
export interface LocalMediaOptions {
  /** Address we receive RTP on (public_ip behind NAT). */
  address: string;
  /** Even RTP port we receive on. */
  port: number;
  /** Codecs in our preference order; default PCMU then PCMA. */
  codecs?: G711Codec[];
  /** Telephone-event payload type to offer; null offers none. Default 101. */
  telephoneEventPt?: number | null;
  /** Packet time, ms; default 20. */
  ptime?: number;
  /** Direction we want; default sendrecv. */
  direction?: MediaDirection;
  /** o= session id (decimal); default derived from the clock. */
  sessionId?: string;
  /** o= session version (decimal); default equal to the session id. */
  sessionVersion?: string;
  /** SRTP policy (SDES); default `off`. */
  srtp?: SrtpPolicy;
  /** Our SRTP master key to offer or answer with (a re-INVITE keeps it); default a fresh one. */
  srtpKey?: SrtpKeyMaterial;
}

/** A decimal session id from the NTP-era clock, as RFC 4566 suggests. */
function clockId(): string {
  return String(Math.floor(Date.now() / 1000) + 2208988800);
}

/** The next o= session version (decimal strings may exceed 2^53). */
export function nextSessionVersion(version: string): string {
  return (BigInt(version) + 1n).toString();
}

function addrType(address: string): string {
  return address.includes(":") ? "IP6" : "IP4";
}

function baseSession(opts: LocalMediaOptions, media: SdpMedia[]): SdpSession {
  const id = opts.sessionId ?? clockId();
  const type = addrType(opts.address);
  return {
    origin: {
      username: "-",
      sessionId: id,
      sessionVersion: opts.sessionVersion ?? id,
      netType: "IN",
      addrType: type,
      address: opts.address,
    },
    name: "-",
    info: [],
    connection: { netType: "IN", addrType: type, address: opts.address },
    bandwidth: [],
    timing: "0 0",
    attributes: [],
    media,
  };
}

/**
 * Our offer: one audio stream with the G.711 codecs, telephone-event and ptime.
 *
 * @example
 * ```ts
 * import { buildOffer, formatSdp } from "@flowcat/flowcat/sip";
 * formatSdp(buildOffer({ address: "192.0.2.10", port: 40000 }));
 * // ... m=audio 40000 RTP/AVP 0 8 101 ... a=fmtp:101 0-16 ... a=ptime:20 ... a=sendrecv
 * ```
 */
export function buildOffer(opts: LocalMediaOptions): SdpSession {
  const codecs = opts.codecs ?? ["PCMU", "PCMA"];
  const te = opts.telephoneEventPt === undefined
    ? DEFAULT_TELEPHONE_EVENT_PT
    : opts.telephoneEventPt;
  const rtpmaps: RtpMap[] = codecs.map((c) => ({
    payloadType: STATIC_PT[c],
    encoding: c,
    clockRate: 8000,
  }));
  const fmtp = new Map<number, string>();
  if (te !== null) {
    rtpmaps.push({ payloadType: te, encoding: "telephone-event", clockRate: 8000 });
    fmtp.set(te, "0-16");
  }
  const policy = opts.srtp ?? "off";
  const audio: SdpMedia = {
    media: "audio",
    port: opts.port,
    // Optional SRTP is offered best-effort: a plain profile with crypto lines (RFC 4568 §7.5).
    proto: policy === "required" ? "RTP/SAVP" : "RTP/AVP",
    formats: rtpmaps.map((r) => String(r.payloadType)),
    bandwidth: [],
    rtpmaps,
    fmtp,
    ptime: opts.ptime ?? 20,
    direction: opts.direction ?? "sendrecv",
    attributes: policy === "off" ? [] : offerCrypto(opts.srtpKey),
  };
  return baseSession(opts, [audio]);
}

/** The codec behind payload type `pt` in `media`: its rtpmap, or the static table. */
function codecOf(media: SdpMedia, pt: number): G711Codec | "telephone-event" | undefined {
  const map = media.rtpmaps.find((r) => r.payloadType === pt);
  if (map === undefined) return pt === 0 ? "PCMU" : pt === 8 ? "PCMA" : undefined;
  if (map.clockRate !== 8000 || (map.channels ?? 1) !== 1) return undefined;
  const name = map.encoding.toUpperCase();
  if (name === "PCMU" || name === "PCMA") return name;
  return name === "TELEPHONE-EVENT" ? "telephone-event" : undefined;
}

function directionOf(session: SdpSession, media: SdpMedia): MediaDirection {
  return media.direction ?? session.direction ?? "sendrecv";
}

function sends(d: MediaDirection): boolean {
  return d === "sendrecv" || d === "sendonly";
}

function receives(d: MediaDirection): boolean {
  return d === "sendrecv" || d === "recvonly";
}

function toDirection(send: boolean, recv: boolean): MediaDirection {
  return send ? (recv ? "sendrecv" : "sendonly") : (recv ? "recvonly" : "inactive");
}

/** First codec of `media.formats` (peer order) that is in `ours`, with its payload type. */
function pickCodec(
  media: SdpMedia,
  ours: G711Codec[],
): { codec: G711Codec; pt: number } | undefined {
  for (const f of media.formats) {
    const pt = Number(f);
    if (!Number.isInteger(pt)) continue;
    const codec = codecOf(media, pt);
    if (codec !== undefined && codec !== "telephone-event" && ours.includes(codec)) {
      return { codec, pt };
    }
  }
  return undefined;
}

/** The peer's telephone-event payload type among `media.formats`, if any. */
function pickTelephoneEvent(media: SdpMedia): number | undefined {
  for (const f of media.formats) {
    const pt = Number(f);
    if (Number.isInteger(pt) && codecOf(media, pt) === "telephone-event") return pt;
  }
  return undefined;
}

/** Result of {@link buildAnswer}: the answer, or why not (the caller replies 488). */
export type AnswerResult =
  | { ok: true; answer: SdpSession; media: NegotiatedMedia }
  | { ok: false; reason: string; status: 488 };

/**
 * Answer `offer`: accept the first audio stream that the SRTP policy allows and that has a
 * codec we support (chosen by the peer's order), reject every other stream with port 0.
 */
export function buildAnswer(offer: SdpSession, opts: LocalMediaOptions): AnswerResult {
  const ours = opts.codecs ?? ["PCMU", "PCMA"];
  const want = opts.direction ?? "sendrecv";
  let chosen: NegotiatedMedia | undefined;
  let sawAudio = false;
  let sawSrtpMismatch = false;
  const media: SdpMedia[] = offer.media.map((m) => {
    const rejected: SdpMedia = {
      media: m.media,
      port: 0,
      proto: m.proto,
      formats: m.formats.slice(0, 1),
      bandwidth: [],
      rtpmaps: [],
      fmtp: new Map(),
      attributes: [],
    };
    if (chosen !== undefined || m.media !== "audio" || m.port === 0) return rejected;
    const security = streamSecurity(m, opts.srtp ?? "off");
    if (security === undefined) {
      if (isPlainProfile(m.proto) || isSecureProfile(m.proto)) sawSrtpMismatch = true;
      return rejected;
    }
    sawAudio = true;
    const codec = pickCodec(m, ours);
    const conn = m.connection ?? offer.connection;
    if (codec === undefined || conn === undefined) return rejected;
    const remoteDirection = directionOf(offer, m);
    const localDirection = toDirection(
      sends(want) && receives(remoteDirection),
      receives(want) && sends(remoteDirection),
    );
    const te = opts.telephoneEventPt === null ? undefined : pickTelephoneEvent(m);
    chosen = negotiated(codec, conn.address, m, remoteDirection, localDirection);
    const rtpmaps: RtpMap[] = [{ payloadType: codec.pt, encoding: codec.codec, clockRate: 8000 }];
    const fmtp = new Map<number, string>();
    if (te !== undefined) {
      chosen.telephoneEventPt = te;
      rtpmaps.push({ payloadType: te, encoding: "telephone-event", clockRate: 8000 });
      fmtp.set(te, m.fmtp.get(te) ?? "0-16");
    }
    const attributes: SdpAttribute[] = [];
    if (security.srtp) {
      const suite = security.offered.key.suite;
      const send = opts.srtpKey?.suite === suite ? opts.srtpKey : newSrtpKey(suite);
      chosen.srtp = { send, receive: security.offered.key };
      attributes.push({ name: "crypto", value: formatCrypto(security.offered.tag, send) });
    }
    return {
      media: "audio",
      port: opts.port,
      proto: m.proto,
      formats: rtpmaps.map((r) => String(r.payloadType)),
      bandwidth: [],
      rtpmaps,
      fmtp,
      ptime: opts.ptime ?? 20,
      direction: localDirection,
      attributes,
    };
  });
  if (chosen === undefined) {
    const reason = sawAudio
      ? "no common codec"
      : sawSrtpMismatch
      ? `no audio stream meets the SRTP policy (${opts.srtp ?? "off"})`
      : "no usable audio stream";
    return { ok: false, reason, status: 488 };
  }
  return { ok: true, answer: baseSession(opts, media), media: chosen };
}

/**
 * Read the negotiated media from the peer's answer to our offer (UAC side): the first accepted
 * audio stream and the first codec in it that we support. With `srtp`, the answer's crypto line
 * must match one of the offer's; under `required` an answer without one fails.
 *
 * @example
 * ```ts
 * import { acceptAnswer, type SdpSession } from "@flowcat/flowcat/sip";
 * declare const parsedAnswer: SdpSession;
 * declare function sendBye(): void;
 * const neg = acceptAnswer(parsedAnswer, "sendrecv");
 * if (!neg.ok) sendBye(); // the peer answered with nothing we can speak
 * ```
 */
export function acceptAnswer(
  answer: SdpSession,
  localDirection: MediaDirection = "sendrecv",
  codecs: G711Codec[] = ["PCMU", "PCMA"],
  srtp?: { policy: SrtpPolicy; offer: SdpSession },
): ParseResult<NegotiatedMedia> {
  for (const m of answer.media) {
    if (m.media !== "audio" || m.port === 0) continue;
    if (!isPlainProfile(m.proto) && !isSecureProfile(m.proto)) continue;
    const ours = srtp?.offer.media.find((o) => o.media === "audio");
    const keys = ours === undefined || srtp?.policy === "off" ? undefined : answeredSrtp(ours, m);
    if (keys === undefined && (isSecureProfile(m.proto) || srtp?.policy === "required")) {
      return fail("answer without a matching SRTP crypto line");
    }
    const codec = pickCodec(m, codecs);
    if (codec === undefined) return fail("no common codec");
    const conn = m.connection ?? answer.connection;
    if (conn === undefined) return fail("answer without connection address");
    const remoteDirection = directionOf(answer, m);
    const neg = negotiated(codec, conn.address, m, remoteDirection, localDirection);
    const te = pickTelephoneEvent(m);
    if (te !== undefined) neg.telephoneEventPt = te;
    if (keys !== undefined) neg.srtp = keys;
    return ok(neg);
  }
  return fail("answer accepts no audio stream");
}

/** What one audio stream settled on; on hold when the peer does not send or gives 0.0.0.0. */
function negotiated(
  codec: { codec: G711Codec; pt: number },
  address: string,
  m: SdpMedia,
  remoteDirection: MediaDirection,
  localDirection: MediaDirection,
): NegotiatedMedia {
  return {
    codec: codec.codec,
    payloadType: codec.pt,
    remoteAddress: address,
    remotePort: m.port,
    ptime: m.ptime ?? 20,
    remoteDirection,
    localDirection,
    hold: remoteDirection === "sendonly" || remoteDirection === "inactive" || address === "0.0.0.0",
  };
}
