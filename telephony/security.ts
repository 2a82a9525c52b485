// Over 400 lines: one entry point of small pure verifiers; a split adds only re-exports.
/**
 * Call security: per-call tokens, carrier webhook signatures, replay protection, E.164 numbers.
 * Everything uses WebCrypto (`crypto.subtle`, `crypto.getRandomValues`) and compares secrets in
 * constant time. Verifiers return `{ ok: false, reason }` instead of throwing, so a route can log
 * the reason and answer 403; the reason never contains a secret.
 *
 * @example
 * ```ts
 * import { signCallToken, verifyCallToken } from "@flowcat/flowcat/telephony/security";
 * declare const secret: string;
 * const token = await signCallToken(secret, { runId: 42, ttlSeconds: 600 });
 * const check = await verifyCallToken(secret, token, { runId: 42 }); // { ok: true, ... }
 * ```
 *
 * Permissions: none (WebCrypto only).
 * @module
 */

import { FlowcatError } from "../core/errors.ts";
import { timingSafeEqual } from "../core/secrets.ts";

export { createCallToken, timingSafeEqual } from "../core/secrets.ts";

/** Outcome of a signature or token check. */
export type Verdict = { ok: true } | { ok: false; reason: string };

/** Key material: a UTF-8 string, raw bytes, or an already imported key (reused across calls). */
export type KeyInput = string | Uint8Array | CryptoKey;

const utf8 = new TextEncoder();
/** UTF-8 of a string, or the bytes themselves (copied only if they sit in shared memory). */
function bytesOf(v: string | Uint8Array): Uint8Array<ArrayBuffer> {
  if (typeof v === "string") return utf8.encode(v);
  return v.buffer instanceof ArrayBuffer ? v as Uint8Array<ArrayBuffer> : new Uint8Array(v);
}
const fail = (reason: string): Verdict => ({ ok: false, reason });
const OK: Verdict = Object.freeze({ ok: true });

/** Import `key` as an HMAC key for `hash` (pass the result back in to skip re-importing). */
export async function hmacKey(key: KeyInput, hash: HmacHash = "SHA-256"): Promise<CryptoKey> {
  if (key instanceof CryptoKey) return key;
  const raw = bytesOf(key);
  if (raw.length === 0) throw new FlowcatError("config", "HMAC secret is empty");
  return await crypto.subtle.importKey("raw", raw, { name: "HMAC", hash }, false, ["sign"]);
}

/** Hash functions carriers sign webhooks with. */
export type HmacHash = "SHA-1" | "SHA-256" | "SHA-512";

/** HMAC of `message` under `key`. */
export async function hmac(
  key: KeyInput,
  message: string | Uint8Array,
  hash: HmacHash = "SHA-256",
): Promise<Uint8Array> {
  const k = await hmacKey(key, hash);
  return new Uint8Array(await crypto.subtle.sign("HMAC", k, bytesOf(message)));
}

// ---------------------------------------------------------------- signed call tokens

const TOKEN_VERSION = "v1";
const RUN_ID = /^[A-Za-z0-9_-]{1,64}$/;
const MIN_SECRET_BYTES = 16;

function tokenSecret(secret: KeyInput): KeyInput {
  if (!(secret instanceof CryptoKey) && bytesOf(secret).length < MIN_SECRET_BYTES) {
    throw new FlowcatError(
      "config",
      `call-token secret must be at least ${MIN_SECRET_BYTES} bytes`,
    );
  }
  return secret;
}

const b64url = (bytes: Uint8Array) => bytes.toBase64({ alphabet: "base64url", omitPadding: true });

/** What a signed call token binds. */
export interface CallTokenClaims {
  /** The run the token authorizes (integer or `[A-Za-z0-9_-]{1,64}`). */
  runId: number | string;
  /** Lifetime in seconds from `now` (default 3600). */
  ttlSeconds?: number;
  /** Clock for tests, epoch milliseconds. */
  now?: number;
}

/**
 * A URL-safe token that binds a run id and an expiry with HMAC-SHA256:
 * `v1.<runId>.<expiresAtSeconds>.<nonce>.<mac>`. Stateless: the verifier needs only the secret.
 */
