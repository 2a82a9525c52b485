/**
 * SIP header-name normalisation and the lexical helpers shared by the header parsers:
 * compact forms (RFC 3261 §7.3.3 and later RFCs), canonical capitalisation, comma splitting
 * that respects quotes and angle brackets, and quoted strings. Parameter lists: `params.ts`.
 * @module
 */

/** Compact one-letter header forms (RFC 3261 §7.3.3, RFC 3265, 3515, 3841, 3892, 4028, 4474). */
export const COMPACT_FORMS: Readonly<Record<string, string>> = Object.freeze({
  a: "Accept-Contact",
  b: "Referred-By",
  c: "Content-Type",
  d: "Request-Disposition",
  e: "Content-Encoding",
  f: "From",
  i: "Call-ID",
  j: "Reject-Contact",
  k: "Supported",
  l: "Content-Length",
  m: "Contact",
  n: "Identity-Info",
  o: "Event",
  r: "Refer-To",
  s: "Subject",
  t: "To",
  u: "Allow-Events",
  v: "Via",
  x: "Session-Expires",
  y: "Identity",
});

const CANONICAL_LIST = [
  "Accept",
  "Accept-Contact",
  "Accept-Encoding",
  "Accept-Language",
  "Alert-Info",
  "Allow",
  "Allow-Events",
  "Authentication-Info",
  "Authorization",
  "Call-ID",
  "Call-Info",
  "Contact",
  "Content-Disposition",
  "Content-Encoding",
  "Content-Language",
  "Content-Length",
  "Content-Type",
  "CSeq",
  "Date",
  "Diversion",
  "Error-Info",
  "Event",
  "Expires",
  "From",
  "Identity",
  "Identity-Info",
  "In-Reply-To",
  "Max-Forwards",
  "MIME-Version",
  "Min-Expires",
  "Min-SE",
  "Organization",
  "P-Asserted-Identity",
  "P-Preferred-Identity",
  "Path",
  "Priority",
  "Privacy",
  "Proxy-Authenticate",
  "Proxy-Authorization",
  "Proxy-Require",
  "RAck",
  "Reason",
  "Record-Route",
  "Refer-To",
  "Referred-By",
  "Reject-Contact",
  "Remote-Party-ID",
  "Replaces",
  "Reply-To",
  "Request-Disposition",
  "Require",
  "Retry-After",
  "Route",
  "RSeq",
  "Server",
  "Service-Route",
  "Session-Expires",
  "Subject",
  "Subscription-State",
  "Supported",
  "Timestamp",
  "To",
  "Unsupported",
  "User-Agent",
  "Via",
  "Warning",
  "WWW-Authenticate",
];

const CANONICAL = new Map<string, string>(CANONICAL_LIST.map((n) => [n.toLowerCase(), n]));

/**
 * Headers whose comma-separated values are separate entries (RFC 3261 §7.3.1). Authentication
 * headers and free-text headers (Date, Subject, ...) are deliberately absent: their values
 * contain commas that do not separate entries.
 */
const MULTI_VALUE = new Set([
  "accept",
  "accept-encoding",
  "accept-language",
  "alert-info",
  "allow",
  "allow-events",
  "call-info",
  "contact",
  "content-encoding",
  "content-language",
  "error-info",
  "in-reply-to",
  "path",
  "proxy-require",
  "reason",
  "record-route",
  "require",
  "route",
  "service-route",
  "supported",
  "unsupported",
  "via",
  "warning",
]);

/** RFC 3261 `token` characters, for validating header names. */
const TOKEN_RE = /^[A-Za-z0-9\-.!%*_+`'~]+$/;

/**
 * The canonical spelling of a header name: compact forms expanded, known names capitalised
 * as in the RFCs, unknown names kept as written.
 *
 * @example
 * ```ts
 * canonicalHeaderName("i"); // "Call-ID"
 * canonicalHeaderName("www-authenticate"); // "WWW-Authenticate"
 * ```
 */
export function canonicalHeaderName(name: string): string {
  const lower = name.toLowerCase();
  if (lower.length === 1) {
    const long = COMPACT_FORMS[lower];
    if (long !== undefined) return long;
  }
  return CANONICAL.get(lower) ?? name;
}

/** True when `name` is a syntactically valid header name (an RFC 3261 token). */
export function isValidHeaderName(name: string): boolean {
  return TOKEN_RE.test(name);
}

/** True when values of header `canonicalName` may be comma-joined on one line. */
export function isMultiValueHeader(canonicalName: string): boolean {
  return MULTI_VALUE.has(canonicalName.toLowerCase());
}

/**
 * Split `value` at `sep` outside quoted strings and angle brackets, trimming each part and
 * dropping empty ones. Returns undefined when a quote or bracket is left open.
 *
 * @example
 * ```ts
 * splitOutside('"a, b" <sip:x@y>, <sip:z@w>', ","); // ['"a, b" <sip:x@y>', "<sip:z@w>"]
 * ```
 */
export function splitOutside(value: string, sep: string): string[] | undefined {
  const parts: string[] = [];
  let inQuote = false;
  let inAngle = false;
  let start = 0;
  for (let i = 0; i < value.length; i++) {
    const ch = value[i];
    if (inQuote) {
      if (ch === "\\") i++;
      else if (ch === '"') inQuote = false;
    } else if (ch === '"') inQuote = true;
    else if (ch === "<") inAngle = true;
    else if (ch === ">") inAngle = false;
    else if (ch === sep && !inAngle) {
      const part = value.slice(start, i).trim();
      if (part !== "") parts.push(part);
      start = i + 1;
    }
  }
  if (inQuote || inAngle) return undefined;
  const last = value.slice(start).trim();
  if (last !== "") parts.push(last);
  return parts;
}

/**
 * Parse a quoted-string starting at `value[start] === '"'`, undoing quoted-pair escapes.
 * Returns the text and the index after the closing quote, or undefined when unterminated.
 */
export function readQuoted(
  value: string,
  start: number,
): { text: string; end: number } | undefined {
  let text = "";
  for (let i = start + 1; i < value.length; i++) {
    const ch = value[i];
    if (ch === "\\") {
      if (i + 1 >= value.length) return undefined;
      text += value[++i];
    } else if (ch === '"') return { text, end: i + 1 };
    else text += ch;
  }
  return undefined;
}

/** Quote `text` as an RFC 3261 quoted-string, escaping `"` and `\`. */
export function quote(text: string): string {
  return '"' + text.replace(/["\\]/g, (c) => "\\" + c) + '"';
}
