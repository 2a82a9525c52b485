/**
 * The checks the agent server's routes make before their handlers, as the named guards the route
 * table lists (server/routes.ts): the playground's host and origin and its offer rate, an enabled
 * carrier, a carrier's webhook signature, a WebSocket upgrade, the `api.token_env` bearer token,
 * and the metrics scrape rule. Each answers with the same refusal its route always gave.
 *
 * @example
 * ```ts
 * import { router } from "./router.ts";
 * import { consoleLogger } from "@flowcat/flowcat";
 * const route = {
 *   method: "POST" as const,
 *   path: "/calls",
 *   guards: [bearerToken(() => Deno.env.get("API_TOKEN"), () => {}, "calls are off")],
 *   handler: () => new Response("placed"),
 * };
 * Deno.serve(router([route], { maxBodyBytes: 65536, logger: consoleLogger() }));
 * ```
 * @module
 */

import { timingSafeEqual } from "../telephony/security.ts";
import type { ReplayGuard } from "../telephony/security.ts";
import { type CarrierName, isCarrierName } from "../telephony/serializers/mod.ts";
import { type CarrierWebhookSecrets, verifyCarrierWebhook } from "../telephony/webhooks.ts";
import { browserRequestRefusal, type RateLimiter } from "./browser_guard.ts";
import { type Guard, jsonError, type RouteContext } from "./router.ts";

/** How a guard reports a refusal: counted under `reason` and logged (rate-limited). */
export type RefusalLog = (reason: string, message: string, fields: Record<string, unknown>) => void;

/** The playground's Host check: the `Host` header must name this server (403 otherwise). */
export function playgroundHost(hosts: ReadonlySet<string>): Guard {
  return {
    name: "playground host",
    check: (req) => {
      const why = browserRequestRefusal(req, hosts);
      return why === undefined ? undefined : jsonError(403, why);
    },
  };
}

/** The playground's Host check plus same-origin for a request that starts a call (403). */
export function playgroundOrigin(hosts: ReadonlySet<string>): Guard {
  return {
    name: "playground host and origin",
    check: (req) => {
      const why = browserRequestRefusal(req, hosts, true);
      return why === undefined ? undefined : jsonError(403, why);
    },
  };
}

/** So many requests a client, by peer address, per minute (429 beyond). */
export function clientRate(limiter: RateLimiter): Guard {
  return {
    name: "calls per client",
    check: (_req, c) =>
      limiter.take(c.remote ?? "unknown")
        ? undefined
        : jsonError(429, "too many calls from this client; wait a minute"),
  };
}

/** The `:carrier` of the path is one the config enables (404 otherwise). */
export function enabledCarrier(carriers: readonly string[]): Guard {
  return {
    name: "enabled carrier",
    check: (_req, c) =>
      isEnabledCarrier(carriers, c.params.carrier)
        ? undefined
        : jsonError(404, "unknown or disabled carrier"),
  };
}

/** Whether `carrier` is a known carrier that `carriers` (the config's list) enables. */
export function isEnabledCarrier(
  carriers: readonly string[],
  carrier: string,
): carrier is CarrierName {
  return isCarrierName(carrier) && carriers.includes(carrier);
}

/** What {@link carrierSignature} needs. */
export interface CarrierSignatureOptions {
  /** Each carrier's webhook secrets. */
  secrets: CarrierWebhookSecrets;
  /** Refuses a signed request seen before. */
  replay: ReplayGuard;
  /**
   * The public origin the carrier signed the URL with (`public_url`, else the request's as a
   * trusted proxy forwarded it).
   */
  publicOrigin: (req: Request, c: RouteContext) => string;
  /** Where a refusal is counted and logged. */
  refuse: RefusalLog;
}

/**
 * The carrier's webhook signature over the public URL and the body (telephony/webhooks.ts): 413
 * for a body over the cap, 403 for a missing, wrong or replayed signature. Run it after
 * {@link enabledCarrier}.
 */
export function carrierSignature(opts: CarrierSignatureOptions): Guard {
  return {
    name: "carrier signature",
    check: async (req, c) => {
      const carrier = c.params.carrier as CarrierName;
      const body = await c.body();
      if (body === undefined) return jsonError(413, "request body too large");
      const signedUrl = `${opts.publicOrigin(req, c)}${c.url.pathname}${c.url.search}`;
      const verdict = await verifyCarrierWebhook(
        carrier,
        { url: signedUrl, headers: req.headers, body, method: req.method },
        opts.secrets,
        { replay: opts.replay },
      );
      if (verdict.ok) return undefined;
      opts.refuse("webhook_signature", "answer webhook refused", {
        carrier,
        reason: verdict.reason,
      });
      return jsonError(403, "webhook signature check failed");
    },
  };
}

/** The request asks for a WebSocket upgrade (426 otherwise). */
export const websocketUpgrade: Guard = {
  name: "websocket upgrade",
  check: (req) =>
    req.headers.get("upgrade")?.toLowerCase() === "websocket"
      ? undefined
      : jsonError(426, "expected a WebSocket upgrade"),
};

/**
 * `Authorization: Bearer <token>` equal (in constant time) to `token()`, the value of
 * `api.token_env`: 404 with `whenUnset` while no token is set (the route is off), 401 for a
 * wrong one.
 */
export function bearerToken(
  token: () => string | undefined,
  refuse: RefusalLog,
  whenUnset: string,
): Guard {
  return {
    name: "bearer token",
    check: (req, c: RouteContext) => {
      const expected = token();
      if (expected === undefined || expected === "") return jsonError(404, whenUnset);
      const auth = req.headers.get("authorization") ?? "";
      const given = auth.startsWith("Bearer ") ? auth.slice(7) : "";
      if (timingSafeEqual(given, expected)) return undefined;
      refuse("api_token", `${req.method} ${c.url.pathname} refused: bad bearer token`, {
        remote: c.remote,
      });
      return jsonError(401, "bad bearer token", { "www-authenticate": "Bearer" });
    },
  };
}
