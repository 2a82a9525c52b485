// Over 400 lines: one grammar's parser and serializer, each rule beside its inverse.
/**
 * SIP message parser and serializer (RFC 3261 §7, §18.3). Pure and synchronous: a datagram
 * in, a {@link SipMessage} or `{ ok: false, reason }` out; never throws on peer input.
 *
 * The parser expands compact header names, unfolds continuation lines, splits comma-joined
 * values of list headers (Via, Contact, Route, ...) into separate entries, and frames the body
 * by Content-Length (on UDP a missing Content-Length means "the rest of the datagram").
 *
 * @example
 * ```ts
 * import { parseSipMessage, serializeSipMessage } from "@flowcat/flowcat/sip";
 * declare const datagram: Uint8Array;
 * const r = parseSipMessage(datagram);
 * if (r.ok) console.log(r.message.kind, serializeSipMessage(r.message));
 * ```
 * @module
 */

import { parseCSeq, parseNameAddr, parseVia } from "./address.ts";
import { parseUri } from "./uri.ts";
import {
  canonicalHeaderName,
  isMultiValueHeader,
  isValidHeaderName,
  splitOutside,
} from "./headers.ts";

/** One header entry; comma-joined list values are stored as separate entries. */
export interface SipHeader {
  /** Canonical header name (compact forms expanded). */
  name: string;
  /** Value with surrounding whitespace removed and folded lines joined by one space. */
  value: string;
}

/** A SIP request. */
export interface SipRequest {
  /** Discriminant: this is a request. */
  kind: "request";
  /** Method, case-sensitive (`INVITE`, `ACK`, ...). */
  method: string;
  /** Request-URI as written. */
  uri: string;
  /** Headers in wire order. */
  headers: SipHeader[];
  /** Body text (UTF-8); empty when none. */
  body: string;
}

/** A SIP response. */
export interface SipResponse {
  /** Discriminant: this is a response. */
  kind: "response";
  /** Status code, 100 to 699. */
  status: number;
  /** Reason phrase (may be empty). */
  reason: string;
  /** Headers in wire order. */
  headers: SipHeader[];
  /** Body text (UTF-8); empty when none. */
  body: string;
}

/** A SIP request or response. */
export type SipMessage = SipRequest | SipResponse;

/** Options for {@link parseSipMessage}. */
export interface SipParseOptions {
  /** Stream transport (TCP/TLS): Content-Length is mandatory and a short buffer is "incomplete". */
  stream?: boolean;
  /** Check the mandatory headers (Via, From, To, Call-ID, CSeq) and their syntax. Default true. */
  validate?: boolean;
}

/** A message that did not parse. */
export interface SipParseFailure {
  /** Discriminant. */
  ok: false;
  /** Why, in a few words (safe to log and to put in a reason phrase). */
  reason: string;
  /** A stream buffer that may still complete. */
  incomplete?: boolean;
  /** Only CR/LF bytes: an RFC 5626 keep-alive. */
  keepAlive?: boolean;
  /**
   * The request as far as it could be read, when the start line looked like a request and the
   * header section split into headers: enough to answer it (RFC 3261 §21.4.1, RFC 4475 §3.1.2).
   */
  request?: SipRequest;
  /** The status RFC 3261 asks for when `request` is set: 400, or 505 for another version. */
  status?: number;
}

/** Result of {@link parseSipMessage}. */
export type SipParseResult =
  | { ok: true; message: SipMessage; consumed: number }
  | SipParseFailure;

/** Largest message accepted; a UDP datagram cannot be larger anyway. */
export const MAX_MESSAGE_BYTES = 65535;
/** Most header entries accepted in one message (a bound against hostile input). */
export const MAX_HEADERS = 256;

