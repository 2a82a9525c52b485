/**
 * SIP URI parsing and formatting (RFC 3261 §19.1): `sip:user:password@host:port;params?headers`,
 * `sips:` likewise, `tel:` numbers (RFC 3966) as far as a trunk needs them, and any other
 * absolute URI (`http:`, `isbn:`, ...) kept opaque, since From, To and Contact may carry one.
 * @module
 */

import { formatParams, parseUriParams } from "./params.ts";
import { fail, ok, type ParseResult } from "./result.ts";

/** The URI schemes this stack understands beyond their syntax. */
export type KnownScheme = "sip" | "sips" | "tel";

/** A parsed URI. Parameter names are lower-case. */
export interface SipUri {
  /** Lower-case scheme: `sip`, `sips` or `tel` parsed in full; any other is kept in `opaque`. */
  scheme: KnownScheme | (string & Record<never, never>);
  /** Everything after `scheme:` for a scheme other than sip, sips and tel. */
  opaque?: string;
  /** User part (or the tel number), still percent-escaped as on the wire. */
  user?: string;
  /** Password part of the userinfo (deprecated by RFC 3261, kept for round-trips). */
  password?: string;
  /** Host name, IPv4 address or bracketed IPv6 reference (`[::1]`); empty for tel URIs. */
  host: string;
  /** Port, when given. */
  port?: number;
  /** URI parameters (`transport`, `user`, `lr`, `maddr`, ...); a flag maps to null. */
  params: Map<string, string | null>;
  /** URI headers after `?`, in order (`name=value`). */
  headers: [string, string][];
}

const HOST_RE = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-._]+)$/;

/** Parse a decimal port, 1 to 65535. */
function parsePort(text: string): number | undefined {
  if (!/^\d{1,5}$/.test(text)) return undefined;
  const port = Number(text);
  return port >= 1 && port <= 65535 ? port : undefined;
}

/**
 * Parse `host[:port]` (IPv6 references in brackets).
 *
 * @example
 * ```ts
 * parseHostPort("[2001:db8::1]:5060"); // { ok: true, value: { host: "[2001:db8::1]", port: 5060 } }
 * ```
 */
export function parseHostPort(text: string): ParseResult<{ host: string; port?: number }> {
  let host = text;
  let portText: string | undefined;
  if (text.startsWith("[")) {
    const close = text.indexOf("]");
    if (close < 0) return fail("unterminated IPv6 reference");
    host = text.slice(0, close + 1);
    const rest = text.slice(close + 1);
    if (rest !== "") {
      if (!rest.startsWith(":")) return fail("garbage after IPv6 reference");
      portText = rest.slice(1);
    }
  } else {
    const colon = text.lastIndexOf(":");
    if (colon >= 0) {
      host = text.slice(0, colon);
      portText = text.slice(colon + 1);
    }
  }
  if (!HOST_RE.test(host)) return fail("bad host");
  if (portText === undefined) return ok({ host });
  const port = parsePort(portText.trim());
  return port === undefined ? fail("bad port") : ok({ host, port });
}

const SCHEME_RE = /^[A-Za-z][A-Za-z0-9+.\-]*$/;

/** True for `sip`, `sips` and `tel`. */
export function isKnownScheme(scheme: string): scheme is KnownScheme {
  return scheme === "sip" || scheme === "sips" || scheme === "tel";
}

/**
 * Parse a URI: SIP, SIPS and tel in full, any other absolute URI (RFC 3986 `scheme:rest`) as
 * opaque text with an empty host. Never throws; malformed input gives `{ ok: false, reason }`.
 *
 * @example
 * ```ts
 * const r = parseUri("sip:alice@192.0.2.10:5060;transport=udp");
 * if (r.ok) r.value.port; // 5060
 * ```
 */
export function parseUri(text: string): ParseResult<SipUri> {
  const colon = text.indexOf(":");
  if (colon < 0) return fail("URI without scheme");
  const scheme = text.slice(0, colon).toLowerCase();
  if (!SCHEME_RE.test(scheme)) return fail("bad URI scheme");
  let rest = text.slice(colon + 1);
  if (/\s/.test(rest)) return fail("whitespace in URI");
  if (!isKnownScheme(scheme)) {
    if (rest === "" || /[<>"]/.test(rest)) return fail("bad absolute URI");
    return ok({ scheme, opaque: rest, host: "", params: new Map(), headers: [] });
  }
  if (scheme === "tel") {
    const semi = rest.indexOf(";");
    const number = semi < 0 ? rest : rest.slice(0, semi);
    if (number === "") return fail("empty tel number");
    const params = parseUriParams(semi < 0 ? "" : rest.slice(semi + 1));
    if (params === undefined) return fail("bad tel URI parameters");
    return ok({ scheme, user: number, host: "", params, headers: [] });
  }
  let user: string | undefined;
  let password: string | undefined;
  // An unescaped '@' cannot occur in the user part, so the first one ends the userinfo.
  const at = rest.indexOf("@");
  if (at >= 0) {
    const userinfo = rest.slice(0, at);
    rest = rest.slice(at + 1);
    const pc = userinfo.indexOf(":");
    user = pc < 0 ? userinfo : userinfo.slice(0, pc);
    if (pc >= 0) password = userinfo.slice(pc + 1);
    if (user === "") return fail("empty user part");
  }
  let headersText = "";
  const q = rest.indexOf("?");
  if (q >= 0) {
    headersText = rest.slice(q + 1);
    rest = rest.slice(0, q);
  }
  const semi = rest.indexOf(";");
  const hostPortText = semi < 0 ? rest : rest.slice(0, semi);
  const hp = parseHostPort(hostPortText);
  if (!hp.ok) return hp;
  const params = parseUriParams(semi < 0 ? "" : rest.slice(semi + 1));
  if (params === undefined) return fail("bad URI parameters");
  const headers: [string, string][] = [];
  for (const pair of headersText === "" ? [] : headersText.split("&")) {
    const eq = pair.indexOf("=");
    headers.push(eq < 0 ? [pair, ""] : [pair.slice(0, eq), pair.slice(eq + 1)]);
  }
  const uri: SipUri = { scheme, host: hp.value.host, params, headers };
  if (user !== undefined) uri.user = user;
  if (password !== undefined) uri.password = password;
  if (hp.value.port !== undefined) uri.port = hp.value.port;
  return ok(uri);
}

/**
 * Format a {@link SipUri} back to its wire form.
 *
 * @example
 * ```ts
 * formatUri({ scheme: "sip", user: "bob", host: "example.com", params: new Map(), headers: [] });
 * // "sip:bob@example.com"
 * ```
 */
export function formatUri(uri: SipUri): string {
  let out = uri.scheme + ":";
  if (uri.opaque !== undefined) return out + uri.opaque;
  if (uri.scheme === "tel") return out + (uri.user ?? "") + formatParams(uri.params);
  if (uri.user !== undefined) {
    out += uri.user;
    if (uri.password !== undefined) out += ":" + uri.password;
    out += "@";
  }
  out += uri.host;
  if (uri.port !== undefined) out += ":" + uri.port;
  out += formatParams(uri.params);
  if (uri.headers.length > 0) out += "?" + uri.headers.map(([k, v]) => `${k}=${v}`).join("&");
  return out;
}