export async function signCallToken(secret: KeyInput, claims: CallTokenClaims): Promise<string> {
  const runId = String(claims.runId);
  if (!RUN_ID.test(runId)) {
    throw new FlowcatError("config", "call token run id must match [A-Za-z0-9_-]{1,64}");
  }
  const ttl = claims.ttlSeconds ?? 3600;
  if (!(ttl > 0)) throw new FlowcatError("config", "call token ttlSeconds must be positive");
  const exp = Math.floor((claims.now ?? Date.now()) / 1000 + ttl);
  const nonce = b64url(crypto.getRandomValues(new Uint8Array(12)));
  const body = `${TOKEN_VERSION}.${runId}.${exp}.${nonce}`;
  return `${body}.${b64url(await hmac(tokenSecret(secret), body))}`;
}

/** Result of {@link verifyCallToken}. */
export type CallTokenVerdict =
  | { ok: true; runId: string; expiresAt: number }
  | { ok: false; reason: string };

/**
 * Check a token from {@link signCallToken}: MAC (constant time), expiry, and, when given, that it
 * was issued for `expect.runId`.
 */
export async function verifyCallToken(
  secret: KeyInput,
  token: string,
  expect: { runId?: number | string; now?: number } = {},
): Promise<CallTokenVerdict> {
  const parts = token.split(".");
  if (parts.length !== 5 || parts[0] !== TOKEN_VERSION) {
    return { ok: false, reason: "malformed call token" };
  }
  const [, runId, expText, , mac] = parts;
  const body = token.slice(0, token.length - mac.length - 1);
  const expected = b64url(await hmac(tokenSecret(secret), body));
  if (!timingSafeEqual(expected, mac)) {
    return { ok: false, reason: "call token signature mismatch" };
  }
  const exp = Number(expText);
  if (!Number.isInteger(exp)) return { ok: false, reason: "malformed call token" };
  if ((expect.now ?? Date.now()) >= exp * 1000) return { ok: false, reason: "call token expired" };
  if (expect.runId !== undefined && String(expect.runId) !== runId) {
    return { ok: false, reason: "call token issued for another run" };
  }
  return { ok: true, runId, expiresAt: exp * 1000 };
}

// ---------------------------------------------------------------- webhook signatures

/** Replay window applied where the carrier signs a timestamp (seconds either side of now). */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/** Whether a signed Unix-seconds `timestamp` lies within `toleranceSeconds` of `nowMs`. */
export function checkTimestamp(
  timestamp: string | number | null | undefined,
  nowMs: number = Date.now(),
  toleranceSeconds: number = DEFAULT_TOLERANCE_SECONDS,
): Verdict {
  const t = typeof timestamp === "string" && /^\d{1,12}$/.test(timestamp)
    ? Number(timestamp)
    : timestamp;
  if (typeof t !== "number" || !Number.isFinite(t)) return fail("missing or malformed timestamp");
  if (Math.abs(nowMs / 1000 - t) > toleranceSeconds) {
    return fail("timestamp outside the replay window");
  }
  return OK;
}

/** Form parameters of a webhook POST. */
export type FormParams = Record<string, string> | URLSearchParams | Iterable<[string, string]>;

/**
 * The signed pairs in Twilio's order: names sorted, and a repeated name's values deduplicated
 * and then sorted, as twilio-node does (`Array.from(new Set(values)).sort()`); code-unit order.
 */
function sortedPairs(params: FormParams): [string, string][] {
  const pairs = Symbol.iterator in params ? [...params] : Object.entries(params);
  const byName = new Map<string, Set<string>>();
  for (const [k, v] of pairs) {
    const values = byName.get(k);
    if (values === undefined) byName.set(k, new Set([v]));
    else values.add(v);
  }
  const out: [string, string][] = [];
  for (const name of [...byName.keys()].sort()) {
    for (const value of [...byName.get(name)!].sort()) out.push([name, value]);
  }
  return out;
}

/**
 * Twilio's `X-Twilio-Signature`: base64 HMAC-SHA1, keyed by the auth token, over the full URL
 * followed by each POST parameter's name and value, sorted by name, with no separators (a
 * repeated name's values deduplicated, then sorted).
 */
export async function twilioSignature(
  authToken: KeyInput,
  url: string,
  params: FormParams = {},
): Promise<string> {
  let data = url;
  for (const [k, v] of sortedPairs(params)) data += k + v;
  return (await hmac(authToken, data, "SHA-1")).toBase64();
}

/**
 * The URL forms a Twilio signature may cover, as twilio-node checks them: the URL as given, then
 * normalized by the WHATWG URL parser (scheme and host lower-cased, path percent-encoded, an
 * empty path as `/`) without and with the scheme's default port, each also with its query
 * re-encoded the way Node's legacy `querystring` does (Twilio's back end signs inconsistently).
 */
