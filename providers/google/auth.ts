/**
 * Google service-account credentials to OAuth 2.0 access tokens, with no Google library: the
 * JWT bearer flow of developers.google.com/identity/protocols/oauth2/service-account
 * ("Preparing to make an authorized API call", HTTP/REST). A JWT `{iss: client_email, scope,
 * aud: token_uri, iat, exp}` is signed RS256 (RSASSA-PKCS1-v1_5 with SHA-256, WebCrypto) with
 * the key file's `private_key` and posted to `token_uri` as
 * `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=<jwt>`; the answer's
 * `access_token` is sent as `Authorization: Bearer` until five minutes before `expires_in`
 * runs out, then a new one is fetched. Tokens are cached per key and scope for the process, so
 * calls share one; concurrent callers share one request.
 *
 * The key is the JSON file Google Cloud hands out (`type: service_account`), which the server
 * reads from the file `GOOGLE_APPLICATION_CREDENTIALS` names; its text is what a client takes
 * as `apiKey`. The private key is never logged or put in an error.
 *
 * @example
 * ```ts
 * import { googleAccessToken, parseServiceAccount } from "./auth.ts";
 * declare const keyJson: string;
 * const account = parseServiceAccount("vertex", keyJson);
 * const token = await googleAccessToken(account); // "ya29...."
 * ```
 *
 * Permissions: `--allow-net=oauth2.googleapis.com:443` (the key's `token_uri`).
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import { providerFetch } from "../http.ts";

/** The variable naming the service-account key file (Google's own convention). */
export const GOOGLE_CREDENTIALS_ENV = "GOOGLE_APPLICATION_CREDENTIALS";
/** The scope every Google Cloud API accepts. */
export const CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform";
/** Google's token endpoint, used when a key names none. */
export const GOOGLE_TOKEN_URI = "https://oauth2.googleapis.com/token";
/** `host:port` of {@link GOOGLE_TOKEN_URI}, for `--allow-net`. */
export const GOOGLE_TOKEN_HOST = "oauth2.googleapis.com:443";
/** A token is replaced this long before it expires. */
const REFRESH_MARGIN_S = 300;
/** Lifetime asked of each JWT (Google's maximum). */
const JWT_LIFETIME_S = 3600;

/** The fields of a service-account key this flow uses. */
export interface ServiceAccount {
  /** The provider using it (for errors). */
  provider: string;
  /** `client_email`: the JWT's issuer. */
  clientEmail: string;
  /** `private_key`: PKCS#8 PEM. */
  privateKeyPem: string;
  /** `private_key_id`: the JWT header's `kid`, when present. */
  privateKeyId?: string;
  /** `project_id`: the default project of the APIs that need one (Vertex). */
  projectId?: string;
  /** `token_uri` (default {@link GOOGLE_TOKEN_URI}). */
  tokenUri: string;
}

/** Parse a service-account key file's text; anything else is a one-line `config` error. */
export function parseServiceAccount(provider: string, json: string): ServiceAccount {
  const bad = (why: string) =>
    new FlowcatError(
      "config",
      `${provider}: the ${GOOGLE_CREDENTIALS_ENV} file is not a service-account key (${why})`,
    );
  let v: Record<string, unknown>;
  try {
    v = JSON.parse(json);
  } catch {
    throw bad("not JSON");
  }
  if (v === null || typeof v !== "object") throw bad("not a JSON object");
  if (v.type !== undefined && v.type !== "service_account") throw bad(`type is ${v.type}`);
  const str = (k: string) => (typeof v[k] === "string" && v[k] !== "" ? v[k] as string : undefined);
  const clientEmail = str("client_email");
  const privateKeyPem = str("private_key");
  if (!clientEmail) throw bad("no client_email");
  if (!privateKeyPem?.includes("PRIVATE KEY")) throw bad("no private_key");
  const out: ServiceAccount = {
    provider,
    clientEmail,
    privateKeyPem,
    tokenUri: str("token_uri") ?? GOOGLE_TOKEN_URI,
  };
  const kid = str("private_key_id");
  if (kid) out.privateKeyId = kid;
  const project = str("project_id");
  if (project) out.projectId = project;
  return out;
}

const b64url = (bytes: Uint8Array): string =>
  btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
const b64urlJson = (v: unknown): string => b64url(new TextEncoder().encode(JSON.stringify(v)));

async function importKey(account: ServiceAccount): Promise<CryptoKey> {
  const body = account.privateKeyPem
    .replace(/-----(BEGIN|END) PRIVATE KEY-----/g, "")
    .replace(/\s+/g, "");
  try {
    const der = Uint8Array.from(atob(body), (c) => c.charCodeAt(0));
    return await crypto.subtle.importKey(
      "pkcs8",
      der,
      { name: "RSASSA-PKCS1-v1_5", hash: "SHA-256" },
      false,
      ["sign"],
    );
  } catch {
    throw new FlowcatError(
      "config",
      `${account.provider}: the service-account private_key is not a PKCS#8 RSA key`,
    );
  }
}

/** The signed JWT assertion for `scope`, issued at `nowS` (seconds since the epoch). */
export async function signedAssertion(
  account: ServiceAccount,
  scope: string,
  nowS: number,
): Promise<string> {
  const header: Record<string, string> = { alg: "RS256", typ: "JWT" };
  if (account.privateKeyId) header.kid = account.privateKeyId;
  const claims = {
    iss: account.clientEmail,
    scope,
    aud: account.tokenUri,
    iat: nowS,
    exp: nowS + JWT_LIFETIME_S,
  };
  const input = `${b64urlJson(header)}.${b64urlJson(claims)}`;
  const key = await importKey(account);
  const sig = await crypto.subtle.sign(
    "RSASSA-PKCS1-v1_5",
    key,
    new TextEncoder().encode(input),
  );
  return `${input}.${b64url(new Uint8Array(sig))}`;
}

