/**
 * SIP digest authentication, server side (RFC 3261 §22.4, RFC 7616, RFC 8760): challenge a
 * request with 401 WWW-Authenticate (or 407 Proxy-Authenticate) and verify the Authorization
 * the caller sends back. Nonces are stateless (a timestamp, random bits and an HMAC of both under
 * a per-process key), expire after `nonceTtlMs` (then `stale=true`), and with qop=auth each nonce count is
 * accepted once. The password stays inside {@link DigestCredentials}: only H(A1) leaves it.
 *
 * @example
 * ```ts
 * import { DigestCredentials, DigestVerifier, type SipHeader, type SipRequest } from "@flowcat/flowcat/sip";
 * declare const secret: string;
 * declare const invite: SipRequest;
 * declare function reply(status: number, headers?: SipHeader[]): void;
 * const verifier = new DigestVerifier(new DigestCredentials("trunk", secret), { realm: "flowcat" });
 * const verdict = verifier.verify(invite);
 * if (verdict !== "ok") reply(verifier.status, verifier.challenge(verdict === "stale"));
 * ```
 * @module
 */

import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import {
  computeDigestResponse,
  type DigestAlgorithm,
  type DigestCredentials,
  parseAuthParams,
} from "./digest.ts";
import { quote } from "./headers.ts";
import { getHeaders, type SipHeader, type SipRequest } from "./message.ts";
import { parseUri } from "./uri.ts";

/** Options of a {@link DigestVerifier}. */
export interface DigestVerifierOptions {
  /** Protection realm shown to callers. */
  realm: string;
  /** Challenge as a proxy (407, Proxy-Authenticate) instead of a UAS (401). Default false. */
  proxy?: boolean;
  /** How long a nonce is good for, ms. Default 300000 (5 minutes). */
  nonceTtlMs?: number;
  /**
   * Algorithms offered, one challenge each, preferred first. Default `["MD5"]`: many deployed
   * UAs (sipp 3.6 among them) answer the first challenge whatever its algorithm and know only
   * MD5. Offer `["SHA-256", "MD5"]` to peers that follow RFC 8760. Answers with any offered
   * algorithm are accepted.
   */
  algorithms?: readonly ("MD5" | "SHA-256")[];
  /** Clock, ms (tests move it). Default `Date.now`. */
  now?: () => number;
}

/** Outcome of {@link DigestVerifier.verify}. */
export type DigestVerdict = "ok" | "missing" | "stale" | "refused";

/** Nonce counts remembered for replay checks; older nonces are forgotten (they expire anyway). */
const MAX_TRACKED = 1024;

/** Challenges callers and checks their answers against one set of credentials. */
export class DigestVerifier {
  /** 401 or 407. */
  readonly status: 401 | 407;
  readonly #creds: DigestCredentials;
  readonly #realm: string;
  readonly #ttl: number;
  readonly #now: () => number;
  readonly #offered: readonly DigestAlgorithm[];
  readonly #key = randomBytes(32);
  readonly #counts = new Map<string, number>();

  /** A verifier accepting `creds` in `opts.realm`. */
  constructor(creds: DigestCredentials, opts: DigestVerifierOptions) {
    this.#creds = creds;
    this.#realm = opts.realm;
    this.#ttl = opts.nonceTtlMs ?? 300_000;
    this.#now = opts.now ?? Date.now;
    this.#offered = opts.algorithms?.length ? [...opts.algorithms] : ["MD5"];
    this.status = opts.proxy ? 407 : 401;
  }

  #mac(stamp: string): string {
    return createHmac("sha256", this.#key).update(stamp).digest("hex").slice(0, 32);
  }

