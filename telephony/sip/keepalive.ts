/**
 * NAT keep-alive towards the trunk: every `intervalMs` either a CRLF pair (RFC 5626 §4.4.1's
 * ping, which SIP servers ignore) or an OPTIONS request, so that the NAT in front of the agent
 * keeps the UDP mapping the trunk sends INVITEs through. OPTIONS also tells when the trunk
 * stops answering (one warning, one line when it is back).
 * @module
 */

import type { Logger } from "../../core/log.ts";
import { buildRequest, newCallId, newTag } from "./build.ts";
import type { SipHeader } from "./message.ts";
import type { TransactionLayer } from "./transaction.ts";
import type { UdpAddress } from "./udp.ts";

/** How to keep the NAT mapping open. */
export interface KeepAliveOptions {
  /** `crlf` (4 bytes) or `options` (a request the trunk answers). */
  mode: "crlf" | "options";
  /** Interval, ms. */
  intervalMs: number;
}

/** What the keep-alive needs from its agent. */
export interface KeepAliveHost {
  /** The transaction layer OPTIONS go through. */
  readonly layer: TransactionLayer;
  /** Where trunk reachability changes are logged. */
  readonly log: Logger;
  /** Send raw bytes from the SIP socket. */
  sendRaw(bytes: Uint8Array, to: UdpAddress): void;
  /** A fresh Via value (new branch). */
  via(): string;
  /** Our Contact URI. */
  contactUri(): string;
  /** Headers every request carries (User-Agent). */
  commonHeaders(): SipHeader[];
}

const CRLF2 = new TextEncoder().encode("\r\n\r\n");

/** Pings `target` (a SIP URI and its address) until stopped. */
export class KeepAlive {
  readonly #host: KeepAliveHost;
  readonly #opts: KeepAliveOptions;
  readonly #uri: string;
  readonly #to: UdpAddress;
  readonly #callId: string;
  readonly #tag = newTag();
  #cseq = 0;
  #timer: ReturnType<typeof setInterval> | undefined;
  #down = false;
  /** Pings sent. */
  sent = 0;

  /** Keep `to` (whose URI is `uri`) reachable; call {@link start}. */
  constructor(host: KeepAliveHost, uri: string, to: UdpAddress, opts: KeepAliveOptions) {
    this.#host = host;
    this.#opts = opts;
    this.#uri = uri;
    this.#to = to;
    this.#callId = newCallId(to.hostname);
  }

  /** Start pinging; idempotent. */
  start(): void {
    this.#timer ??= setInterval(() => this.#ping(), this.#opts.intervalMs);
  }

  /** Stop pinging; idempotent. */
  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #ping(): void {
    this.sent++;
    if (this.#opts.mode === "crlf") {
      this.#host.sendRaw(CRLF2, this.#to);
      return;
    }
    const h = this.#host;
    const contact = `<${h.contactUri()}>`;
    const req = buildRequest("OPTIONS", this.#uri, [
      { name: "Via", value: h.via() },
      { name: "Max-Forwards", value: "70" },
      { name: "From", value: `${contact};tag=${this.#tag}` },
      { name: "To", value: `<${this.#uri}>` },
      { name: "Call-ID", value: this.#callId },
      { name: "CSeq", value: `${++this.#cseq} OPTIONS` },
      { name: "Contact", value: contact },
      ...h.commonHeaders(),
    ]);
    const txn = h.layer.request(req, this.#to);
    void txn.response.then(() => {
      // Any answer, even 4xx/5xx, proves the path works; only silence (a local 408) does not.
      const down = txn.timedOut;
      if (down && !this.#down) h.log.warn("sip keep-alive: the trunk does not answer OPTIONS");
      if (!down && this.#down) h.log.info("sip keep-alive: the trunk answers again");
      this.#down = down;
    });
  }
}