export function twilioUrlForms(url: string): string[] {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return [url];
  }
  const forms = [url];
  const defaultPort = u.protocol === "https:" ? "443" : u.protocol === "http:" ? "80" : undefined;
  const bare = new URL(u);
  bare.port = "";
  const normalized = [bare.toString()];
  if (defaultPort !== undefined && u.port === "") {
    const auth = u.username ? `${u.username}${u.password ? `:${u.password}` : ""}@` : "";
    normalized.push(
      `${u.protocol}//${auth}${u.hostname}:${defaultPort}${u.pathname}${u.search}${u.hash}`,
    );
  } else normalized.push(u.toString());
  for (const form of normalized) forms.push(form, legacyQuery(form));
  return [...new Set(forms)];
}

/**
 * `url` with its query as Node's `querystring.stringify(querystring.parse(q))` writes it: names
 * grouped in first-seen order, `+` read as a space, components escaped like
 * `encodeURIComponent`.
 */
function legacyQuery(url: string): string {
  const q = url.indexOf("?");
  if (q < 0) return url;
  const hash = url.indexOf("#", q);
  const query = url.slice(q + 1, hash < 0 ? undefined : hash);
  const grouped = new Map<string, string[]>();
  for (const [k, v] of new URLSearchParams(query)) {
    const values = grouped.get(k);
    if (values === undefined) grouped.set(k, [v]);
    else values.push(v);
  }
  const parts: string[] = [];
  for (const [k, values] of grouped) {
    for (const v of values) parts.push(`${encodeURIComponent(k)}=${encodeURIComponent(v)}`);
  }
  return `${url.slice(0, q)}?${parts.join("&")}${hash < 0 ? "" : url.slice(hash)}`;
}

/**
 * Verify an `X-Twilio-Signature` header (also SignalWire's Compatibility API). The URL must be
 * the one the carrier called, query included; like Twilio's libraries, its normalized forms
 * ({@link twilioUrlForms}: default port removed or added, query re-encoded) are also accepted,
 * since proxies rewrite it and Twilio's back end signs inconsistently. Twilio signs no
 * timestamp: dedupe retries with a {@link ReplayGuard} keyed by the signature if replays matter.
 */
export async function verifyTwilioSignature(opts: {
  authToken: KeyInput;
  url: string;
  params?: FormParams;
  signature: string | null | undefined;
}): Promise<Verdict> {
  if (!opts.signature) return fail("missing X-Twilio-Signature");
  const key = await hmacKey(opts.authToken, "SHA-1");
  // Every form is checked, so the time taken does not say which one matched.
  let ok = false;
  for (const url of twilioUrlForms(opts.url)) {
    ok = timingSafeEqual(await twilioSignature(key, url, opts.params ?? {}), opts.signature) || ok;
  }
  if (ok) return OK;
  return fail("X-Twilio-Signature mismatch");
}

/** UTF-8 of `prefix` followed by `body`: the signed string of timestamped schemes. */
function prefixed(prefix: string, body: Uint8Array): Uint8Array<ArrayBuffer> {
  const head = utf8.encode(prefix);
  const out = new Uint8Array(head.length + body.length);
  out.set(head);
  out.set(body, head.length);
  return out;
}

function decodeBase64(value: string): Uint8Array<ArrayBuffer> | undefined {
  try {
    return Uint8Array.fromBase64(value.trim());
  } catch {
    return undefined;
  }
}

/**
 * Verify a Telnyx webhook: `telnyx-signature-ed25519` is a base64 Ed25519 signature over
 * `<telnyx-timestamp>|<raw body>`, checked against the account's base64 public key; the
 * timestamp must be inside the replay window. Pass the body exactly as received.
 */
export async function verifyTelnyxSignature(opts: {
  /** Account public key: base64 of the 32 raw bytes, the raw bytes, or an imported key. */
  publicKey: string | Uint8Array | CryptoKey;
  body: string | Uint8Array;
  signature: string | null | undefined;
  timestamp: string | null | undefined;
  now?: number;
  toleranceSeconds?: number;
}): Promise<Verdict> {
  if (!opts.signature) return fail("missing telnyx-signature-ed25519");
  const fresh = checkTimestamp(opts.timestamp, opts.now, opts.toleranceSeconds);
  if (!fresh.ok) return fresh;
  const sig = decodeBase64(opts.signature);
  if (sig === undefined || sig.length !== 64) return fail("malformed telnyx-signature-ed25519");
  let key: CryptoKey;
  if (opts.publicKey instanceof CryptoKey) key = opts.publicKey;
  else {
    const raw = typeof opts.publicKey === "string"
      ? decodeBase64(opts.publicKey)
      : bytesOf(opts.publicKey);
    if (raw === undefined || raw.length !== 32) {
      throw new FlowcatError(
        "config",
        "Telnyx public key must be 32 bytes (base64 from the portal)",
      );
    }
    key = await crypto.subtle.importKey("raw", raw, { name: "Ed25519" }, false, ["verify"]);
  }
  const signed = prefixed(`${opts.timestamp}|`, bytesOf(opts.body));
  const valid = await crypto.subtle.verify({ name: "Ed25519" }, key, sig, signed);
  return valid ? OK : fail("telnyx signature mismatch");
}