/** RFC 3261 §25.1 Request-Line: exactly one SP between the three parts, none after. */
const REQUEST_LINE = /^([A-Za-z0-9\-.!%*_+`'~]+) (\S+) (SIP\/\d+\.\d+)$/i;
/** A Request-Line with the wrong whitespace: still answerable (RFC 4475 §3.1.2.8-10). */
const LOOSE_REQUEST_LINE = /^([A-Za-z0-9\-.!%*_+`'~]+)[ \t]+(.*?)[ \t]+(SIP\/\S+)[ \t]*$/i;
const STATUS_LINE = /^(SIP\/\d+\.\d+)[ \t]+(\d{3})(?:[ \t]+(.*))?$/i;
const decoder = new TextDecoder();
const encoder = new TextEncoder();

function failure(
  reason: string,
  extra?: { incomplete?: boolean; keepAlive?: boolean },
): SipParseFailure {
  return { ok: false, reason, ...extra };
}

/** A failure that can still be answered with `status`. */
function answerable(reason: string, request: SipRequest, status = 400): SipParseFailure {
  return { ok: false, reason, request, status };
}

/** Index of the blank line ending the headers, and the separator length (CRLFCRLF or LFLF). */
function findHeaderEnd(bytes: Uint8Array, from: number): [number, number] | undefined {
  for (let i = from; i < bytes.length - 1; i++) {
    if (bytes[i] !== 0x0a) continue;
    if (bytes[i + 1] === 0x0a) return [i, 2];
    if (bytes[i + 1] === 0x0d && bytes[i + 2] === 0x0a) return [i, 3];
  }
  return undefined;
}

/**
 * Parse one SIP message from a datagram (or the front of a stream buffer).
 * Leading CRLFs are skipped; a datagram of only CRLFs is reported with `keepAlive: true`.
 *
 * @example
 * ```ts
 * const r = parseSipMessage("OPTIONS sip:a@b SIP/2.0\r\n...\r\n\r\n");
 * if (!r.ok) console.warn("dropped:", r.reason);
 * ```
 */
export function parseSipMessage(
  input: Uint8Array | string,
  options: SipParseOptions = {},
): SipParseResult {
  const bytes = typeof input === "string" ? encoder.encode(input) : input;
  if (bytes.length > MAX_MESSAGE_BYTES) return failure("message too large");
  let start = 0;
  while (start < bytes.length && (bytes[start] === 0x0d || bytes[start] === 0x0a)) start++;
  if (start === bytes.length) return failure("empty message (keep-alive)", { keepAlive: true });
  const end = findHeaderEnd(bytes, start);
  if (end === undefined) {
    return options.stream
      ? failure("incomplete message", { incomplete: true })
      : failure("no blank line after headers");
  }
  // The head ends at the LF before the blank line; the CR of that line is stripped below.
  const head = decoder.decode(bytes.subarray(start, end[0]));
  const lines = head.split(/\r?\n/);
  const startLine = lines[0].replace(/\r$/, "");
  const headers: SipHeader[] = [];
  let current: string | undefined;
  const flush = (): string | undefined => {
    if (current === undefined) return undefined;
    const reason = pushHeader(headers, current);
    current = undefined;
    return reason;
  };
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i].replace(/\r$/, "");
    if (line.startsWith(" ") || line.startsWith("\t")) {
      if (current === undefined) return failure("continuation line before any header");
      current += " " + line.trim();
      continue;
    }
    const reason = flush();
    if (reason !== undefined) return failure(reason);
    current = line;
  }
  const lastReason = flush();
  if (lastReason !== undefined) return failure(lastReason);
  if (headers.length > MAX_HEADERS) return failure("too many headers");

  const strict = REQUEST_LINE.exec(startLine);
  const loose = strict === null ? LOOSE_REQUEST_LINE.exec(startLine) : null;
  const reqLine = strict ?? loose;
  // Set while the message is a request, so every later failure can still be answered.
  const partial: SipRequest | undefined = reqLine === null
    ? undefined
    : { kind: "request", method: reqLine[1], uri: reqLine[2], headers, body: "" };
  const fail = (reason: string, status?: number): SipParseFailure =>
    partial === undefined ? failure(reason) : answerable(reason, partial, status);

  let contentLength: number | undefined;
  for (const h of headers) {
    if (h.name !== "Content-Length") continue;
    if (!/^\d{1,10}$/.test(h.value)) return fail("bad Content-Length");
    const n = Number(h.value);
    if (contentLength !== undefined && n !== contentLength) {
      return fail("conflicting Content-Length headers");
    }
    contentLength = n;
  }
  const bodyStart = end[0] + end[1];
  let bodyEnd: number;
  if (contentLength === undefined) {
    if (options.stream) return failure("missing Content-Length on a stream transport");
    bodyEnd = bytes.length;
  } else {
    bodyEnd = bodyStart + contentLength;
    if (bodyEnd > bytes.length) {
      return options.stream
        ? failure("incomplete message", { incomplete: true })
        : fail("body shorter than Content-Length");
    }
  }
  const body = bodyEnd > bodyStart ? decoder.decode(bytes.subarray(bodyStart, bodyEnd)) : "";

  let message: SipMessage;
  if (partial !== undefined) {
    partial.body = body;
    if (reqLine![3].toUpperCase() !== "SIP/2.0") {
      return fail(`unsupported SIP version '${reqLine![3]}'`, 505);
    }
    if (loose !== null) return fail("malformed Request-Line");
    const uriProblem = requestUriProblem(partial.uri);
    if (uriProblem !== undefined) return fail(uriProblem);
    message = partial;
  } else {
    const res = STATUS_LINE.exec(startLine);
    if (res === null) return failure("bad start line");
    if (res[1].toUpperCase() !== "SIP/2.0") return failure(`unsupported SIP version '${res[1]}'`);
    const status = Number(res[2]);
    if (status < 100 || status > 699) return failure("status code out of range");
    message = { kind: "response", status, reason: (res[3] ?? "").trim(), headers, body };
  }
  if (options.validate !== false) {
    const reason = validate(message);
    if (reason !== undefined) return fail(reason);
  }
  return { ok: true, message, consumed: bodyEnd };
}