interface CachedToken {
  token: string;
  /** Refresh after this (ms since the epoch). */
  refreshAt: number;
}

const cache = new Map<string, CachedToken>();
const inflight = new Map<string, Promise<CachedToken>>();

/** Options of {@link googleAccessToken}. */
export interface AccessTokenOptions {
  /** OAuth scope (default {@link CLOUD_PLATFORM_SCOPE}). */
  scope?: string;
  /** Deadline of the token request, ms. */
  timeoutMs?: number;
  /** Aborts the wait (the shared request goes on for other callers). */
  signal?: AbortSignal;
  /** The fetch to use (tests). */
  fetch?: typeof fetch;
  /** The clock, ms since the epoch (tests). */
  now?: () => number;
}

/** A valid access token for `account`: the cached one, or a new one from `token_uri`. */
export async function googleAccessToken(
  account: ServiceAccount,
  opts: AccessTokenOptions = {},
): Promise<string> {
  const scope = opts.scope ?? CLOUD_PLATFORM_SCOPE;
  const now = opts.now ?? Date.now;
  const id = cacheId(account, scope);
  const hit = cache.get(id);
  if (hit && now() < hit.refreshAt) return hit.token;
  let pending = inflight.get(id);
  if (pending === undefined) {
    pending = fetchToken(account, scope, now, opts).finally(() => inflight.delete(id));
    inflight.set(id, pending);
  }
  const got = opts.signal ? await abortable(pending, opts.signal) : await pending;
  cache.set(id, got);
  return got.token;
}

function cacheId(account: ServiceAccount, scope: string): string {
  return `${account.tokenUri} ${account.clientEmail} ${account.privateKeyId ?? ""} ${scope}`;
}

/**
 * Forget the cached token of `account` (an API refused it: revoked, or the key was rotated),
 * so the next request fetches a new one.
 */
export function dropGoogleToken(account: ServiceAccount, scope = CLOUD_PLATFORM_SCOPE): void {
  cache.delete(cacheId(account, scope));
}

/** The service account a client was given and the bearer headers of its requests. */
export interface GoogleCredential {
  /** The parsed key. */
  account: ServiceAccount;
  /** `{authorization: "Bearer <token>"}` with a valid token. */
  headers(signal?: AbortSignal): Promise<Record<string, string>>;
  /** The API refused the token: the next {@link GoogleCredential.headers} gets a new one. */
  refused(): void;
}

/**
 * The credential of a Google client from its options: `apiKey` is the key file's JSON text
 * (missing: a one-line `config` error naming {@link GOOGLE_CREDENTIALS_ENV}).
 */
export function googleCredential(
  opts: { provider: string; apiKey?: string; timeoutMs?: number; fetch?: typeof fetch },
): GoogleCredential {
  if (!opts.apiKey) {
    throw new FlowcatError(
      "config",
      `${opts.provider}: no service-account key (set ${GOOGLE_CREDENTIALS_ENV})`,
    );
  }
  const account = parseServiceAccount(opts.provider, opts.apiKey);
  const http: AccessTokenOptions = {};
  if (opts.timeoutMs !== undefined) http.timeoutMs = opts.timeoutMs;
  if (opts.fetch) http.fetch = opts.fetch;
  return {
    account,
    refused: () => dropGoogleToken(account),
    headers: async (signal) => ({
      authorization: `Bearer ${await googleAccessToken(account, {
        ...http,
        ...(signal ? { signal } : {}),
      })}`,
    }),
  };
}

/** Forget every cached token (tests; a rotated key). */
export function clearGoogleTokenCache(): void {
  cache.clear();
}

async function fetchToken(
  account: ServiceAccount,
  scope: string,
  now: () => number,
  opts: AccessTokenOptions,
): Promise<CachedToken> {
  const issuedS = Math.floor(now() / 1000);
  const assertion = await signedAssertion(account, scope, issuedS);
  const body = new URLSearchParams({
    grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer",
    assertion,
  });
  let res: Response;
  try {
    res = await providerFetch(account.provider, account.tokenUri, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: body.toString(),
    }, {
      ...(opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {}),
      ...(opts.fetch ? { fetch: opts.fetch } : {}),
    });
  } catch (err) {
    if (!(err instanceof FlowcatError)) throw err;
    // Google answers a refused assertion with 400 invalid_grant: the key, not the request.
    const auth = err.kind === "auth" || /invalid_grant|invalid_client|unauthorized_client/.test(
      err.message,
    );
    throw new FlowcatError(
      auth ? "auth" : err.kind,
      `${account.provider}: OAuth token request failed: ${
        err.message.replace(`${account.provider}: `, "")
      }`,
    );
  }
  let v: { access_token?: unknown; expires_in?: unknown };
  try {
    v = await res.json();
  } catch {
    throw new FlowcatError("protocol", `${account.provider}: OAuth token answer is not JSON`);
  }
  if (typeof v.access_token !== "string" || v.access_token === "") {
    throw new FlowcatError("protocol", `${account.provider}: OAuth token answer has no token`);
  }
  const lifetimeS = typeof v.expires_in === "number" ? v.expires_in : JWT_LIFETIME_S;
  const refreshInS = Math.max(lifetimeS - REFRESH_MARGIN_S, lifetimeS / 2);
  return { token: v.access_token, refreshAt: issuedS * 1000 + refreshInS * 1000 };
}

function abortable<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}
