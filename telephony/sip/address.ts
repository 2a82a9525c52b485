/**
 * Parsers and formatters for structured SIP header values: name-addr / addr-spec
 * (From, To, Contact, Route, Record-Route), Via (RFC 3261 §20.42, RFC 3581 rport) and CSeq.
 * @module
 */

import { quote, readQuoted } from "./headers.ts";
import { formatParams, parseParams } from "./params.ts";
import { fail, ok, type ParseResult } from "./result.ts";
import { formatUri, parseHostPort, parseUri, type SipUri } from "./uri.ts";

/** RFC 3261 §8.1.1.7 magic cookie that every RFC 3261 branch starts with. */
export const BRANCH_COOKIE = "z9hG4bK";

/** A name-addr or addr-spec value with its header parameters (`tag`, `expires`, ...). */
export interface NameAddr {
  /** Display name without quotes, when present. */
  displayName?: string;
  /** The parsed URI. */
  uri: SipUri;
  /** Header parameters after the address (not URI parameters); `tag` lives here. */
  params: Map<string, string | null>;
}

/** A display name written without quotes: tokens separated by LWS (RFC 3261 §25.1). */
const TOKEN_DISPLAY = /^[A-Za-z0-9\-.!%*_+`'~]+(?:[ \t]+[A-Za-z0-9\-.!%*_+`'~]+)*$/;

/**
 * Parse a From/To/Contact/Route value: `"Name" <uri>;params`, `Name <uri>;params`,
 * `<uri>;params`, or bare `uri;params` (where `;params` belong to the header, RFC 3261 §20.10).
 * Strict where RFC 3261 is: an unquoted display name must be tokens, `<` and `>` hug the URI,
 * and a bare URI may not carry `?headers` (it would need `<>`). Any absolute URI is accepted.
 *
 * @example
 * ```ts
 * const r = parseNameAddr('"Bob" <sip:bob@example.com> ; tag = a6c85cf');
 * if (r.ok) r.value.params.get("tag"); // "a6c85cf"
 * ```
 */
export function parseNameAddr(text: string): ParseResult<NameAddr> {
  const value = text.trim();
  let displayName: string | undefined;
  let uriText: string;
  let paramText: string;
  let i = 0;
  if (value.startsWith('"')) {
    const q = readQuoted(value, 0);
    if (q === undefined) return fail("unterminated display name");
    displayName = q.text;
    i = q.end;
  }
  const lt = value.indexOf("<", i);
  if (lt >= 0) {
    const before = value.slice(i, lt).trim();
    if (displayName !== undefined) {
      if (before !== "") return fail("garbage after display name");
    } else if (before !== "") {
      if (!TOKEN_DISPLAY.test(before)) return fail("display name must be quoted");
      displayName = before.replace(/[ \t]+/g, " ");
    }
    const gt = value.indexOf(">", lt);
    if (gt < 0) return fail("unterminated '<'");
    uriText = value.slice(lt + 1, gt);
    if (uriText.trim() !== uriText) return fail("whitespace inside <>");
    paramText = value.slice(gt + 1).trim();
    if (paramText !== "" && !paramText.startsWith(";")) return fail("garbage after '>'");
  } else {
    if (displayName !== undefined) return fail("display name without <uri>");
    const semi = value.indexOf(";");
    uriText = (semi < 0 ? value : value.slice(0, semi)).trim();
    paramText = semi < 0 ? "" : value.slice(semi);
    if (/[?,]/.test(uriText)) return fail("a URI with '?' or ',' must be enclosed in <>");
  }
  const uri = parseUri(uriText);
  if (!uri.ok) return uri;
  const params = parseParams(paramText);
  if (params === undefined) return fail("bad header parameters");
  const out: NameAddr = { uri: uri.value, params };
  if (displayName !== undefined) out.displayName = displayName;
  return ok(out);
}

/** Format a {@link NameAddr} as `"Name" <uri>;params` (always in name-addr form). */
export function formatNameAddr(addr: NameAddr): string {
  const name = addr.displayName !== undefined && addr.displayName !== ""
    ? quote(addr.displayName) + " "
    : "";
  return `${name}<${formatUri(addr.uri)}>${formatParams(addr.params)}`;
}

/** A parsed Via entry. */
export interface Via {
  /** Transport in upper case: `UDP`, `TCP`, `TLS`, `WS`, ... */
  transport: string;
  /** sent-by host. */
  host: string;
  /** sent-by port, when given. */
  port?: number;
  /** `branch` parameter (the transaction id when it starts with `z9hG4bK`). */
  branch?: string;
  /** `received` parameter: the source IP the next hop saw. */
  received?: string;
  /** `rport`: true when requested (empty), the port number once filled in (RFC 3581). */
  rport?: number | true;
  /** All parameters, names lower-case. */
  params: Map<string, string | null>;
}

/**
 * Parse one Via value, e.g. `SIP/2.0/UDP 192.0.2.10:5060;branch=z9hG4bK7a1f;rport`.
 * Whitespace around `/` and `:` is allowed, as RFC 3261 permits.
 *
 * @example
 * ```ts
 * const r = parseVia("SIP/2.0/UDP 10.0.0.1;branch=z9hG4bKx;rport=5061;received=192.0.2.1");
 * if (r.ok) r.value.rport; // 5061
 * ```
 */
export function parseVia(text: string): ParseResult<Via> {
  const m = /^\s*SIP\s*\/\s*2\.0\s*\/\s*([A-Za-z0-9\-.!%*_+`'~]+)\s+(.*)$/is.exec(text);
  if (m === null) return fail("bad Via protocol");
  const rest = m[2];
  const semi = rest.indexOf(";");
  const sentBy = (semi < 0 ? rest : rest.slice(0, semi)).replace(/\s*:\s*/g, ":").trim();
  const hp = parseHostPort(sentBy);
  if (!hp.ok) return fail("bad Via sent-by");
  const params = parseParams(semi < 0 ? "" : rest.slice(semi));
  if (params === undefined) return fail("bad Via parameters");
  const via: Via = { transport: m[1].toUpperCase(), host: hp.value.host, params };
  if (hp.value.port !== undefined) via.port = hp.value.port;
  const branch = params.get("branch");
  if (branch === null) return fail("Via branch without a value");
  // RFC 4475 §3.2.1: the cookie alone claims an RFC 3261 transaction id but carries none.
  if (branch === BRANCH_COOKIE) return fail("Via branch is the magic cookie alone");
  if (branch !== undefined) via.branch = branch;
  const received = params.get("received");
  if (typeof received === "string") via.received = received;
  if (params.has("rport")) {
    const rp = params.get("rport");
    if (rp === null || rp === "") via.rport = true;
    else {
      const n = /^\d{1,5}$/.test(rp!) ? Number(rp) : NaN;
      if (!(n >= 1 && n <= 65535)) return fail("bad Via rport");
      via.rport = n;
    }
  }
  return ok(via);
}

/** Format a {@link Via} as `SIP/2.0/UDP host:port;params` (params from `params`). */
export function formatVia(via: Via): string {
  const port = via.port === undefined ? "" : ":" + via.port;
  return `SIP/2.0/${via.transport} ${via.host}${port}${formatParams(via.params)}`;
}

/** A parsed CSeq value. */
export interface CSeq {
  /** Sequence number, 0 to 2^31 - 1. */
  seq: number;
  /** Method, case preserved (SIP methods are case-sensitive). */
  method: string;
}

/**
 * Parse a CSeq value such as `1 INVITE`.
 *
 * @example
 * ```ts
 * parseCSeq("314159 INVITE"); // { ok: true, value: { seq: 314159, method: "INVITE" } }
 * ```
 */
export function parseCSeq(text: string): ParseResult<CSeq> {
  const m = /^\s*(\d{1,10})\s+([A-Za-z0-9\-.!%*_+`'~]+)\s*$/.exec(text);
  if (m === null) return fail("bad CSeq");
  const seq = Number(m[1]);
  // RFC 3261 §8.1.1.5: the number MUST be less than 2**31.
  if (seq >= 2 ** 31) return fail("CSeq number out of range");
  return ok({ seq, method: m[2] });
}

/** Format a {@link CSeq} as `<seq> <METHOD>`. */
export function formatCSeq(cseq: CSeq): string {
  return `${cseq.seq} ${cseq.method}`;
}
