/**
 * Cold transfers of carrier WebSocket calls through the carrier's REST API: the carrier is told
 * to dial the target and bridge the caller to it, which ends the media stream to the agent.
 *
 * - Twilio and SignalWire (LaML, the same API shape): update the call with new TwiML,
 *   `POST /2010-04-01/Accounts/{sid}/Calls/{callSid}.json` with `Twiml=<Response><Dial>...`.
 * - Telnyx: the call control command `POST /v2/calls/{call_control_id}/actions/transfer`
 *   with `{ "to": target }`.
 * - Vonage: `PUT /v1/calls/{uuid}` with `{ action: "transfer", destination: { type: "ncco",
 *   ncco: [connect] } }`, authorised by an RS256 JWT signed with the application's private key.
 * - Plivo: `POST /v1/Account/{auth_id}/Call/{call_uuid}/` with `{ legs: "aleg", aleg_url,
 *   aleg_method: "POST" }`; Plivo then fetches `aleg_url`, a signed URL on the agent server
 *   (`dialOrigin`) that answers the `<Dial>` document (telephony/transfer_dial.ts).
 *
 * Any other carrier answers `refused: true`. Credentials come from the environment variables in
 * {@link TRANSFER_ENV}; no message ever contains one.
 *
 * @example
 * ```ts
 * import { carrierTransfer } from "@flowcat/flowcat/telephony/transfer";
 * const transfer = carrierTransfer("twilio", (n) => Deno.env.get(n));
 * const outcome = await transfer("CA123", "+15550100");
 * ```
 *
 * Permissions: `--allow-net=<carrier API host>:443` (`api.twilio.com`, the SignalWire space,
 * `api.telnyx.com`, `api.nexmo.com`, `api.plivo.com`) and `--allow-env` for the variables.
 * @module
 */

import type { TransferOutcome } from "../core/frames.ts";
import { errorMessage } from "../core/errors.ts";
import { apiOrigin, basicAuth, carrierError, jsonObject, scrub } from "./_carrier_http.ts";
import type { CarrierName } from "./serializers/mod.ts";
import { vonageJwt } from "./_vonage_jwt.ts";
import { parseTransferTarget, transferDialUrl, type TransferTarget } from "./transfer_dial.ts";

export type { TransferTarget } from "./transfer_dial.ts";

/** Transfers the carrier call `callId` to `target` (a number, or a `sip:`/`tel:` URI). */
export type CarrierTransferFn = (callId: string, target: string) => Promise<TransferOutcome>;

/** Options of {@link carrierTransfer}. */
export interface CarrierTransferOptions {
  /** HTTP client (tests inject one); default the global `fetch`. */
  fetch?: typeof fetch;
  /** Replaces the carrier's API origin, e.g. `http://127.0.0.1:8123` for a fake server. */
  baseUrl?: string;
  /** Give up after this many milliseconds (default 15000). */
  timeoutMs?: number;
  /**
   * The agent server's public origin (`https://agent.example.com`), where a carrier whose
   * transfer takes an answer URL (Plivo) fetches the `<Dial>` document; without it, Plivo calls
   * refuse transfers.
   */
  dialOrigin?: string;
}

/** Carriers whose calls {@link carrierTransfer} can transfer. */
export const TRANSFER_CARRIERS: readonly CarrierName[] = [
  "twilio",
  "signalwire",
  "telnyx",
  "vonage",
  "plivo",
];

/** Environment variables each carrier's transfer credentials are read from. */
export const TRANSFER_ENV: Readonly<Partial<Record<CarrierName, Record<string, string>>>> = Object
  .freeze({
    twilio: { user: "TWILIO_ACCOUNT_SID", secret: "TWILIO_AUTH_TOKEN" },
    signalwire: {
      user: "SIGNALWIRE_PROJECT_ID",
      secret: "SIGNALWIRE_API_TOKEN",
      space: "SIGNALWIRE_SPACE_URL",
    },
    telnyx: { secret: "TELNYX_API_KEY" },
    vonage: { user: "VONAGE_APPLICATION_ID", secret: "VONAGE_PRIVATE_KEY" },
    plivo: { user: "PLIVO_AUTH_ID", secret: "PLIVO_AUTH_TOKEN" },
  });

/** A request to send, and the secrets to keep out of any message about it. */
interface Prepared {
  url: string;
  init: RequestInit;
  secrets: string[];
}

/** TwiML that dials the target and bridges the caller to it. */
export function dialTwiml(target: TransferTarget): string {
  const noun = "sip" in target ? `<Sip>${target.sip}</Sip>` : `<Number>${target.number}</Number>`;
  return `<?xml version="1.0" encoding="UTF-8"?><Response><Dial>${noun}</Dial></Response>`;
}

function twilioLike(
  base: string,
  user: string,
  secret: string,
  callId: string,
  twiml: string,
): Prepared {
  const path = `/2010-04-01/Accounts/${encodeURIComponent(user)}/Calls/${
    encodeURIComponent(callId)
  }.json`;
  return {
    url: `${base}${path}`,
    init: {
      method: "POST",
      headers: {
        authorization: basicAuth(user, secret),
        "content-type": "application/x-www-form-urlencoded",
        accept: "application/json",
      },
      body: new URLSearchParams({ Twiml: twiml }).toString(),
    },
    secrets: [secret],
  };
}

