/**
 * SIP digest authentication, client side (RFC 3261 §22, RFC 2617, RFC 7616, RFC 8760):
 * parse WWW-Authenticate / Proxy-Authenticate challenges, compute the Authorization /
 * Proxy-Authorization value, and count nonce uses. Hashes come from `node:crypto`
 * (synchronous, and MD5 is not in WebCrypto).
 *
 * The password lives only in a private field of {@link DigestCredentials}; no error message,
 * log line, `toString`, `toJSON` or inspection of any object here contains it.
 *
 * @example
 * ```ts
 * import { DigestClient, DigestCredentials, selectChallenge, type SipHeader, type SipResponse } from "@flowcat/flowcat/sip";
 * declare const response401: SipResponse;
 * declare const headers: SipHeader[];
 * const client = new DigestClient(new DigestCredentials("alice", "s3cret"));
 * const ch = selectChallenge(response401);
 * if (ch.ok) {
 *   const auth = client.authorize(ch.value, "REGISTER", "sip:trunk.example.com");
 *   if (auth.ok) headers.push(auth.value); // { name: "Authorization", value: "Digest ..." }
 * }
 * ```
 * @module
 */

import { createHash } from "node:crypto";
import { randomHex } from "./build.ts";
import { quote } from "./headers.ts";
import { scanParams } from "./params.ts";
import { getHeaders, type SipHeader, type SipResponse } from "./message.ts";
import { fail, ok, type ParseResult } from "./result.ts";

/** Digest algorithms supported (RFC 7616 §6.1; SHA-512-256 per RFC 8760). */
export type DigestAlgorithm =
  | "MD5"
  | "MD5-sess"
  | "SHA-256"
  | "SHA-256-sess"
  | "SHA-512-256"
  | "SHA-512-256-sess";

const ALGORITHMS: Record<string, [DigestAlgorithm, string, number]> = {
  "md5": ["MD5", "md5", 1],
  "md5-sess": ["MD5-sess", "md5", 1],
  "sha-256": ["SHA-256", "sha256", 2],
  "sha-256-sess": ["SHA-256-sess", "sha256", 2],
  "sha-512-256": ["SHA-512-256", "sha512-256", 3],
  "sha-512-256-sess": ["SHA-512-256-sess", "sha512-256", 3],
};

/** A parsed digest challenge. */
export interface DigestChallenge {
  /** Protection realm. */
  realm: string;
  /** Server nonce. */
  nonce: string;
  /** Opaque value to echo back, when given. */
  opaque?: string;
  /** Algorithm (MD5 when the challenge names none). */
  algorithm: DigestAlgorithm;
  /** Whether the challenge named the algorithm (then the answer echoes it). */
  algorithmGiven: boolean;
  /** Offered qop values, lower-case (empty: legacy RFC 2069 form). */
  qop: string[];
  /** `stale=true`: the nonce expired but the credentials were right; retry with the new one. */
  stale: boolean;
  /** RFC 7616 `userhash=true`: send H(username:realm) instead of the username. */
  userhash: boolean;
  /** True for Proxy-Authenticate (407): answer with Proxy-Authorization. */
  proxy: boolean;
}

/**
 * Parse a comma-separated auth-param list (`a="x", b=y`); names lower-cased, values unquoted.
 * Returns undefined on malformed input, including a parameter without a value.
 */
export function parseAuthParams(text: string): Map<string, string> | undefined {
  const params = scanParams(text, { separator: ",", allowEmpty: true });
  if (params === undefined) return undefined;
  const out = new Map<string, string>();
  for (const [name, value] of params) {
    if (value === null) return undefined;
    out.set(name, value);
  }
  return out;
}

/**
 * Parse one WWW-Authenticate / Proxy-Authenticate value (`Digest realm="..", nonce=".."...`).
 *
 * @example
 * ```ts
 * parseDigestChallenge('Digest realm="t", nonce="5f2a9c", qop="auth", algorithm=MD5');
 * ```
 */
export function parseDigestChallenge(value: string, proxy = false): ParseResult<DigestChallenge> {
  const m = /^\s*([A-Za-z]+)\s+(.*)$/s.exec(value);
  if (m === null || m[1].toLowerCase() !== "digest") return fail("not a Digest challenge");
  const params = parseAuthParams(m[2]);
  if (params === undefined) return fail("malformed Digest challenge");
  const realm = params.get("realm");
  const nonce = params.get("nonce");
  if (realm === undefined) return fail("Digest challenge without realm");
  if (nonce === undefined || nonce === "") return fail("Digest challenge without nonce");
  const algName = params.get("algorithm");
  const alg = ALGORITHMS[(algName ?? "MD5").toLowerCase()];
  if (alg === undefined) return fail(`unsupported digest algorithm '${algName}'`);
  const qop = (params.get("qop") ?? "").split(",").map((q) => q.trim().toLowerCase()).filter((
    q,
  ) => q !== "");
  const ch: DigestChallenge = {
    realm,
    nonce,
    algorithm: alg[0],
    algorithmGiven: algName !== undefined,
    qop,
    stale: (params.get("stale") ?? "").toLowerCase() === "true",
    userhash: (params.get("userhash") ?? "").toLowerCase() === "true",
    proxy,
  };
  const opaque = params.get("opaque");
  if (opaque !== undefined) ch.opaque = opaque;
  return ok(ch);
}