/**
 * Why a Request-URI is malformed (RFC 3261 §25.1, §19.1.1), or undefined. An unknown scheme is
 * well formed: the UAS answers 416 for it, not 400.
 */
function requestUriProblem(uri: string): string | undefined {
  const r = parseUri(uri);
  if (!r.ok) return `bad Request-URI (${r.reason})`;
  if (r.value.headers.length > 0) return "headers are not allowed in a Request-URI";
  return undefined;
}

/** Add one unfolded header line to `headers`; returns a reason when the line is malformed. */
function pushHeader(headers: SipHeader[], line: string): string | undefined {
  const colon = line.indexOf(":");
  if (colon <= 0) return "header line without ':'";
  const rawName = line.slice(0, colon).trimEnd();
  if (!isValidHeaderName(rawName)) return "bad header name";
  const name = canonicalHeaderName(rawName);
  const value = line.slice(colon + 1).trim();
  if (!isMultiValueHeader(name)) {
    headers.push({ name, value });
    return undefined;
  }
  const parts = splitOutside(value, ",");
  if (parts === undefined) return `unbalanced quote or bracket in ${name}`;
  if (parts.length === 0) headers.push({ name, value: "" });
  for (const part of parts) headers.push({ name, value: part });
  return undefined;
}

/** Headers a message may carry at most once (RFC 3261 §7.3.1: not comma-separable). */
const SINGLE = ["Call-ID", "CSeq", "From", "To", "Max-Forwards", "Content-Type"];

/** The mandatory-header and syntax checks of RFC 3261 §8.1.1 / §8.2.2; undefined when fine. */
function validate(msg: SipMessage): string | undefined {
  for (const name of ["Call-ID", "CSeq", "From", "To", "Via"]) {
    const values = getHeaders(msg, name);
    if (values.length === 0 || values[0] === "") return `missing ${name}`;
  }
  for (const name of SINGLE) {
    if (getHeaders(msg, name).length > 1) return `more than one ${name}`;
  }
  const cseq = parseCSeq(getHeader(msg, "CSeq")!);
  if (!cseq.ok) return cseq.reason;
  if (msg.kind === "request" && cseq.value.method !== msg.method) {
    return "CSeq method does not match the request method";
  }
  for (const name of ["From", "To"]) {
    const addr = parseNameAddr(getHeader(msg, name)!);
    if (!addr.ok) return `bad ${name}: ${addr.reason}`;
  }
  for (const c of getHeaders(msg, "Contact")) {
    if (c === "*") continue;
    const addr = parseNameAddr(c);
    if (!addr.ok) return `bad Contact: ${addr.reason}`;
  }
  for (const v of getHeaders(msg, "Via")) {
    const via = parseVia(v);
    if (!via.ok) return via.reason;
  }
  const mf = getHeader(msg, "Max-Forwards");
  if (mf !== undefined && !/^\d{1,10}$/.test(mf)) return "bad Max-Forwards";
  return undefined;
}

