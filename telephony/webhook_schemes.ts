/**
 * The webhook schemes that `telephony/security.ts` has no primitive for (Plivo V3, Vonage signed
 * JWTs, Sinch callback signing, HTTP Basic, API keys), plus the helpers the dispatcher in
 * `telephony/webhooks.ts` shares with them. Each check returns a verdict and, where the request
 * carries one, the key that identifies this delivery for replay detection.
 * @module
 */

import { createHash } from "node:crypto";
import { checkTimestamp, hmac, timingSafeEqual, type Verdict } from "./security.ts";

/** A received webhook, as the route saw it. */
export interface WebhookRequest {
  /** The full URL the carrier called (public scheme and host, path, query), not a proxy's. */
  url: string;
  /** The request headers as received. */
  headers: Headers;
  /** The raw body bytes, exactly as received. */
  body: Uint8Array;
  /** HTTP method (default `POST`). Plivo and Sinch sign it in. */
  method?: string;
}

/** A username and password pair (HTTP Basic). */
export interface BasicCredentials {
  /** The expected user name. */
  username: string;
  /** The expected password. */
  password: string;
}

/** A check's outcome plus the key that identifies this exact delivery for replay detection. */
export type Checked = { verdict: Verdict; replayKey?: string };

const OK: Verdict = Object.freeze({ ok: true });
const fail = (reason: string): Verdict => ({ ok: false, reason });
const utf8 = new TextDecoder();

/** Lower-case hex SHA-256 of `data`. */
export async function sha256Hex(data: Uint8Array | string): Promise<string> {
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : new Uint8Array(data);
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)).toHex();
}

/** Form parameters of the body (empty for an empty body). */
export function formParams(body: Uint8Array): [string, string][] {
  return body.length === 0 ? [] : [...new URLSearchParams(utf8.decode(body))];
}

/** Pairs sorted by name, then values of a repeated name sorted (Plivo's SDK order). */
function sortPairs(pairs: [string, string][]): [string, string][] {
  return [...pairs].sort(([ka, va], [kb, vb]) =>
    ka < kb ? -1 : ka > kb ? 1 : va < vb ? -1 : va > vb ? 1 : 0
  );
}

/**
 * The string Plivo's V3 signature covers before `.<nonce>`, as Plivo's SDKs build it: the URL
 * without its query, then `?` + the query sorted as `k=v&k=v` (decoded), then for a POST with
 * parameters a `.` separator (only when there was a query) and the sorted params as `kv` pairs.
 */
export function plivoSignedBase(url: string, method: string, post: [string, string][]): string {
  const u = new URL(url);
  const query = sortPairs([...u.searchParams]).map(([k, v]) => `${k}=${v}`).join("&");
  let base = `${u.protocol}//${u.host}${u.pathname}`;
  if (method.toUpperCase() === "GET") return query ? `${base}?${query}` : base;
  if (query || post.length > 0) base += `?${query}`;
  if (query && post.length > 0) base += ".";
  return base + sortPairs(post).map(([k, v]) => k + v).join("");
}

/** Plivo V3: base64 HMAC-SHA256(auth token, `<signed base>.<nonce>`); the header may list many. */
export async function checkPlivo(authToken: string, req: WebhookRequest): Promise<Checked> {
  const header = req.headers.get("x-plivo-signature-v3");
  const nonce = req.headers.get("x-plivo-signature-v3-nonce");
  if (!header) return { verdict: fail("missing X-Plivo-Signature-V3") };
  if (!nonce) return { verdict: fail("missing X-Plivo-Signature-V3-Nonce") };
  const method = req.method ?? "POST";
  const post = method.toUpperCase() === "GET" ? [] : formParams(req.body);
  const base = plivoSignedBase(req.url, method, post);
  const expected = (await hmac(authToken, `${base}.${nonce}`)).toBase64();
  // Check every listed signature so the time does not depend on which one matched.
  let ok = false;
  for (const sig of header.split(",")) ok = timingSafeEqual(expected, sig.trim()) || ok;
  return { verdict: ok ? OK : fail("X-Plivo-Signature-V3 mismatch"), replayKey: nonce };
}

