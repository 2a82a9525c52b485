/**
 * Trunk registration (RFC 3261 §10): REGISTER with digest auth on 401/407 (RFC 2617/7616/8760),
 * `423 Interval Too Brief` handled with Min-Expires, refresh before the granted expiry (at
 * 90% for long bindings, half-way for short ones), and after any failure a retry with
 * exponential backoff (honouring Retry-After). `unregister()` sends Expires: 0.
 * The binding keeps one Call-ID and From tag; CSeq grows by one per REGISTER.
 * @module
 */

import { errorMessage, FlowcatError } from "../../core/errors.ts";
import type { Logger } from "../../core/log.ts";
import { addressOf, buildRequest, newCallId, newTag } from "./build.ts";
import { type DigestChallenge, type DigestClient, selectChallenge } from "./digest.ts";
import { getHeader, getHeaders, type SipHeader, type SipResponse } from "./message.ts";
import { serverAddress, type SipServer } from "./config.ts";
import { TimerBag } from "./txn_base.ts";
import type { TransactionLayer } from "./transaction.ts";
import { parseNameAddr } from "./address.ts";

/** Tuning of a {@link Registration}. */
export interface RegistrationOptions {
  /** Expiry asked for, seconds; default 300. */
  expires?: number;
  /** First retry delay after a failure, ms; default 2000 (doubles per failure). */
  retryBaseMs?: number;
  /** Longest retry delay, ms; default 300000 (5 min). */
  retryMaxMs?: number;
}

/** Where a registration stands. */
export type RegistrationState = "unregistered" | "registering" | "registered" | "failed";

/** What a registration needs from its agent. */
export interface RegistrationHost {
  /** The transaction layer REGISTER requests go through. */
  readonly layer: TransactionLayer;
  /** Where registration events are logged. */
  readonly log: Logger;
  /** The registrar we register with. */
  readonly server: SipServer;
  /** SIP auth username; the user part of the registered address. */
  readonly login: string;
  /** Answers the registrar's digest challenges. */
  readonly digest: DigestClient;
  /** Address we advertise (for the Call-ID). */
  readonly advertised: string;
  /** Our Contact URI (`sip:login@ip:port`). */
  contactUri(): string;
  /** A fresh Via value (new branch) for a request we send. */
  via(): string;
  /** Headers every request we send carries (User-Agent). */
  commonHeaders(): SipHeader[];
}

/** Seconds the refresh is sent before expiry for long bindings. */
const REFRESH_MARGIN_S = 30;

/** Delay before refreshing a binding granted for `expires` seconds, ms. */
export function refreshDelayMs(expires: number): number {
  return Math.max(200, Math.max(expires / 2, expires - REFRESH_MARGIN_S) * 1000);
}

/** Backoff before retry number `failures` (1-based), ms. */
export function backoffMs(failures: number, baseMs: number, maxMs: number): number {
  return Math.min(maxMs, baseMs * 2 ** Math.max(0, Math.min(30, failures - 1)));
}

/** One trunk binding. */
export class Registration {
  /** Current state. */
  state: RegistrationState = "unregistered";
  /** Expiry the registrar granted, seconds (0 before the first success). */
  grantedExpires = 0;
  /** Failures since the last success. */
  failures = 0;
  /** Status of the last final response (408 for a timeout). */
  lastStatus: number | undefined;
  readonly #host: RegistrationHost;
  readonly #expires: number;
  readonly #retryBase: number;
  readonly #retryMax: number;
  readonly #callId: string;
  readonly #fromTag = newTag();
  readonly #timers = new TimerBag();
  #cseq = 0;
  #challenge: DigestChallenge | undefined;
  #attempt: Promise<void> | undefined;
  #closed = false;

  /** The Call-ID every REGISTER of this binding carries. */
  get callId(): string {
    return this.#callId;
  }

  /** A binding for `host` (nothing is sent until {@link register}). */
  constructor(host: RegistrationHost, opts: RegistrationOptions = {}) {
    this.#host = host;
    this.#expires = opts.expires ?? 300;
    this.#retryBase = opts.retryBaseMs ?? 2000;
    this.#retryMax = opts.retryMaxMs ?? 300_000;
    this.#callId = newCallId(host.advertised);
  }

