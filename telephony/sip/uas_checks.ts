/**
 * What a UAS checks before it acts on a request (RFC 3261 §8.2), in the RFC's order, as a pure
 * function: Max-Forwards exhausted (483, §16.3: OPTIONS is still answered), the method (405 for
 * one we know but do not take, 501 for one we do not know, both with Allow), the Request-URI
 * scheme (416), a merged request (482), `Require` options we lack (420 with Unsupported), the
 * body's encoding and type (415 with Accept-Encoding / Accept), and an `Accept` that rules out
 * SDP on an INVITE (406). Also the answer to a request that did not parse (400 or 505 with the
 * reason, 501 for an unknown method). ACK is never answered.
 * @module
 */

import { mediaType, sessionDescription } from "./body.ts";
import { buildResponse, newTag } from "./build.ts";
import { ALLOWED_METHODS } from "./core.ts";
import {
  getHeader,
  getHeaders,
  type SipHeader,
  type SipParseFailure,
  type SipRequest,
  type SipResponse,
} from "./message.ts";
import { isKnownScheme, parseUri } from "./uri.ts";

/** Methods the agent takes. */
export const ALLOWED: ReadonlySet<string> = new Set(ALLOWED_METHODS.split(/,\s*/));

/** Methods defined by RFC 3261 and its common extensions: refused 405, not 501. */
export const KNOWN_METHODS: ReadonlySet<string> = new Set([
  ...ALLOWED,
  "REGISTER",
  "SUBSCRIBE",
  "NOTIFY",
  "REFER",
  "MESSAGE",
  "PUBLISH",
  "UPDATE",
  "PRACK",
]);

/** `Require` option tags the agent implements (none yet: no 100rel, no session timers). */
export const SUPPORTED_EXTENSIONS: ReadonlySet<string> = new Set<string>();

/** Body types each method understands; a body of another type is refused 415. */
const BODY_TYPES: Readonly<Record<string, readonly string[]>> = {
  INVITE: ["application/sdp", "multipart/mixed"],
  INFO: ["application/dtmf-relay", "application/dtmf"],
  NOTIFY: ["message/sipfrag"],
};
const DEFAULT_BODY_TYPES = ["application/sdp"];

/** A refusal: the status, an optional reason phrase, and the headers RFC 3261 asks for. */
export interface Refusal {
  /** Status code. */
  status: number;
  /** Reason phrase; the standard one when absent. */
  reason?: string;
  /** Allow, Unsupported, Accept, ... */
  headers: SipHeader[];
}

/** What the transaction layer knows about the request. */
export interface CheckContext {
  /** The request arrived twice by different paths (RFC 3261 §8.2.2.2). */
  merged: boolean;
}

/** The refusal RFC 3261 §8.2 asks for, or undefined when the request may proceed. */
export function checkRequest(req: SipRequest, ctx: CheckContext): Refusal | undefined {
  const m = req.method;
  if (m === "ACK") return undefined;
  const allow = { name: "Allow", value: ALLOWED_METHODS };
  // §16.3 step 3 (the rule for any element that would forward): no hops left is a loop; an
  // OPTIONS is still answered, as RFC 4475 §3.3.11 expects of an endpoint.
  if (/^\s*0+\s*$/.test(getHeader(req, "Max-Forwards") ?? "") && m !== "OPTIONS") {
    return { status: 483, headers: [] };
  }
  if (!ALLOWED.has(m)) return { status: KNOWN_METHODS.has(m) ? 405 : 501, headers: [allow] };
  const ruri = parseUri(req.uri);
  if (!ruri.ok || !isKnownScheme(ruri.value.scheme)) return { status: 416, headers: [] };
  if (ctx.merged) return { status: 482, reason: "Loop Detected (merged request)", headers: [] };
  if (m === "CANCEL") return undefined;
  const unsupported = getHeaders(req, "Require").filter((o) =>
    !SUPPORTED_EXTENSIONS.has(o.toLowerCase())
  );
  if (unsupported.length > 0) {
    return { status: 420, headers: [{ name: "Unsupported", value: unsupported.join(", ") }] };
  }
  const body = bodyRefusal(req);
  if (body !== undefined) return body;
  if (m === "INVITE" && !acceptsSdp(getHeaders(req, "Accept"))) {
    return {
      status: 406,
      headers: [{ name: "Warning", value: '399 - "responses carry application/sdp only"' }],
    };
  }
  return undefined;
}

/** 415 for a body we would have to understand and cannot (§8.2.3), else undefined. */
function bodyRefusal(req: SipRequest): Refusal | undefined {
  const encodings = getHeaders(req, "Content-Encoding").filter((e) =>
    e.toLowerCase() !== "identity"
  );
  if (encodings.length > 0) {
    return { status: 415, headers: [{ name: "Accept-Encoding", value: "identity" }] };
  }
  if (req.body.trim() === "") return undefined;
  // RFC 3261 §20.11: a part marked handling=optional may be ignored.
  if (/;\s*handling\s*=\s*optional/i.test(getHeader(req, "Content-Disposition") ?? "")) {
    return undefined;
  }
  const types = BODY_TYPES[req.method] ?? DEFAULT_BODY_TYPES;
  const type = mediaType(getHeader(req, "Content-Type"));
  const usable = type.startsWith("multipart/")
    ? types.includes(type) && sessionDescription(req) !== undefined
    : types.includes(type);
  if (usable) return undefined;
  const accept = types.filter((t) => !t.startsWith("multipart/")).join(", ");
  return { status: 415, headers: [{ name: "Accept", value: accept }] };
}

/** True when an Accept list (absent means application/sdp, §20.1) admits SDP. */
function acceptsSdp(accept: string[]): boolean {
  if (accept.length === 0) return true;
  return accept.some((a) => {
    const t = mediaType(a);
    return t === "application/sdp" || t === "application/*" || t === "*/*" || t === "";
  });
}

/** Printable ASCII only, at most 100 characters: safe as a reason phrase. */
function phrase(text: string): string {
  return text.replace(/[^\x20-\x7e]/g, "?").slice(0, 100);
}

/**
 * The answer to a request that did not parse but can still be answered: 505 for another SIP
 * version, 501 for an unknown method, else 400 with the parser's reason in the phrase. Undefined
 * for what must not be answered (an ACK, a response, a request without Via).
 *
 * @example
 * ```ts
 * import { answerMalformed, parseSipMessage, type TransactionLayer, type UdpAddress } from "@flowcat/flowcat/sip";
 * declare const datagram: Uint8Array;
 * declare const layer: TransactionLayer;
 * declare const from: UdpAddress;
 * const r = parseSipMessage(datagram);
 * const res = r.ok ? undefined : answerMalformed(r);
 * if (res) layer.sendStateless(res, from);
 * ```
 */
export function answerMalformed(
  failure: SipParseFailure,
  headers: SipHeader[] = [],
): SipResponse | undefined {
  const req = failure.request;
  if (req === undefined || req.method === "ACK" || getHeaders(req, "Via").length === 0) {
    return undefined;
  }
  let status = failure.status ?? 400;
  if (status === 400 && !KNOWN_METHODS.has(req.method)) status = 501;
  const reason = status === 400
    ? `Bad Request (${phrase(failure.reason)})`
    : status === 505
    ? "Version Not Supported"
    : "Not Implemented";
  const extra = status === 501 ? [{ name: "Allow", value: ALLOWED_METHODS }] : [];
  return buildResponse(req, status, { reason, toTag: newTag(), headers: [...extra, ...headers] });
}