  /** A fresh nonce: the issue time (12 hex ms), 64 random bits, and an HMAC of both. */
  #nonce(): string {
    const stamp = this.#now().toString(16).padStart(12, "0") + randomBytes(8).toString("hex");
    return stamp + this.#mac(stamp);
  }

  /** The challenge headers, one per offered algorithm; `stale` after an expired nonce. */
  challenge(stale = false): SipHeader[] {
    const name = this.status === 407 ? "Proxy-Authenticate" : "WWW-Authenticate";
    const nonce = this.#nonce();
    return this.#offered.map((algorithm) => ({
      name,
      value: `Digest realm=${quote(this.#realm)}, nonce="${nonce}", algorithm=${algorithm}, ` +
        `qop="auth"${stale ? ", stale=true" : ""}`,
    }));
  }

  /** `ok` for valid credentials; `missing` (none for our realm), `stale` or `refused` else. */
  verify(req: SipRequest): DigestVerdict {
    const header = this.status === 407 ? "Proxy-Authorization" : "Authorization";
    for (const value of getHeaders(req, header)) {
      const m = /^\s*Digest\s+(.*)$/is.exec(value);
      const p = m === null ? undefined : parseAuthParams(m[1]);
      if (p === undefined || p.get("realm") !== this.#realm) continue;
      return this.#check(req, p);
    }
    return "missing";
  }

  #check(req: SipRequest, p: Map<string, string>): DigestVerdict {
    const nonce = p.get("nonce") ?? "";
    const stamp = nonce.slice(0, 28);
    if (nonce.length !== 60 || !safeEqual(nonce.slice(28), this.#mac(stamp))) return "refused";
    const given = (p.get("algorithm") ?? "MD5").toLowerCase();
    const algorithm = this.#offered.find((a) => a.toLowerCase() === given);
    const qop = p.get("qop");
    const nc = p.get("nc");
    const uri = p.get("uri");
    const response = p.get("response");
    if (
      algorithm === undefined || p.get("username") !== this.#creds.username ||
      uri === undefined || !sameTarget(uri, req.uri) || response === undefined ||
      (qop !== undefined && qop !== "auth") ||
      (qop !== undefined && (!/^[0-9a-f]{8}$/i.test(nc ?? "") || !p.get("cnonce")))
    ) {
      return "refused";
    }
    const expected = computeDigestResponse({
      algorithm,
      username: this.#creds.username,
      realm: this.#realm,
      ha1: this.#creds.ha1(algorithm, this.#realm),
      nonce,
      method: req.method,
      uri,
      qop,
      nc,
      cnonce: p.get("cnonce"),
    });
    if (!safeEqual(response.toLowerCase(), expected)) return "refused";
    if (this.#now() - parseInt(stamp.slice(0, 12), 16) > this.#ttl) return "stale";
    if (qop !== undefined && !this.#freshCount(nonce, parseInt(nc!, 16))) return "refused";
    return "ok";
  }

  /** True the first time `count` (or a higher one) is seen for `nonce`: no replays. */
  #freshCount(nonce: string, count: number): boolean {
    const last = this.#counts.get(nonce) ?? 0;
    if (count <= last) return false;
    this.#counts.delete(nonce);
    this.#counts.set(nonce, count);
    if (this.#counts.size > MAX_TRACKED) this.#counts.delete(this.#counts.keys().next().value!);
    return true;
  }
}

/**
 * True when the digest-uri names the Request-URI's destination: the same URI, or the same host
 * and port without the user (sipp and some gateways sign `sip:host:port`). The answer stays
 * bound to this agent; the nonce count stops replays.
 */
function sameTarget(digestUri: string, requestUri: string): boolean {
  if (digestUri === requestUri) return true;
  const d = parseUri(digestUri);
  const r = parseUri(requestUri);
  return d.ok && r.ok && d.value.user === undefined && d.value.host !== "" &&
    d.value.host.toLowerCase() === r.value.host.toLowerCase() &&
    (d.value.port ?? 5060) === (r.value.port ?? 5060);
}

/** Constant-time string equality (lengths may leak; contents do not). */
function safeEqual(a: string, b: string): boolean {
  const x = new TextEncoder().encode(a);
  const y = new TextEncoder().encode(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
