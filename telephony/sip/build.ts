/**
 * Pure helpers for building SIP messages: responses that copy the request's Via / From / To /
 * Call-ID / CSeq (RFC 3261 §8.2.6), random branch / tag / Call-ID values, reason phrases, and
 * typed getters over a parsed message.
 * @module
 */

import {
  BRANCH_COOKIE,
  type CSeq,
  type NameAddr,
  parseCSeq,
  parseNameAddr,
  parseVia,
  type Via,
} from "./address.ts";
import {
  getHeader,
  getHeaders,
  type SipHeader,
  type SipRequest,
  type SipResponse,
} from "./message.ts";

const REASONS: Readonly<Record<number, string>> = Object.freeze({
  100: "Trying",
  180: "Ringing",
  181: "Call Is Being Forwarded",
  182: "Queued",
  183: "Session Progress",
  200: "OK",
  202: "Accepted",
  301: "Moved Permanently",
  302: "Moved Temporarily",
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  406: "Not Acceptable",
  407: "Proxy Authentication Required",
  408: "Request Timeout",
  415: "Unsupported Media Type",
  420: "Bad Extension",
  423: "Interval Too Brief",
  480: "Temporarily Unavailable",
  481: "Call/Transaction Does Not Exist",
  482: "Loop Detected",
  483: "Too Many Hops",
  484: "Address Incomplete",
  486: "Busy Here",
  487: "Request Terminated",
  488: "Not Acceptable Here",
  491: "Request Pending",
  500: "Server Internal Error",
  501: "Not Implemented",
  503: "Service Unavailable",
  504: "Server Time-out",
  505: "Version Not Supported",
  600: "Busy Everywhere",
  603: "Decline",
  604: "Does Not Exist Anywhere",
  606: "Not Acceptable",
});

/**
 * The standard reason phrase for `status`, or a generic one for its class.
 *
 * @example
 * ```ts
 * reasonPhrase(488); // "Not Acceptable Here"
 * ```
 */
export function reasonPhrase(status: number): string {
  return REASONS[status] ??
    ["Unknown", "Provisional", "Success", "Redirection", "Client Error", "Server Error"][
      Math.floor(status / 100)
    ] ?? "Global Failure";
}

/** `n` random bytes as lower-case hex. */
export function randomHex(bytes: number): string {
  const buf = crypto.getRandomValues(new Uint8Array(bytes));
  let out = "";
  for (const b of buf) out += b.toString(16).padStart(2, "0");
  return out;
}

/** A fresh transaction branch: the `z9hG4bK` cookie plus 64 random bits. */
export function newBranch(): string {
  return BRANCH_COOKIE + randomHex(8);
}

/** A fresh From/To tag (64 random bits). */
export function newTag(): string {
  return randomHex(8);
}

/** A fresh globally unique Call-ID, `<128 random bits>@host`. */
export function newCallId(host: string): string {
  return `${randomHex(16)}@${host}`;
}

/** Options for {@link buildResponse}. */
export interface ResponseOptions {
  /** Reason phrase; defaults to {@link reasonPhrase}. */
  reason?: string;
  /** Tag to add to To when it has none (never added to a 100 Trying). */
  toTag?: string;
  /** Extra headers appended after the copied ones (Contact, Allow, WWW-Authenticate, ...). */
  headers?: SipHeader[];
  /** Body; Content-Type must be set with it. */
  body?: string;
  /** Content-Type of `body`. */
  contentType?: string;
}

/**
 * Build a response to `req`: Via (all, in order), From, To (plus `toTag`), Call-ID and CSeq
 * copied; Record-Route copied into 18x/2xx responses to INVITE so the dialog gets its route set.
 *
 * @example
 * ```ts
 * import { buildResponse, newTag, type SipRequest } from "@flowcat/flowcat/sip";
 * declare const invite: SipRequest;
 * const ringing = buildResponse(invite, 180, { toTag: newTag() });
 * ```
 */
export function buildResponse(
  req: SipRequest,
  status: number,
  opts: ResponseOptions = {},
): SipResponse {
  const headers: SipHeader[] = [];
  for (const v of getHeaders(req, "Via")) headers.push({ name: "Via", value: v });
  // A header the request lacks (a malformed request answered 400) stays absent.
  const copy = (name: string, value = getHeader(req, name)) => {
    if (value !== undefined) headers.push({ name, value });
  };
  copy("From");
  let to = getHeader(req, "To");
  if (to !== undefined && opts.toTag !== undefined && status > 100) {
    const parsed = parseNameAddr(to);
    if (parsed.ok && !parsed.value.params.has("tag")) to += `;tag=${opts.toTag}`;
  }
  copy("To", to);
  copy("Call-ID");
  copy("CSeq");
  if (req.method === "INVITE" && status > 100 && status < 300) {
    for (const rr of getHeaders(req, "Record-Route")) {
      headers.push({ name: "Record-Route", value: rr });
    }
  }
  if (opts.headers) headers.push(...opts.headers);
  const body = opts.body ?? "";
  if (body !== "" && opts.contentType !== undefined) {
    headers.push({ name: "Content-Type", value: opts.contentType });
  }
  return { kind: "response", status, reason: opts.reason ?? reasonPhrase(status), headers, body };
}

/** A request from its parts (Content-Length is added by the serializer). */
export function buildRequest(
  method: string,
  uri: string,
  headers: SipHeader[],
  body = "",
): SipRequest {
  return { kind: "request", method, uri, headers, body };
}

/** The parsed top Via, or undefined when absent or malformed. */
export function topVia(msg: SipRequest | SipResponse): Via | undefined {
  const v = getHeader(msg, "Via");
  if (v === undefined) return undefined;
  const r = parseVia(v);
  return r.ok ? r.value : undefined;
}

/** The parsed CSeq, or undefined when absent or malformed. */
export function cseqOf(msg: SipRequest | SipResponse): CSeq | undefined {
  const v = getHeader(msg, "CSeq");
  if (v === undefined) return undefined;
  const r = parseCSeq(v);
  return r.ok ? r.value : undefined;
}

/** The parsed name-addr of header `name` (From, To, Contact, ...), or undefined. */
export function addressOf(msg: SipRequest | SipResponse, name: string): NameAddr | undefined {
  const v = getHeader(msg, name);
  if (v === undefined) return undefined;
  const r = parseNameAddr(v);
  return r.ok ? r.value : undefined;
}

/** The `tag` parameter of From or To, or undefined. */
export function tagOf(msg: SipRequest | SipResponse, name: "From" | "To"): string | undefined {
  const tag = addressOf(msg, name)?.params.get("tag");
  return typeof tag === "string" && tag !== "" ? tag : undefined;
}
