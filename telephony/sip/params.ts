/**
 * The one parser for SIP parameter lists: `;name=value` header and URI parameters (RFC 3261
 * §7.3.1, §19.1.1, §25.1) and the `,`-separated auth-params of digest headers (RFC 7616 §3.3).
 * LWS may surround the separators and `=`; values are tokens, hosts or quoted strings; names are
 * case-insensitive and stored lower-case. Everything that compares parameter values (dialog and
 * transaction matching) goes through {@link sameToken}, so `tag=ABC` and `TAG = abc` agree.
 * @module
 */

import { quote, readQuoted } from "./headers.ts";

/** Parameters by lower-case name; a parameter without `=` maps to null. */
export type Params = Map<string, string | null>;

/** RFC 3261 `token` characters. */
const TOKEN_CHAR = /^[A-Za-z0-9\-.!%*_+`'~]$/;

function isLws(ch: string | undefined): boolean {
  return ch === " " || ch === "\t" || ch === "\r" || ch === "\n";
}

function skipLws(text: string, i: number): number {
  while (isLws(text[i])) i++;
  return i;
}

/**
 * True for a character that may appear in an unquoted parameter value: token characters plus
 * what hosts (`[v6]:`) and URI parameters (`/ : & $ [ ] ? @ =`) add. Separators, quotes, angle
 * brackets, whitespace and non-ASCII never do; a comma only inside a URI, where `<>` already
 * keeps it from separating header values.
 */
function isValueChar(ch: string, syntax: ParamSyntax): boolean {
  if (ch === syntax.separator || ch === ";" || ch === '"' || ch === "<" || ch === ">") return false;
  if (ch === ",") return syntax.inUri === true;
  const c = ch.charCodeAt(0);
  return c > 0x20 && c < 0x7f;
}

/** How {@link scanParams} reads a list. */
export interface ParamSyntax {
  /** `;` for header and URI parameters, `,` for auth-params. */
  separator: ";" | ",";
  /** Empty list elements (`a=1,,b=2`) are skipped instead of refused (RFC 7230 #rule). */
  allowEmpty?: boolean;
  /** URI parameters: values may hold a comma. */
  inUri?: boolean;
}

/**
 * Scan a parameter list; the separator before the first parameter is optional. Returns
 * undefined for anything malformed: an empty parameter (`;;`), a trailing separator, a name
 * that is not a token, `=` with no value, an unterminated quoted string.
 *
 * @example
 * ```ts
 * scanParams(" ;  tag = 1918181833n ; lr", { separator: ";" });
 * // Map { "tag" => "1918181833n", "lr" => null }
 * ```
 */
export function scanParams(text: string, syntax: ParamSyntax): Params | undefined {
  const sep = syntax.separator;
  const params: Params = new Map();
  let i = skipLws(text, 0);
  if (i >= text.length) return params;
  if (text[i] === sep) i = skipLws(text, i + 1);
  for (;;) {
    if (syntax.allowEmpty) {
      while (text[i] === sep) i = skipLws(text, i + 1);
      if (i >= text.length) return params;
    }
    const nameStart = i;
    while (i < text.length && TOKEN_CHAR.test(text[i])) i++;
    if (i === nameStart) return undefined;
    const name = text.slice(nameStart, i).toLowerCase();
    i = skipLws(text, i);
    let value: string | null = null;
    if (text[i] === "=") {
      i = skipLws(text, i + 1);
      if (text[i] === '"') {
        const q = readQuoted(text, i);
        if (q === undefined) return undefined;
        value = q.text;
        i = q.end;
      } else {
        const valueStart = i;
        while (i < text.length && isValueChar(text[i], syntax)) i++;
        if (i === valueStart) return undefined;
        value = text.slice(valueStart, i);
      }
      i = skipLws(text, i);
    }
    params.set(name, value);
    if (i >= text.length) return params;
    if (text[i] !== sep) return undefined;
    i = skipLws(text, i + 1);
    if (i >= text.length) return syntax.allowEmpty ? params : undefined;
  }
}

/**
 * Parse a `;name=value;flag` header or URI parameter list (the leading `;` optional).
 *
 * @example
 * ```ts
 * parseParams(";branch=z9hG4bK1;rport")?.get("rport"); // null
 * ```
 */
export function parseParams(text: string): Params | undefined {
  return scanParams(text, { separator: ";" });
}

/** Parse the `;name=value` parameters of a URI (the leading `;` optional). */
export function parseUriParams(text: string): Params | undefined {
  return scanParams(text, { separator: ";", inUri: true });
}

/** Format a parameter map as `;name=value;flag` (values that need it are quoted). */
export function formatParams(params: ReadonlyMap<string, string | null>): string {
  let out = "";
  for (const [name, val] of params) {
    if (val === null) out += ";" + name;
    else out += ";" + name + "=" + (/^[^\s";,<>]+$/.test(val) ? val : quote(val));
  }
  return out;
}

/**
 * True when two token values are equal under RFC 3261 §7.3.1 (tokens are case-insensitive):
 * how `tag` and `branch` values are compared. Call-IDs are not tokens and compare exactly.
 */
export function sameToken(a: string | undefined, b: string | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.length === b.length && a.toLowerCase() === b.toLowerCase();
}

/** The form of a token value used in lookup keys, so keys agree when {@link sameToken} does. */
export function tokenKey(value: string | undefined): string {
  return (value ?? "").toLowerCase();
}