async function prepare(
  carrier: CarrierName,
  creds: Record<string, string>,
  callId: string,
  target: TransferTarget,
  opts: CarrierTransferOptions,
): Promise<Prepared> {
  const baseUrl = opts.baseUrl;
  switch (carrier) {
    case "twilio":
      return twilioLike(
        apiOrigin(baseUrl, "https://api.twilio.com"),
        creds.user,
        creds.secret,
        callId,
        dialTwiml(target),
      );
    case "signalwire": {
      const space = creds.space.replace(/^https?:\/\//, "").replace(/\/.*$/, "");
      return twilioLike(
        `${apiOrigin(baseUrl, `https://${space}`)}/api/laml`,
        creds.user,
        creds.secret,
        callId,
        dialTwiml(target),
      );
    }
    case "telnyx":
      return {
        url: `${apiOrigin(baseUrl, "https://api.telnyx.com")}/v2/calls/${
          encodeURIComponent(callId)
        }/actions/transfer`,
        init: {
          method: "POST",
          headers: {
            authorization: `Bearer ${creds.secret}`,
            "content-type": "application/json",
            accept: "application/json",
          },
          body: JSON.stringify({ to: "sip" in target ? target.sip : target.number }),
        },
        secrets: [creds.secret],
      };
    case "plivo":
      return await plivoTransfer(creds, callId, target, opts);
    default: {
      // vonage: the endpoint takes numbers without the "+".
      const endpoint = "sip" in target
        ? { type: "sip", uri: target.sip }
        : { type: "phone", number: target.number.replace(/^\+/, "") };
      const jwt = await vonageJwt(creds.user, creds.secret);
      return {
        url: `${apiOrigin(baseUrl, "https://api.nexmo.com")}/v1/calls/${
          encodeURIComponent(callId)
        }`,
        init: {
          method: "PUT",
          headers: {
            authorization: `Bearer ${jwt}`,
            "content-type": "application/json",
            accept: "application/json",
          },
          body: JSON.stringify({
            action: "transfer",
            destination: { type: "ncco", ncco: [{ action: "connect", endpoint: [endpoint] }] },
          }),
        },
        secrets: [jwt, creds.secret],
      };
    }
  }
}

/**
 * A transfer function for calls of `carrier`, with credentials read through `env` (at each
 * transfer, so a rotated secret is picked up). It never throws: every failure is an outcome the
 * model can be told, `refused` where no retry can help (carrier without transfers, missing
 * credentials, a target that is not a number or SIP URI).
 */
export function carrierTransfer(
  carrier: CarrierName,
  env: (name: string) => string | undefined,
  opts: CarrierTransferOptions = {},
): CarrierTransferFn {
  return async (callId, target) => {
    const names = TRANSFER_ENV[carrier];
    if (names === undefined) {
      return {
        ok: false,
        refused: true,
        reason: `${carrier} calls cannot be transferred from here`,
      };
    }
    const creds: Record<string, string> = {};
    const missing: string[] = [];
    for (const [field, name] of Object.entries(names)) {
      const value = env(name)?.trim();
      if (value) creds[field] = value;
      else missing.push(name);
    }
    if (missing.length > 0) {
      return {
        ok: false,
        refused: true,
        reason: `transfers through ${carrier} need ${missing.join(", ")} in the environment`,
      };
    }
    const parsed = parseTransferTarget(target);
    if (parsed === undefined) {
      return {
        ok: false,
        refused: true,
        reason: `"${target.slice(0, 60)}" is not a phone number or a sip: URI`,
      };
    }
    let req: Prepared;
    try {
      req = await prepare(carrier, creds, callId, parsed, opts);
    } catch (err) {
      return { ok: false, refused: true, reason: `${carrier}: ${errorMessage(err)}` };
    }
    return await send(carrier, req, opts);
  };
}

/**
 * Plivo's Call Transfer: the A leg (the caller) is sent to a new answer URL, the signed `<Dial>`
 * document on the agent server, which Plivo fetches with a POST.
 */
async function plivoTransfer(
  creds: Record<string, string>,
  callId: string,
  target: TransferTarget,
  opts: CarrierTransferOptions,
): Promise<Prepared> {
  if (opts.dialOrigin === undefined) {
    throw new Error("transfers need the agent server's public origin, which serves <Dial>");
  }
  const raw = "sip" in target ? target.sip : target.number;
  const alegUrl = await transferDialUrl(opts.dialOrigin, "plivo", callId, raw, creds.secret);
  return {
    url: `${apiOrigin(opts.baseUrl, "https://api.plivo.com")}/v1/Account/${
      encodeURIComponent(creds.user)
    }/Call/${encodeURIComponent(callId)}/`,
    init: {
      method: "POST",
      headers: {
        authorization: basicAuth(creds.user, creds.secret),
        "content-type": "application/json",
        accept: "application/json",
      },
      body: JSON.stringify({ legs: "aleg", aleg_url: alegUrl, aleg_method: "POST" }),
    },
    secrets: [creds.secret],
  };
}

async function send(
  carrier: CarrierName,
  req: Prepared,
  opts: CarrierTransferOptions,
): Promise<TransferOutcome> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), opts.timeoutMs ?? 15_000);
  try {
    const res = await (opts.fetch ?? fetch)(req.url, { ...req.init, signal: controller.signal });
    const text = await res.text();
    if (res.ok) return { ok: true, status: res.status };
    const why = scrub(carrierError(jsonObject(text), text), req.secrets);
    return {
      ok: false,
      status: res.status,
      reason: `${carrier} refused the transfer (HTTP ${res.status}): ${why}`,
    };
  } catch (err) {
    const why = controller.signal.aborted
      ? "the request timed out"
      : scrub(errorMessage(err), req.secrets);
    return { ok: false, reason: `${carrier}: transfer request failed: ${why}` };
  } finally {
    clearTimeout(timer);
  }
}
