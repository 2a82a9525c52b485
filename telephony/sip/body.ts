/**
 * Message bodies (RFC 3261 §7.4, §20.15; RFC 5621 for SIP multipart): the media type of a
 * Content-Type, and the session description of a request whether it comes as `application/sdp`
 * or as one part of a `multipart/mixed` body (SIP-I and SIP-T trunks put ISUP beside the SDP).
 * @module
 */

import { getHeader, type SipMessage } from "./message.ts";
import { parseParams } from "./params.ts";

/** `type/subtype` of a Content-Type value, lower-case, parameters dropped; "" when absent. */
export function mediaType(contentType: string | undefined): string {
  return (contentType ?? "").split(";")[0].trim().toLowerCase();
}

/** The parameters of a Content-Type value (`boundary`, `charset`, ...), or an empty map. */
function mediaParams(contentType: string): Map<string, string | null> {
  const semi = contentType.indexOf(";");
  return (semi < 0 ? undefined : parseParams(contentType.slice(semi))) ?? new Map();
}

/** One part of a multipart body. */
export interface BodyPart {
  /** The part's Content-Type (media type lower-case, as {@link mediaType} gives). */
  type: string;
  /** The part's content, without the CRLF that precedes the next delimiter. */
  content: string;
}

/**
 * Split a multipart body at its `boundary` (RFC 2046 §5.1.1). Returns undefined when the
 * boundary is missing or never opens a part.
 */
export function multipartParts(contentType: string, body: string): BodyPart[] | undefined {
  const boundary = mediaParams(contentType).get("boundary");
  if (typeof boundary !== "string" || boundary === "") return undefined;
  const delimiter = "--" + boundary;
  const chunks = body.split(delimiter);
  if (chunks.length < 2) return undefined;
  const parts: BodyPart[] = [];
  // chunks[0] is the preamble; a chunk starting with "--" is the close delimiter's epilogue.
  for (const chunk of chunks.slice(1)) {
    if (chunk.startsWith("--")) break;
    const text = chunk.replace(/^[ \t]*\r?\n/, "");
    const blank = /\r?\n\r?\n/.exec(text);
    const head = blank === null ? text : text.slice(0, blank.index);
    const content = blank === null ? "" : text.slice(blank.index + blank[0].length);
    const typeLine = /^content-type[ \t]*:[ \t]*(.*)$/im.exec(head);
    parts.push({
      type: mediaType(typeLine?.[1] ?? "text/plain"),
      content: content.replace(/\r?\n$/, ""),
    });
  }
  return parts;
}

/**
 * The SDP of a message: its body when the type is `application/sdp`, the first
 * `application/sdp` part of a `multipart/*` body, else undefined (no body, another type).
 *
 * @example
 * ```ts
 * import { sessionDescription, type SipMessage } from "@flowcat/flowcat/sip";
 * declare const invite: SipMessage;
 * declare function reply(status: number): void;
 * const sdp = sessionDescription(invite);
 * if (sdp === undefined) reply(415);
 * ```
 */
export function sessionDescription(msg: SipMessage): string | undefined {
  if (msg.body.trim() === "") return undefined;
  const contentType = getHeader(msg, "Content-Type") ?? "";
  const type = mediaType(contentType);
  if (type === "application/sdp") return msg.body;
  if (!type.startsWith("multipart/")) return undefined;
  return multipartParts(contentType, msg.body)?.find((p) => p.type === "application/sdp")
    ?.content;
}