function decodeJsonPart(part: string): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(utf8.decode(Uint8Array.fromBase64(part, { alphabet: "base64url" })));
    return v !== null && typeof v === "object" && !Array.isArray(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Vonage signed webhooks: `Authorization: Bearer <JWT>`, HS256 with the signature secret; `iat`
 * inside the window, `exp` (if any) not passed, and `payload_hash` (hex SHA-256 of the payload)
 * matching the raw body, its compact JSON, or for a bodiless GET the query as compact JSON.
 */
export async function checkVonage(
  secret: string,
  req: WebhookRequest,
  now: number,
  tolerance: number,
): Promise<Checked> {
  const auth = req.headers.get("authorization") ?? "";
  const m = /^Bearer\s+([\w-]+)\.([\w-]+)\.([\w-]+)$/i.exec(auth.trim());
  if (!m) return { verdict: fail("missing or malformed Vonage JWT in Authorization") };
  const [, head, payload, sig] = m;
  const header = decodeJsonPart(head);
  const claims = decodeJsonPart(payload);
  if (!header || !claims || header.alg !== "HS256") {
    return { verdict: fail("malformed Vonage JWT (want an HS256 token)") };
  }
  const expected = (await hmac(secret, `${head}.${payload}`)).toBase64({
    alphabet: "base64url",
    omitPadding: true,
  });
  if (!timingSafeEqual(expected, sig)) return { verdict: fail("Vonage JWT signature mismatch") };
  const fresh = checkTimestamp(claims.iat as number, now, tolerance);
  if (!fresh.ok) return { verdict: fail(`Vonage JWT iat: ${fresh.reason}`) };
  if (typeof claims.exp === "number" && now / 1000 >= claims.exp) {
    return { verdict: fail("Vonage JWT expired") };
  }
  if (typeof claims.payload_hash === "string") {
    const want = claims.payload_hash.toLowerCase();
    let matched = false;
    for (const candidate of vonagePayloads(req)) {
      if (timingSafeEqual(await sha256Hex(candidate), want)) matched = true;
    }
    if (!matched) return { verdict: fail("Vonage payload_hash does not match the body") };
  }
  const jti = typeof claims.jti === "string" ? claims.jti : sig;
  return { verdict: OK, replayKey: jti };
}

/** The payload forms Vonage may have hashed: raw body, compact JSON, or the query as JSON. */
function vonagePayloads(req: WebhookRequest): (Uint8Array | string)[] {
  if (req.body.length === 0) {
    return [JSON.stringify(Object.fromEntries(new URL(req.url).searchParams))];
  }
  const out: (Uint8Array | string)[] = [req.body];
  try {
    out.push(JSON.stringify(JSON.parse(utf8.decode(req.body))));
  } catch {
    // not JSON: only the raw body can match
  }
  return out;
}

/**
 * Sinch callback signing: `Authorization: Application <key>:<base64 HMAC-SHA256>` (Voice 2.0
 * uses the word `Service`), keyed by the base64-decoded secret, over
 * `METHOD\nbase64(MD5(body))\ncontent-type\nx-timestamp:<ts>\n<path>`; `x-timestamp` (ISO 8601,
 * UTC) must be inside the window.
 */
export async function checkSinch(
  creds: { applicationKey: string; applicationSecret: string },
  req: WebhookRequest,
  now: number,
  tolerance: number,
): Promise<Checked> {
  const m = /^(?:application|service)\s+([^:\s]+):(\S+)$/i.exec(
    (req.headers.get("authorization") ?? "").trim(),
  );
  if (!m) return { verdict: fail("missing or malformed Sinch Authorization header") };
  const [, key, signature] = m;
  const timestamp = req.headers.get("x-timestamp");
  const when = timestamp ? Date.parse(timestamp) : NaN;
  if (!Number.isFinite(when)) return { verdict: fail("missing or malformed x-timestamp") };
  if (Math.abs(now - when) > tolerance * 1000) {
    return { verdict: fail("x-timestamp outside the replay window") };
  }
  const md5 = req.body.length === 0 ? "" : createHash("md5").update(req.body).digest("base64");
  const u = new URL(req.url);
  const secret = Uint8Array.fromBase64(creds.applicationSecret.trim());
  const head = `${(req.method ?? "POST").toUpperCase()}\n${md5}\n${
    req.headers.get("content-type") ?? ""
  }\nx-timestamp:${timestamp}\n`;
  let ok = false;
  // The documented resource is the callback path; with a query string both forms are tried.
  for (const resource of u.search ? [u.pathname, u.pathname + u.search] : [u.pathname]) {
    const expected = (await hmac(secret, head + resource)).toBase64();
    ok = timingSafeEqual(expected, signature) || ok;
  }
  ok = timingSafeEqual(creds.applicationKey, key) && ok;
  return { verdict: ok ? OK : fail("Sinch signature mismatch"), replayKey: signature };
}

/** HTTP Basic credentials compared in constant time. */
export function checkBasic(carrier: string, creds: BasicCredentials, req: WebhookRequest): Checked {
  const m = /^Basic\s+(\S+)$/i.exec((req.headers.get("authorization") ?? "").trim());
  if (!m) return { verdict: fail(`missing Basic authorization for ${carrier}`) };
  let given: string;
  try {
    given = utf8.decode(Uint8Array.fromBase64(m[1]));
  } catch {
    return { verdict: fail(`malformed Basic authorization for ${carrier}`) };
  }
  const ok = timingSafeEqual(`${creds.username}:${creds.password}`, given);
  return { verdict: ok ? OK : fail(`${carrier} Basic credentials mismatch`) };
}

/** Genesys AudioHook `X-API-KEY` compared in constant time. */
export function checkApiKey(apiKey: string, req: WebhookRequest): Checked {
  const given = req.headers.get("x-api-key");
  if (!given) return { verdict: fail("missing X-API-KEY") };
  return { verdict: timingSafeEqual(apiKey, given) ? OK : fail("X-API-KEY mismatch") };
}
