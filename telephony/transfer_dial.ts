/**
 * The `<Dial>` document a carrier fetches to carry out a transfer, for carriers whose transfer
 * API only takes a new answer URL (Plivo). The URL names the call and the target, with an expiry
 * and an HMAC-SHA256 over all three under the carrier's auth token: any process of the agent
 * server can check it (no state is kept between the transfer request and the carrier's fetch),
 * and nobody without the token can make the server dial a target of their choosing.
 *
 * Targets: a number (with or without `tel:`, separators dropped) or a `sip:`/`sips:` URI.
 *
 * Permissions: none (pure, WebCrypto).
 *
 * @example
 * ```ts
 * import { checkTransferDial, plivoDialXml, transferDialUrl } from "./transfer_dial.ts";
 * const url = await transferDialUrl("https://agent.example.com", "plivo", "uuid-1", "+15550100", "token");
 * const checked = await checkTransferDial("token", "plivo", "uuid-1", new URL(url).searchParams);
 * if (checked.ok) plivoDialXml(checked.target); // <Response><Dial><Number>15550100</Number>...
 * ```
 * @module
 */

import { timingSafeEqual } from "../core/secrets.ts";
import { hmac } from "./security.ts";

/** Where the agent server serves transfer documents: `<path>/<carrier>/<call id>`. */
export const TRANSFER_DIAL_PATH = "/telephony/transfer";

/** A transfer target: a phone number (digits, an optional leading `+`) or a SIP URI. */
export type TransferTarget = { number: string } | { sip: string };

/** How long a transfer URL stays valid, in seconds, unless told otherwise. */
const DEFAULT_TTL_SECONDS = 300;

const NUMBER = /^\+?[0-9]{2,15}$/;
const SIP_URI = /^sips?:[^\s<>"'&]+$/i;

/** The target as a number (without `tel:` and separators) or a SIP URI; undefined if neither. */
export function parseTransferTarget(target: string): TransferTarget | undefined {
  const t = target.trim();
  if (SIP_URI.test(t)) return { sip: t };
  const n = t.replace(/^tel:/i, "").replace(/[\s().-]/g, "");
  return NUMBER.test(n) ? { number: n } : undefined;
}

/** The signed string: every field on its own line, so no field can run into the next. */
const signed = (carrier: string, callId: string, target: string, exp: string) =>
  `flowcat-transfer\n${carrier}\n${callId}\n${target}\n${exp}`;

/**
 * The URL a carrier fetches to transfer `callId` to `target`: `origin` + {@link TRANSFER_DIAL_PATH}
 * + `/<carrier>/<callId>?target=...&exp=...&sig=...`, valid for `ttlSeconds` (default 300).
 */
export async function transferDialUrl(
  origin: string,
  carrier: string,
  callId: string,
  target: string,
  secret: string,
  opts: { ttlSeconds?: number; now?: number } = {},
): Promise<string> {
  const now = opts.now ?? Date.now();
  const exp = String(Math.floor(now / 1000) + (opts.ttlSeconds ?? DEFAULT_TTL_SECONDS));
  const sig = (await hmac(secret, signed(carrier, callId, target, exp))).toBase64({
    alphabet: "base64url",
    omitPadding: true,
  });
  const query = new URLSearchParams({ target, exp, sig });
  return `${origin.replace(/\/+$/, "")}${TRANSFER_DIAL_PATH}/${encodeURIComponent(carrier)}/${
    encodeURIComponent(callId)
  }?${query}`;
}

/** What {@link checkTransferDial} found: the target to dial, or why not (names no secret). */
export type TransferDialCheck = { ok: true; target: TransferTarget } | {
  ok: false;
  reason: string;
};

/** Checks a transfer URL's query (made by {@link transferDialUrl}) for `carrier` and `callId`. */
export async function checkTransferDial(
  secret: string,
  carrier: string,
  callId: string,
  query: URLSearchParams,
  now: number = Date.now(),
): Promise<TransferDialCheck> {
  const target = query.get("target");
  const exp = query.get("exp");
  const sig = query.get("sig");
  if (target === null || exp === null || sig === null) {
    return { ok: false, reason: "transfer URL without target, exp and sig" };
  }
  const expected = (await hmac(secret, signed(carrier, callId, target, exp))).toBase64({
    alphabet: "base64url",
    omitPadding: true,
  });
  if (!timingSafeEqual(expected, sig)) {
    return { ok: false, reason: "transfer URL signature mismatch" };
  }
  if (!/^\d{1,12}$/.test(exp) || Number(exp) * 1000 < now) {
    return { ok: false, reason: "transfer URL expired" };
  }
  const parsed = parseTransferTarget(target);
  if (parsed === undefined) return { ok: false, reason: "transfer target is not a number or URI" };
  return { ok: true, target: parsed };
}

/**
 * Plivo XML that dials `target` and bridges the caller to it: `<Number>` for a number (Plivo
 * takes it with the country code and without the `+`), `<User>` for a SIP URI.
 */
export function plivoDialXml(target: TransferTarget): string {
  const noun = "sip" in target
    ? `<User>${target.sip}</User>`
    : `<Number>${target.number.replace(/^\+/, "")}</Number>`;
  return `<?xml version="1.0" encoding="UTF-8"?><Response><Dial>${noun}</Dial></Response>`;
}