/** Lower-cased canonical form of a header name, for comparisons. */
function key(name: string): string {
  return canonicalHeaderName(name).toLowerCase();
}

/**
 * The first value of header `name` (any case, compact or long form), or undefined.
 *
 * @example
 * ```ts
 * import { getHeader, type SipMessage } from "@flowcat/flowcat/sip";
 * declare const msg: SipMessage;
 * getHeader(msg, "i") === getHeader(msg, "Call-ID"); // true
 * ```
 */
export function getHeader(msg: { headers: SipHeader[] }, name: string): string | undefined {
  const k = key(name);
  for (const h of msg.headers) if (key(h.name) === k) return h.value;
  return undefined;
}

/** All values of header `name` in wire order (list headers already split at commas). */
export function getHeaders(msg: { headers: SipHeader[] }, name: string): string[] {
  const k = key(name);
  const out: string[] = [];
  for (const h of msg.headers) if (key(h.name) === k) out.push(h.value);
  return out;
}

/** Replace every entry of header `name` with one entry holding `value` (kept in place). */
export function setHeader(msg: { headers: SipHeader[] }, name: string, value: string): void {
  const k = key(name);
  const idx = msg.headers.findIndex((h) => key(h.name) === k);
  removeHeader(msg, name);
  const entry = { name: canonicalHeaderName(name), value };
  if (idx < 0) msg.headers.push(entry);
  else msg.headers.splice(idx, 0, entry);
}

/** Remove every entry of header `name`. */
export function removeHeader(msg: { headers: SipHeader[] }, name: string): void {
  const k = key(name);
  msg.headers = msg.headers.filter((h) => key(h.name) !== k);
}

/** Number of bytes `text` takes in UTF-8, without encoding it. */
export function utf8Length(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n += 4;
        i++;
      } else n += 3;
    } else n += 3;
  }
  return n;
}

/**
 * Serialize to CRLF wire text. Content-Length is always written and always equals the body's
 * UTF-8 byte length (an existing entry is rewritten in place, extra ones dropped).
 *
 * @example
 * ```ts
 * import { serializeSipMessage, type SipHeader } from "@flowcat/flowcat/sip";
 * declare const headers: SipHeader[];
 * serializeSipMessage({ kind: "response", status: 200, reason: "OK", headers, body: "" });
 * // "SIP/2.0 200 OK\r\n...Content-Length: 0\r\n\r\n"
 * ```
 */
export function serializeSipMessage(msg: SipMessage): string {
  let out = msg.kind === "request"
    ? `${msg.method} ${msg.uri} SIP/2.0\r\n`
    : `SIP/2.0 ${msg.status} ${msg.reason}\r\n`;
  const length = String(utf8Length(msg.body));
  let wroteLength = false;
  for (const h of msg.headers) {
    const name = canonicalHeaderName(h.name);
    if (name === "Content-Length") {
      if (!wroteLength) out += `Content-Length: ${length}\r\n`;
      wroteLength = true;
      continue;
    }
    out += `${name}: ${h.value}\r\n`;
  }
  if (!wroteLength) out += `Content-Length: ${length}\r\n`;
  return out + "\r\n" + msg.body;
}

/** {@link serializeSipMessage} as UTF-8 bytes, ready for a UDP send. */
export function encodeSipMessage(msg: SipMessage): Uint8Array {
  return encoder.encode(serializeSipMessage(msg));
}

/** True when a datagram holds only CR/LF bytes (an RFC 5626 keep-alive ping or pong). */
export function isKeepAlive(bytes: Uint8Array): boolean {
  if (bytes.length === 0) return false;
  for (const b of bytes) if (b !== 0x0d && b !== 0x0a) return false;
  return true;
}