/**
 * Pick the challenge to answer from a 401 (WWW-Authenticate) or 407 (Proxy-Authenticate):
 * the strongest supported algorithm (SHA-512-256, then SHA-256, then MD5), first one on ties.
 */
export function selectChallenge(res: SipResponse): ParseResult<DigestChallenge> {
  const proxy = res.status === 407;
  const values = getHeaders(res, proxy ? "Proxy-Authenticate" : "WWW-Authenticate");
  if (values.length === 0) return fail(`${res.status} without a challenge header`);
  let best: DigestChallenge | undefined;
  let lastReason = "no usable challenge";
  for (const v of values) {
    const r = parseDigestChallenge(v, proxy);
    if (!r.ok) {
      lastReason = r.reason;
      continue;
    }
    const rank = ALGORITHMS[r.value.algorithm.toLowerCase()][2];
    if (best === undefined || rank > ALGORITHMS[best.algorithm.toLowerCase()][2]) best = r.value;
  }
  return best === undefined ? fail(lastReason) : ok(best);
}

/**
 * Lower-case hex digest of `text` (UTF-8) with the hash behind `algorithm`.
 *
 * @example
 * ```ts
 * digestHash("MD5", "abc"); // "900150983cd24fb0d6963f7d28e17f72"
 * ```
 */
export function digestHash(algorithm: DigestAlgorithm, text: string): string {
  return createHash(ALGORITHMS[algorithm.toLowerCase()][1]).update(text, "utf8").digest("hex");
}

/** Inputs of {@link computeDigestResponse}. */
export interface DigestInputs {
  /** Hash algorithm from the challenge. */
  algorithm: DigestAlgorithm;
  /** SIP auth username. */
  username: string;
  /** Realm from the challenge. */
  realm: string;
  /** The password; or give `ha1` (H(username:realm:password)) instead. */
  password?: string;
  /** Precomputed H(username:realm:password), used instead of `password`. */
  ha1?: string;
  /** Server nonce from the challenge. */
  nonce: string;
  /** Request method (`REGISTER`, `INVITE`, ...), hashed into HA2. */
  method: string;
  /** The digest-uri (the Request-URI). */
  uri: string;
  /** `auth`, `auth-int`, or undefined for the legacy no-qop form. */
  qop?: string;
  /** Nonce count, 8 hex digits (with qop). */
  nc?: string;
  /** Client nonce (with qop or a -sess algorithm). */
  cnonce?: string;
  /** Message body, for qop=auth-int. */
  body?: string;
}

/**
 * The `response` value: KD(HA1, nonce:nc:cnonce:qop:HA2) with qop, KD(HA1, nonce:HA2) without.
 *
 * @example
 * ```ts
 * computeDigestResponse({ algorithm: "MD5", username: "Mufasa", realm: "testrealm@host.com",
 *   password: "Circle Of Life", nonce: "dcd98b7102dd2f0e8b11d0f600bfb0c093", method: "GET",
 *   uri: "/dir/index.html", qop: "auth", nc: "00000001", cnonce: "0a4f113b" });
 * // "6629fae49393a05397450978507c4ef1"
 * ```
 */
export function computeDigestResponse(p: DigestInputs): string {
  const h = (s: string) => digestHash(p.algorithm, s);
  let ha1 = p.ha1 ?? h(`${p.username}:${p.realm}:${p.password ?? ""}`);
  if (p.algorithm.endsWith("-sess")) ha1 = h(`${ha1}:${p.nonce}:${p.cnonce ?? ""}`);
  const ha2 = p.qop === "auth-int"
    ? h(`${p.method}:${p.uri}:${h(p.body ?? "")}`)
    : h(`${p.method}:${p.uri}`);
  return p.qop === undefined
    ? h(`${ha1}:${p.nonce}:${ha2}`)
    : h(`${ha1}:${p.nonce}:${p.nc}:${p.cnonce}:${p.qop}:${ha2}`);
}

const REDACTED = "<redacted>";

