/**
 * SDP session description model, parser and formatter (RFC 4566), as far as audio telephony
 * needs: origin, connection, media lines, rtpmap / fmtp / ptime and direction attributes.
 * Offer/answer lives in `sdp.ts`, which re-exports this module.
 * @module
 */

import { fail, ok, type ParseResult } from "./result.ts";

/** Media direction attribute (RFC 3264 §5.1); absent means sendrecv. */
export type MediaDirection = "sendrecv" | "sendonly" | "recvonly" | "inactive";

const DIRECTIONS = new Set<string>(["sendrecv", "sendonly", "recvonly", "inactive"]);

/** `c=` connection data. */
export interface SdpConnection {
  /** Network type, `IN`. */
  netType: string;
  /** `IP4` or `IP6`. */
  addrType: string;
  /** Unicast address (any `/ttl` suffix removed). */
  address: string;
}

/** `o=` origin. */
export interface SdpOrigin {
  /** Originator's user name (`-` when none). */
  username: string;
  /** Session id, a decimal string (may exceed 2^53). */
  sessionId: string;
  /** Session version, a decimal string; bumped on every changed re-offer. */
  sessionVersion: string;
  /** Network type, `IN`. */
  netType: string;
  /** `IP4` or `IP6`. */
  addrType: string;
  /** Originator's address. */
  address: string;
}

/** One `a=rtpmap:<pt> <encoding>/<clock>[/<channels>]`. */
export interface RtpMap {
  /** RTP payload type the map is for. */
  payloadType: number;
  /** Encoding name as written (compare case-insensitively). */
  encoding: string;
  /** Clock rate, Hz. */
  clockRate: number;
  /** Channel count, when given. */
  channels?: number;
}

/** A generic attribute (`a=name` or `a=name:value`). */
export interface SdpAttribute {
  /** Attribute name. */
  name: string;
  /** Attribute value; absent for a flag attribute (`a=name`). */
  value?: string;
}

/** One `m=` section. */
export interface SdpMedia {
  /** `audio`, `video`, ... */
  media: string;
  /** Transport port; 0 rejects or disables the stream. */
  port: number;
  /** Port count from `port/count`, when given. */
  portCount?: number;
  /** `RTP/AVP`, ... */
  proto: string;
  /** Formats in preference order (payload type numbers as strings for RTP). */
  formats: string[];
  /** Media-level `c=` (overrides the session-level one). */
  connection?: SdpConnection;
  /** `b=` lines, verbatim values. */
  bandwidth: string[];
  /** `a=rtpmap` entries. */
  rtpmaps: RtpMap[];
  /** `a=fmtp:<pt> <params>` by payload type. */
  fmtp: Map<number, string>;
  /** `a=ptime` in ms. */
  ptime?: number;
  /** Media-level direction attribute. */
  direction?: MediaDirection;
  /** Other attributes in order. */
  attributes: SdpAttribute[];
}

/** A parsed session description. */
export interface SdpSession {
  /** `o=` origin. */
  origin: SdpOrigin;
  /** `s=` session name (`-` when none). */
  name: string;
  /** `i=`, `u=`, `e=`, `p=` lines kept for round-trips, as [type, value]. */
  info: [string, string][];
  /** Session-level `c=`. */
  connection?: SdpConnection;
  /** Session-level `b=` lines. */
  bandwidth: string[];
  /** `t=` value, `0 0` for a permanent session. */
  timing: string;
  /** Session-level direction attribute. */
  direction?: MediaDirection;
  /** Other session-level attributes in order. */
  attributes: SdpAttribute[];
  /** Media sections in order. */
  media: SdpMedia[];
}

function parseConnection(value: string): SdpConnection | undefined {
  const p = value.trim().split(/\s+/);
  if (p.length !== 3) return undefined;
  return { netType: p[0], addrType: p[1].toUpperCase(), address: p[2].split("/")[0] };
}

function parseMediaLine(value: string): SdpMedia | undefined {
  const m = /^(\S+)\s+(\d{1,5})(?:\/(\d+))?\s+(\S+)\s+(.+)$/.exec(value.trim());
  if (m === null) return undefined;
  const port = Number(m[2]);
  if (port > 65535) return undefined;
  const media: SdpMedia = {
    media: m[1].toLowerCase(),
    port,
    proto: m[4],
    formats: m[5].trim().split(/\s+/),
    bandwidth: [],
    rtpmaps: [],
    fmtp: new Map(),
    attributes: [],
  };
  if (m[3] !== undefined) media.portCount = Number(m[3]);
  return media;
}

/**
 * Apply one `a=` line to a media section. A malformed rtpmap / fmtp / ptime is kept as a
 * generic attribute: RFC 4566 lets parsers ignore attributes they cannot use.
 */
function mediaAttribute(media: SdpMedia, name: string, value: string | undefined): void {
  if (name === "rtpmap") {
    const m = /^(\d{1,3})\s+([^/\s]+)\/(\d+)(?:\/(\d+))?\s*$/.exec(value ?? "");
    if (m !== null) {
      const map: RtpMap = { payloadType: Number(m[1]), encoding: m[2], clockRate: Number(m[3]) };
      if (m[4] !== undefined) map.channels = Number(m[4]);
      media.rtpmaps.push(map);
      return;
    }
  } else if (name === "fmtp") {
    const m = /^(\d{1,3})\s+(.*)$/.exec(value ?? "");
    if (m !== null) {
      media.fmtp.set(Number(m[1]), m[2].trim());
      return;
    }
  } else if (name === "ptime") {
    const n = Number(value);
    if (n > 0) {
      media.ptime = n;
      return;
    }
  } else if (DIRECTIONS.has(name) && value === undefined) {
    media.direction = name as MediaDirection;
    return;
  }
  media.attributes.push(value === undefined ? { name } : { name, value });
}

