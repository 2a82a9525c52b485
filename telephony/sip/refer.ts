/**
 * Cold transfer by REFER (RFC 3515): we ask the peer to call the target itself. The REFER's
 * final response says whether the peer will try (202 or 200), or refuses the method (405, 501,
 * 420: a caller of another kind of transfer could try one), or refuses this transfer (403,
 * 603, ...). The peer then reports the new call's progress in NOTIFYs whose `message/sipfrag`
 * body is a status line (`SIP/2.0 180 Ringing`, then `SIP/2.0 200 OK` or a failure); the first
 * final one decides. The agent leaves the call (BYE) once the target answered; on a failure
 * the call goes on.
 *
 * @example
 * ```ts
 * import type { SipCall } from "@flowcat/flowcat/sip";
 * declare const call: SipCall;
 * const outcome = await call.transfer("sip:desk@pbx.example.com");
 * if (outcome.ok) await call.hangup();
 * ```
 * @module
 */

import type { TransferOutcome } from "../../core/frames.ts";
import { reasonPhrase } from "./build.ts";
import { getHeader, type SipRequest, type SipResponse } from "./message.ts";
import { parseUri } from "./uri.ts";

/** How long a transfer waits for the target to answer, by default (ms). */
export const DEFAULT_TRANSFER_WAIT_MS = 60_000;

/** Statuses to a REFER that refuse the method itself rather than this transfer. */
const METHOD_REFUSED: ReadonlySet<number> = new Set([405, 420, 501]);

/** The status of a `message/sipfrag` status line (`SIP/2.0 183 Session Progress`), if any. */
export function sipfragStatus(body: string): number | undefined {
  const m = /^\s*SIP\/2\.0\s+([1-6]\d\d)\b/i.exec(body);
  return m === null ? undefined : Number(m[1]);
}

/**
 * The Refer-To URI for `target`: a `sip:`, `sips:` or `tel:` URI as given; a bare number or
 * user name at the host (and port) of `peerUri`, the dialog's remote target.
 */
export function referToUri(target: string, peerUri: string): string {
  if (/^(sips?|tel):/i.test(target)) return target;
  const peer = parseUri(peerUri);
  const host = peer.ok && peer.value.host !== ""
    ? peer.value.host + (peer.value.port !== undefined ? `:${peer.value.port}` : "")
    : "invalid";
  const user = encodeURIComponent(target).replace(/%2B/gi, "+");
  return `sip:${user}@${host}`;
}

/**
 * Why `target` cannot be a transfer target (it goes into the Refer-To header), or undefined when
 * it can: a `sip:`, `sips:` or `tel:` URI that parses, or a number or user name of URI
 * characters.
 */
export function referTargetProblem(target: string): string | undefined {
  if (target.length === 0 || target.length > 256) return "a target of 1 to 256 characters";
  if (/[\s<>"]/.test(target)) return "a target without spaces, line breaks, <, > or quotes";
  if (/^(sips?|tel):/i.test(target)) {
    return parseUri(target).ok ? undefined : "a target that is a valid SIP or tel URI";
  }
  return /^[A-Za-z0-9+*#._~-]+$/.test(target) ? undefined : "a number or user name";
}

/** What a REFER's final response means, or undefined when the peer took it (wait for NOTIFY). */
export function referRefusal(res: SipResponse): TransferOutcome | undefined {
  if (res.status >= 200 && res.status < 300) return undefined;
  const phrase = res.reason || reasonPhrase(res.status);
  const reason = `the peer answered the REFER ${res.status} ${phrase}`;
  return METHOD_REFUSED.has(res.status)
    ? { ok: false, refused: true, status: res.status, reason }
    : { ok: false, status: res.status, reason };
}

/**
 * Follows the NOTIFYs of one REFER: {@link onNotify} answers each (the status to reply with)
 * and {@link outcome} resolves on the first final sipfrag, or when the subscription ends
 * without one, or after `waitMs`.
 */
export class ReferProgress {
  /** Resolves once the transfer succeeded or failed. */
  readonly outcome: Promise<TransferOutcome>;
  #resolve!: (o: TransferOutcome) => void;
  #done = false;
  #accepted = false;
  #timer: ReturnType<typeof setTimeout>;

  /** Start waiting, up to `waitMs`. */
  constructor(waitMs: number = DEFAULT_TRANSFER_WAIT_MS) {
    this.outcome = new Promise((resolve) => (this.#resolve = resolve));
    this.#timer = setTimeout(
      () => this.finish({ ok: false, reason: `no answer from the target in ${waitMs} ms` }),
      waitMs,
    );
  }

  /** True once decided. */
  get done(): boolean {
    return this.#done;
  }

  /** Decide now (a refusal of the REFER, the call ending); later calls are ignored. */
  finish(outcome: TransferOutcome): void {
    if (this.#done) return;
    this.#done = true;
    clearTimeout(this.#timer);
    this.#resolve(outcome);
  }

  /** The peer answered the REFER with a 2xx: it is trying the target. */
  accept(): void {
    this.#accepted = true;
  }

  /**
   * The call ended before a final NOTIFY. After the peer accepted the REFER, its hanging up
   * means it left for the target (some peers send no NOTIFY 200 first): the transfer is taken
   * as done. Before that, it failed.
   */
  callEnded(): void {
    this.finish(
      this.#accepted
        ? { ok: true, status: 202 }
        : { ok: false, reason: "the call ended during the transfer" },
    );
  }

  /** Take one NOTIFY of this REFER; returns the status to answer it with. */
  onNotify(req: SipRequest): number {
    const event = (getHeader(req, "Event") ?? "").trim().toLowerCase();
    if (!event.startsWith("refer")) return 489; // Bad Event
    const status = sipfragStatus(req.body);
    const terminated = /^\s*terminated/i.test(getHeader(req, "Subscription-State") ?? "");
    if (status !== undefined && status >= 200 && status < 300) {
      this.finish({ ok: true, status });
    } else if (status !== undefined && status >= 300) {
      const line = req.body.trim().split(/\r?\n/)[0].replace(/^SIP\/2\.0\s+/i, "");
      this.finish({ ok: false, status, reason: `the target answered ${line.slice(0, 80)}` });
    } else if (terminated) {
      this.finish({ ok: false, reason: "the peer ended the transfer without a final answer" });
    }
    return 200;
  }
}