/** Trunk credentials. The password is held privately and never printed or serialized. */
export class DigestCredentials {
  /** SIP auth username (the SipConfig `login`). */
  readonly username: string;
  #password: string;

  /** Hold `username` and `password` for digest answers. */
  constructor(username: string, password: string) {
    this.username = username;
    this.#password = password;
  }

  /** H(username:realm:password) for `algorithm`: the password itself never leaves this object. */
  ha1(algorithm: DigestAlgorithm, realm: string): string {
    return digestHash(algorithm, `${this.username}:${realm}:${this.#password}`);
  }

  /** Printable form without the password. */
  toString(): string {
    return `DigestCredentials(${this.username}, password=${REDACTED})`;
  }

  /** JSON form without the password. */
  toJSON(): { username: string; password: string } {
    return { username: this.username, password: REDACTED };
  }

  /** Deno's console.log / Deno.inspect form. */
  [Symbol.for("Deno.customInspect")](): string {
    return this.toString();
  }

  /** node:util.inspect form. */
  [Symbol.for("nodejs.util.inspect.custom")](): string {
    return this.toString();
  }
}

/** Options for {@link DigestClient}. */
export interface DigestClientOptions {
  /** Client-nonce generator (tests pin it); default 64 random bits in hex. */
  cnonce?: () => string;
}

/** Nonces whose counts are remembered; older ones are forgotten (they are stale by then). */
const MAX_NONCES = 16;

/** Answers digest challenges and counts nonce uses (nc) per nonce. */
export class DigestClient {
  #creds: DigestCredentials;
  #cnonce: () => string;
  #counts = new Map<string, number>();

  /** A client answering with `creds`. */
  constructor(creds: DigestCredentials, opts: DigestClientOptions = {}) {
    this.#creds = creds;
    this.#cnonce = opts.cnonce ?? (() => randomHex(8));
  }

  /** Uses of `nonce` so far (0 when never used or forgotten). */
  nonceCount(nonce: string): number {
    return this.#counts.get(nonce) ?? 0;
  }

  /**
   * Build the Authorization (401) or Proxy-Authorization (407) header answering `ch` for a
   * request `method` to `uri`. Each call with the same nonce increments nc.
   */
  authorize(ch: DigestChallenge, method: string, uri: string, body = ""): ParseResult<SipHeader> {
    let qop: string | undefined;
    if (ch.qop.includes("auth")) qop = "auth";
    else if (ch.qop.includes("auth-int")) qop = "auth-int";
    else if (ch.qop.length > 0) return fail(`unsupported qop '${ch.qop.join(",")}'`);
    const needCnonce = qop !== undefined || ch.algorithm.endsWith("-sess");
    const cnonce = needCnonce ? this.#cnonce() : undefined;
    let nc: string | undefined;
    if (qop !== undefined) {
      const count = this.nonceCount(ch.nonce) + 1;
      this.#counts.delete(ch.nonce);
      this.#counts.set(ch.nonce, count);
      if (this.#counts.size > MAX_NONCES) this.#counts.delete(this.#counts.keys().next().value!);
      nc = count.toString(16).padStart(8, "0");
    }
    const username = ch.userhash
      ? digestHash(ch.algorithm, `${this.#creds.username}:${ch.realm}`)
      : this.#creds.username;
    const response = computeDigestResponse({
      algorithm: ch.algorithm,
      username: this.#creds.username,
      realm: ch.realm,
      ha1: this.#creds.ha1(ch.algorithm, ch.realm),
      nonce: ch.nonce,
      method,
      uri,
      qop,
      nc,
      cnonce,
      body,
    });
    const parts = [
      `username=${quote(username)}`,
      `realm=${quote(ch.realm)}`,
      `nonce=${quote(ch.nonce)}`,
      `uri=${quote(uri)}`,
      `response="${response}"`,
    ];
    if (ch.algorithmGiven) parts.push(`algorithm=${ch.algorithm}`);
    if (cnonce !== undefined) parts.push(`cnonce=${quote(cnonce)}`);
    if (ch.opaque !== undefined) parts.push(`opaque=${quote(ch.opaque)}`);
    if (qop !== undefined) parts.push(`qop=${qop}`, `nc=${nc}`);
    if (ch.userhash) parts.push("userhash=true");
    return ok({
      name: ch.proxy ? "Proxy-Authorization" : "Authorization",
      value: "Digest " + parts.join(", "),
    });
  }

  /** Printable form without the password. */
  toString(): string {
    return `DigestClient(${this.#creds.username})`;
  }

  /** JSON form without the password. */
  toJSON(): { username: string } {
    return { username: this.#creds.username };
  }

  /** Deno's console.log / Deno.inspect form. */
  [Symbol.for("Deno.customInspect")](): string {
    return this.toString();
  }
}
