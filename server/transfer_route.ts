/**
 * `POST /telephony/transfer/:carrier/:call`: the `<Dial>` document a carrier fetches to carry
 * out a transfer whose API takes only a new answer URL (Plivo). The route's guards check the
 * carrier's webhook signature (Plivo V3, with its nonce replay guard); this handler checks the
 * URL's own signature and expiry (telephony/transfer_dial.ts) and that the request is about the
 * call the URL names, then answers the document that dials the target.
 * @module
 */

import { TRANSFER_ENV } from "../telephony/carrier_transfer.ts";
import { formParams } from "../telephony/webhook_schemes.ts";
import { checkTransferDial, plivoDialXml } from "../telephony/transfer_dial.ts";
import type { EnvGet } from "./calls.ts";
import type { RefusalLog } from "./route_guards.ts";
import { jsonError, type RouteContext } from "./router.ts";

/** What the transfer-document handler needs of the server. */
export interface TransferRouteContext {
  /** Where the carrier's auth token (the URL's signing key) is read. */
  env: EnvGet;
}

/** The handler of the transfer-document route. */
export function transferDialHandler(
  ctx: TransferRouteContext,
  refuse: RefusalLog,
): (req: Request, c: RouteContext) => Promise<Response> {
  return async (_req, c) => {
    const carrier = c.params.carrier; // enabled and signed: checked by the guards
    if (carrier !== "plivo") {
      return jsonError(
        404,
        `${carrier} transfers do not fetch a document (see docs/call-control.md)`,
      );
    }
    const secretEnv = TRANSFER_ENV.plivo?.secret ?? "PLIVO_AUTH_TOKEN";
    const secret = ctx.env(secretEnv)?.trim();
    if (!secret) return jsonError(404, `transfers through plivo need ${secretEnv}`);
    const callId = c.params.call;
    const checked = await checkTransferDial(secret, carrier, callId, c.url.searchParams);
    // Plivo names the call it is transferring; it must be the one the URL was made for.
    const body = await c.body();
    const callUuid = body === undefined
      ? undefined
      : formParams(body).find(([k]) => k === "CallUUID")?.[1];
    if (!checked.ok || (callUuid !== undefined && callUuid !== callId)) {
      const reason = checked.ok ? "the request is about another call" : checked.reason;
      refuse("transfer_url", "transfer document refused", { carrier, reason });
      return jsonError(403, "bad transfer URL");
    }
    return new Response(plivoDialXml(checked.target), {
      status: 200,
      headers: { "content-type": "application/xml" },
    });
  };
}
