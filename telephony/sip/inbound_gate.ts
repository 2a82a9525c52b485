/**
 * Who may start things on the agent: the inbound source allowlist (an IP-authenticated trunk,
 * an SBC, a PBX or a proxy, by address or CIDR block) and the optional digest challenge of new
 * INVITEs. A request from a refused source gets `403 Forbidden` or, with `refused: "ignore"`,
 * no answer at all (nothing for a scanner to learn); responses to our own requests are never
 * filtered. Pure apart from the verifier's nonce bookkeeping.
 * @module
 */

import { buildResponse, newTag } from "./build.ts";
import type { DigestCredentials } from "./digest.ts";
import { DigestVerifier } from "./digest_server.ts";
import type { SipHeader, SipRequest, SipResponse } from "./message.ts";
import { SourceFilter } from "./source_filter.ts";
import type { Refusal } from "./uas_checks.ts";
import type { UdpAddress } from "./udp.ts";

/** Digest challenge of inbound INVITEs. */
export interface InboundAuth {
  /** Realm shown in the challenge. */
  realm: string;
  /** The username and password callers must present (the password stays in the object). */
  credentials: DigestCredentials;
  /** Challenge with 407 Proxy-Authenticate instead of 401 WWW-Authenticate. Default false. */
  proxy?: boolean;
  /** Nonce lifetime, ms. Default 300000. */
  nonceTtlMs?: number;
  /** Algorithms offered, preferred first; default `["MD5"]` (see DigestVerifierOptions). */
  algorithms?: readonly ("MD5" | "SHA-256")[];
}

/** What the agent accepts requests from. */
export interface InboundPolicy {
  /** Addresses or CIDR blocks allowed to send requests; absent: any source. */
  allow?: readonly string[];
  /** A refused source gets 403 (`reject`, the default) or no answer (`ignore`). */
  refused?: "reject" | "ignore";
  /** Challenge every new INVITE with digest auth. */
  auth?: InboundAuth;
}

/** The inbound policy, ready to apply. */
export class InboundGate {
  /** Requests refused for their source so far. */
  refusedSources = 0;
  readonly #filter: SourceFilter | undefined;
  readonly #refused: "reject" | "ignore";
  readonly #verifier: DigestVerifier | undefined;

  /** Compile `policy`; throws a FlowcatError for an entry that is not an address or block. */
  constructor(policy: InboundPolicy = {}) {
    this.#filter = policy.allow === undefined ? undefined : SourceFilter.parse(policy.allow);
    this.#refused = policy.refused ?? "reject";
    const auth = policy.auth;
    this.#verifier = auth === undefined ? undefined : new DigestVerifier(auth.credentials, {
      realm: auth.realm,
      proxy: auth.proxy,
      nonceTtlMs: auth.nonceTtlMs,
      algorithms: auth.algorithms,
    });
  }

  /** The allowed entries, or undefined when every source is admitted. */
  get allowed(): readonly string[] | undefined {
    return this.#filter?.entries;
  }

  /**
   * Undefined when a request from `from` may proceed; otherwise what to send back: a 403, or
   * null for no answer (an ignored source, or an ACK, which is never answered).
   */
  screen(req: SipRequest, from: UdpAddress, headers: SipHeader[]): SipResponse | null | undefined {
    if (this.#filter === undefined || this.#filter.admits(from.hostname)) return undefined;
    this.refusedSources++;
    if (this.#refused === "ignore" || req.method === "ACK") return null;
    return buildResponse(req, 403, {
      reason: "Forbidden (source not allowed)",
      toTag: newTag(),
      headers,
    });
  }

  /** Undefined when a new INVITE may proceed; the 401/407 challenge otherwise. */
  authorize(req: SipRequest): Refusal | undefined {
    const v = this.#verifier;
    if (v === undefined) return undefined;
    const verdict = v.verify(req);
    if (verdict === "ok") return undefined;
    return { status: v.status, headers: v.challenge(verdict === "stale") };
  }
}