/**
 * Parse an SDP body. Lenient on unknown line types and attributes; strict on the lines a
 * media path depends on (v, o, c, m). Never throws.
 *
 * @example
 * ```ts
 * const r = parseSdp("v=0\r\no=- 1 1 IN IP4 10.0.0.1\r\ns=-\r\nc=IN IP4 10.0.0.1\r\nt=0 0\r\n" +
 *   "m=audio 40000 RTP/AVP 0\r\n");
 * if (r.ok) r.value.media[0].port; // 40000
 * ```
 */
export function parseSdp(text: string): ParseResult<SdpSession> {
  const lines = text.split(/\r?\n/).filter((l) => l.trim() !== "");
  if (lines.length === 0 || lines[0].trim() !== "v=0") return fail("SDP must start with v=0");
  let origin: SdpOrigin | undefined;
  const session: Omit<SdpSession, "origin"> = {
    name: "-",
    info: [],
    bandwidth: [],
    timing: "0 0",
    attributes: [],
    media: [],
  };
  let media: SdpMedia | undefined;
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i];
    if (line.length < 2 || line[1] !== "=" || !/[a-z]/.test(line[0])) {
      return fail(`bad SDP line ${i + 1}`);
    }
    const type = line[0];
    const value = line.slice(2).replace(/\r$/, "");
    switch (type) {
      case "o": {
        const p = value.trim().split(/\s+/);
        if (p.length !== 6 || !/^\d+$/.test(p[1]) || !/^\d+$/.test(p[2])) {
          return fail("bad o= line");
        }
        origin = {
          username: p[0],
          sessionId: p[1],
          sessionVersion: p[2],
          netType: p[3],
          addrType: p[4].toUpperCase(),
          address: p[5],
        };
        break;
      }
      case "s":
        session.name = value;
        break;
      case "t":
        session.timing = value.trim();
        break;
      case "c": {
        const c = parseConnection(value);
        if (c === undefined) return fail("bad c= line");
        if (media) media.connection = c;
        else session.connection = c;
        break;
      }
      case "b":
        (media ?? session).bandwidth.push(value.trim());
        break;
      case "m": {
        const m = parseMediaLine(value);
        if (m === undefined) return fail("bad m= line");
        media = m;
        session.media.push(m);
        break;
      }
      case "a": {
        const colon = value.indexOf(":");
        const name = (colon < 0 ? value : value.slice(0, colon)).trim();
        const attrValue = colon < 0 ? undefined : value.slice(colon + 1).trim();
        if (media) mediaAttribute(media, name, attrValue);
        else if (DIRECTIONS.has(name) && attrValue === undefined) {
          session.direction = name as MediaDirection;
        } else {
          session.attributes.push(attrValue === undefined ? { name } : { name, value: attrValue });
        }
        break;
      }
      case "i":
      case "u":
      case "e":
      case "p":
        if (!media) session.info.push([type, value]);
        break;
      default:
        break; // r=, z=, k= and unknown types: ignored (RFC 4566 §5 lets parsers skip them)
    }
  }
  if (origin === undefined) return fail("SDP without o= line");
  return ok({ origin, ...session });
}

function formatConnection(c: SdpConnection): string {
  return `c=${c.netType} ${c.addrType} ${c.address}\r\n`;
}

function formatAttribute(a: SdpAttribute): string {
  return a.value === undefined ? `a=${a.name}\r\n` : `a=${a.name}:${a.value}\r\n`;
}

/**
 * Format a session description as CRLF text in RFC 4566 line order.
 *
 * @example
 * ```ts
 * import { buildOffer, formatSdp } from "@flowcat/flowcat/sip";
 * formatSdp(buildOffer({ address: "192.0.2.10", port: 40000 })); // "v=0\r\no=- ..."
 * ```
 */
export function formatSdp(s: SdpSession): string {
  const o = s.origin;
  let out = "v=0\r\n";
  out +=
    `o=${o.username} ${o.sessionId} ${o.sessionVersion} ${o.netType} ${o.addrType} ${o.address}\r\n`;
  out += `s=${s.name === "" ? "-" : s.name}\r\n`;
  for (const [type, value] of s.info) out += `${type}=${value}\r\n`;
  if (s.connection) out += formatConnection(s.connection);
  for (const b of s.bandwidth) out += `b=${b}\r\n`;
  out += `t=${s.timing}\r\n`;
  for (const a of s.attributes) out += formatAttribute(a);
  if (s.direction) out += `a=${s.direction}\r\n`;
  for (const m of s.media) {
    const port = m.portCount === undefined ? `${m.port}` : `${m.port}/${m.portCount}`;
    out += `m=${m.media} ${port} ${m.proto} ${m.formats.join(" ")}\r\n`;
    if (m.connection) out += formatConnection(m.connection);
    for (const b of m.bandwidth) out += `b=${b}\r\n`;
    for (const r of m.rtpmaps) {
      const ch = r.channels === undefined ? "" : `/${r.channels}`;
      out += `a=rtpmap:${r.payloadType} ${r.encoding}/${r.clockRate}${ch}\r\n`;
    }
    for (const [pt, params] of m.fmtp) out += `a=fmtp:${pt} ${params}\r\n`;
    if (m.ptime !== undefined) out += `a=ptime:${m.ptime}\r\n`;
    for (const a of m.attributes) out += formatAttribute(a);
    if (m.direction) out += `a=${m.direction}\r\n`;
  }
  return out;
}
