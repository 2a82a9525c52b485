/**
 * Where each carrier's REST API lives and which variables hold its credentials: what placing an
 * outbound call (`./telephony/originate`) and transferring one (`./telephony/transfer`) reach.
 * The server derives its `--allow-net` and `--allow-env` grants for enabled carriers from these.
 *
 * Permissions: none (pure).
 *
 * @example
 * ```ts
 * import { carrierApiEnv, carrierApiHost } from "./carrier_api.ts";
 * carrierApiHost("twilio"); // "api.twilio.com:443"
 * carrierApiEnv("telnyx"); // ["TELNYX_API_KEY", "TELNYX_CONNECTION_ID"]
 * ```
 * @module
 */

import { ORIGINATE_ENV } from "./originate.ts";
import { TRANSFER_ENV } from "./carrier_transfer.ts";
import type { CarrierName } from "./serializers/mod.ts";

/** The SignalWire variable naming the space (`example.signalwire.com`), the API's host. */
export const SIGNALWIRE_SPACE_ENV = "SIGNALWIRE_SPACE_URL";

const API_HOSTS: Readonly<Partial<Record<CarrierName, string>>> = Object.freeze({
  twilio: "api.twilio.com:443",
  telnyx: "api.telnyx.com:443",
  plivo: "api.plivo.com:443",
  vonage: "api.nexmo.com:443",
});

/**
 * The `host:port` of `carrier`'s REST API, or undefined when it has none we call. SignalWire's
 * host is the operator's space: pass `SIGNALWIRE_SPACE_URL`'s value as `signalwireSpace`.
 */
export function carrierApiHost(carrier: CarrierName, signalwireSpace?: string): string | undefined {
  if (carrier !== "signalwire") return API_HOSTS[carrier];
  const space = signalwireSpace?.trim();
  if (!space) return undefined;
  try {
    const url = new URL(space.includes("://") ? space : `https://${space}`);
    return `${url.hostname}:${url.port || "443"}`;
  } catch {
    return undefined; // not a host: the call itself reports the bad variable
  }
}

/** The variables `carrier`'s REST credentials are read from (outbound calls and transfers). */
export function carrierApiEnv(carrier: CarrierName): string[] {
  const names = [
    ...Object.values(ORIGINATE_ENV[carrier] ?? {}),
    ...Object.values(TRANSFER_ENV[carrier] ?? {}),
  ];
  return [...new Set(names)];
}