/**
 * Generic HMAC webhook check for carriers that sign `<timestamp><separator><body>` (or just the
 * body) with a shared secret: constant-time compare, plus the replay window when a timestamp is
 * part of the signed string.
 */
export async function verifyHmacSignature(opts: {
  secret: KeyInput;
  /** The signed string as the carrier builds it (without the timestamp). */
  message: string | Uint8Array;
  /** Signature from the header, in `encoding`. */
  signature: string | null | undefined;
  hash?: HmacHash;
  encoding?: "hex" | "base64" | "base64url";
  /** Signed timestamp (Unix seconds); when given it prefixes the message and is range-checked. */
  timestamp?: string;
  separator?: string;
  now?: number;
  toleranceSeconds?: number;
}): Promise<Verdict> {
  if (!opts.signature) return fail("missing signature");
  let message = bytesOf(opts.message);
  if (opts.timestamp !== undefined) {
    const fresh = checkTimestamp(opts.timestamp, opts.now, opts.toleranceSeconds);
    if (!fresh.ok) return fresh;
    message = prefixed(`${opts.timestamp}${opts.separator ?? "."}`, message);
  }
  const mac = await hmac(opts.secret, message, opts.hash ?? "SHA-256");
  const encoding = opts.encoding ?? "hex";
  const expected = encoding === "hex"
    ? mac.toHex()
    : mac.toBase64({ alphabet: encoding, omitPadding: encoding === "base64url" });
  const given = encoding === "hex" ? opts.signature.toLowerCase() : opts.signature;
  return timingSafeEqual(expected, given) ? OK : fail("signature mismatch");
}

/**
 * Remembers signatures (or event ids) seen within the replay window, so a captured webhook
 * replayed inside the window is still refused. Bounded: the oldest entries go first.
 */
export class ReplayGuard {
  readonly #seen = new Map<string, number>();
  readonly #windowMs: number;
  readonly #maxEntries: number;

  /** A guard remembering keys for `windowSeconds`, at most `maxEntries` at once. */
  constructor(windowSeconds = DEFAULT_TOLERANCE_SECONDS, maxEntries = 100_000) {
    // A timestamp may be `windowSeconds` early or late, so it stays acceptable for twice that.
    this.#windowMs = windowSeconds * 1000 * 2;
    this.#maxEntries = maxEntries;
  }

  /** Record `key`; false when it was already seen inside the window (a replay). */
  firstSeen(key: string, nowMs: number = Date.now()): boolean {
    for (const [k, expiry] of this.#seen) {
      if (expiry > nowMs && this.#seen.size < this.#maxEntries) break;
      this.#seen.delete(k);
    }
    const expiry = this.#seen.get(key);
    if (expiry !== undefined && expiry > nowMs) return false;
    this.#seen.delete(key);
    this.#seen.set(key, nowMs + this.#windowMs);
    return true;
  }
}

// ---------------------------------------------------------------- E.164

const E164 = /^\+[1-9]\d{1,14}$/;

/** Whether `value` is an E.164 number: `+`, a non-zero digit, at most 15 digits in all. */
export function isE164(value: unknown): value is string {
  return typeof value === "string" && E164.test(value);
}

/**
 * `value` when it is E.164, else a `protocol` {@link FlowcatError} naming `field`.
 *
 * @example
 * ```ts
 * assertE164("+15550001111"); // "+15550001111"
 * assertE164("555-0001", "to_number"); // throws: to_number must be an E.164 number ...
 * ```
 */
export function assertE164(value: unknown, field = "number"): string {
  if (isE164(value)) return value;
  const shown = typeof value === "string" ? JSON.stringify(value.slice(0, 32)) : typeof value;
  throw new FlowcatError(
    "protocol",
    `${field} must be an E.164 number like +15550001111 (plus sign, country code, up to 15 digits, no spaces), got ${shown}`,
  );
}