  /**
   * Register now. Resolves once registered; rejects with a FlowcatError on failure (a retry
   * is already scheduled then). Refreshes follow on their own until {@link close}.
   */
  register(): Promise<void> {
    if (this.#closed) return Promise.reject(new FlowcatError("closed", "SIP agent is closed"));
    this.#timers.clearAll();
    this.#attempt ??= this.#run().finally(() => (this.#attempt = undefined));
    return this.#attempt;
  }

  async #run(): Promise<void> {
    const { server, log } = this.#host;
    this.state = "registering";
    try {
      const granted = await this.#exchange(this.#expires);
      this.state = "registered";
      this.failures = 0;
      this.grantedExpires = granted;
      const delay = refreshDelayMs(granted);
      log.info("sip registered", { server: server.hostPort, expires: granted, refreshInMs: delay });
      this.#timers.set(() => void this.register().catch(() => {}), delay);
    } catch (err) {
      if (this.#closed) throw err;
      this.state = "failed";
      this.failures++;
      let delay = backoffMs(this.failures, this.#retryBase, this.#retryMax);
      const retryAfter = Number(getHeader(this.#lastResponse ?? { headers: [] }, "Retry-After"));
      // Honour the server's Retry-After, but never wait longer than the configured ceiling.
      if (retryAfter > 0) delay = Math.max(delay, Math.min(retryAfter * 1000, this.#retryMax));
      log.warn("sip registration failed", {
        server: server.hostPort,
        error: errorMessage(err),
        retryInMs: delay,
      });
      this.#timers.set(() => void this.register().catch(() => {}), delay);
      throw err;
    }
  }

  #lastResponse: SipResponse | undefined;

  /** One REGISTER exchange (auth and 423 retries included); returns the granted expiry. */
  async #exchange(expires: number): Promise<number> {
    let freshChallenge = false;
    let briefRetried = false;
    this.#lastResponse = undefined;
    for (let round = 0; round < 4; round++) {
      const res = await this.#send(expires);
      this.#lastResponse = res;
      this.lastStatus = res.status;
      if (this.#closed) throw new FlowcatError("closed", "SIP agent is closed");
      if (res.status >= 200 && res.status < 300) return this.#granted(res, expires);
      if (res.status === 401 || res.status === 407) {
        const ch = selectChallenge(res);
        if (!ch.ok) throw new FlowcatError("auth", `REGISTER challenge unusable: ${ch.reason}`);
        // A fresh challenge answered and challenged again (not stale): the password is wrong.
        if (freshChallenge && !ch.value.stale) {
          throw new FlowcatError("auth", `REGISTER rejected: ${res.status} credentials refused`);
        }
        this.#challenge = ch.value;
        freshChallenge = true;
        continue;
      }
      if (res.status === 423 && !briefRetried) {
        const min = Number(getHeader(res, "Min-Expires"));
        if (!(min > 0)) throw new FlowcatError("protocol", "423 without a usable Min-Expires");
        expires = min;
        briefRetried = true;
        continue;
      }
      if (res.status === 408) {
        throw new FlowcatError(
          "timeout",
          `registrar ${this.#host.server.hostPort} did not answer REGISTER`,
        );
      }
      const kind = res.status === 403 || res.status === 404 ? "auth" : "protocol";
      throw new FlowcatError(kind, `REGISTER rejected: ${res.status} ${res.reason}`);
    }
    throw new FlowcatError("auth", "REGISTER: too many challenges");
  }

  #send(expires: number): Promise<SipResponse> {
    const h = this.#host;
    const aor = `<sip:${h.login}@${h.server.host}>`;
    const headers: SipHeader[] = [
      { name: "Via", value: h.via() },
      { name: "Max-Forwards", value: "70" },
      { name: "From", value: `${aor};tag=${this.#fromTag}` },
      { name: "To", value: aor },
      { name: "Call-ID", value: this.#callId },
      { name: "CSeq", value: `${++this.#cseq} REGISTER` },
      { name: "Contact", value: `<${h.contactUri()}>` },
      { name: "Expires", value: String(expires) },
      ...h.commonHeaders(),
    ];
    if (this.#challenge !== undefined) {
      // Re-using the last challenge (nc+1) saves a round trip on refreshes.
      const auth = h.digest.authorize(this.#challenge, "REGISTER", h.server.uri);
      if (auth.ok) headers.push(auth.value);
    }
    const req = buildRequest("REGISTER", h.server.uri, headers);
    return h.layer.request(req, serverAddress(h.server)).response;
  }

  /** The expiry granted for our Contact (its `expires` param), else Expires, else asked. */
  #granted(res: SipResponse, asked: number): number {
    const ours = this.#host.contactUri().toLowerCase();
    for (const c of getHeaders(res, "Contact")) {
      const addr = parseNameAddr(c);
      if (!addr.ok) continue;
      const uri = c.includes("<") ? c.slice(c.indexOf("<") + 1, c.indexOf(">")) : "";
      const exp = Number(addr.value.params.get("expires"));
      if (uri.toLowerCase() === ours && exp > 0) return exp;
    }
    const header = Number(getHeader(res, "Expires"));
    if (header > 0) return header;
    const anyContact = addressOf(res, "Contact")?.params.get("expires");
    return Number(anyContact) > 0 ? Number(anyContact) : asked;
  }

  /** Remove the binding (Expires: 0), waiting at most `waitMs` for the answer. */
  async unregister(waitMs: number): Promise<void> {
    this.#timers.clearAll();
    if (this.state !== "registered") return;
    this.state = "unregistered";
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<undefined>((
      r,
    ) => (timer = setTimeout(() => r(undefined), waitMs)));
    try {
      let res = await Promise.race([this.#send(0), deadline]);
      if (res !== undefined && (res.status === 401 || res.status === 407)) {
        const ch = selectChallenge(res);
        if (ch.ok) {
          this.#challenge = ch.value;
          res = await Promise.race([this.#send(0), deadline]);
        }
      }
      this.#host.log.info("sip unregistered", {
        server: this.#host.server.hostPort,
        status: res?.status ?? "no answer",
      });
    } finally {
      clearTimeout(timer);
    }
  }

  /** Stop refreshing and retrying. */
  close(): void {
    this.#closed = true;
    this.#timers.clearAll();
  }
}
