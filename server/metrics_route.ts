/**
 * `GET /metrics`: the server's metrics in the Prometheus text format. Open to a scraper on this
 * machine (a loopback peer, with no proxy's forwarding header); from anywhere else it needs
 * `Authorization: Bearer <token>`, the token of `api.token_env` (compared in constant time),
 * and is refused (403) when the config names none.
 *
 * With `--workers`, the worker that takes the scrape answers for all of them: each sample carries
 * a `worker` label (server/workers.ts joins them).
 * @module
 */

import type { Logger } from "../core/log.ts";
import { timingSafeEqual } from "../telephony/security.ts";
import { PROMETHEUS_CONTENT_TYPE } from "./prometheus.ts";
import { jsonError } from "./router.ts";
import type { ServerMetrics } from "./server_metrics.ts";

/** Headers a reverse proxy adds: a request carrying one came from elsewhere through it. */
const FORWARDING_HEADERS = ["forwarded", "x-forwarded-for", "x-real-ip"];

/** True for a loopback IP address (127.0.0.0/8, ::1, and IPv4-mapped 127.x). */
export function isLoopbackAddress(addr: string | undefined): boolean {
  if (addr === undefined) return false;
  const a = addr.replace(/^\[|\]$/g, "").toLowerCase().replace(/^::ffff:/, "");
  return a === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(a);
}

/** Whether a scrape may read the metrics: `ok`, or the refusal's status. */
export type ScrapeVerdict = "ok" | "unauthorized" | "forbidden";

/**
 * Decide a scrape: a loopback peer without forwarding headers is let in; otherwise the bearer
 * must equal `token` (`forbidden` when no token is configured).
 */
export function scrapeVerdict(
  headers: Headers,
  remote: string | undefined,
  token: string | undefined,
): ScrapeVerdict {
  const auth = headers.get("authorization") ?? "";
  const given = auth.startsWith("Bearer ") ? auth.slice(7) : undefined;
  if (token !== undefined && token !== "" && given !== undefined) {
    return timingSafeEqual(given, token) ? "ok" : "unauthorized";
  }
  const local = isLoopbackAddress(remote) && FORWARDING_HEADERS.every((h) => !headers.has(h));
  if (local) return "ok";
  return token === undefined || token === "" ? "forbidden" : "unauthorized";
}

/** What the handler needs. */
export interface MetricsRouteContext {
  /** The metrics to expose. */
  metrics: ServerMetrics;
  /** The bearer token for scrapes from elsewhere (`api.token_env`'s value), if any. */
  token: string | undefined;
  /** Where refused scrapes are logged (rate-limited). */
  refusals: Logger;
  /** The text to answer instead of `metrics`' own (workers: every worker's, joined). */
  metricsText?: () => Promise<string>;
}

/** The refusal of a scrape {@link scrapeVerdict} does not let in (counted and logged). */
export function scrapeRefusal(
  ctx: MetricsRouteContext,
  req: Request,
  remote: string | undefined,
): Response | undefined {
  const verdict = scrapeVerdict(req.headers, remote, ctx.token);
  if (verdict === "ok") return undefined;
  ctx.metrics.requestsRefused.labels("metrics_auth").inc();
  ctx.refusals.warn("metrics scrape refused", { remote: remote ?? "unknown", verdict });
  return verdict === "forbidden"
    ? jsonError(
      403,
      "metrics are open on loopback only; set api.token_env to scrape from elsewhere",
    )
    : jsonError(401, "bad bearer token", { "www-authenticate": "Bearer" });
}

/** The metrics text, for a scrape already let in. */
export async function metricsResponse(ctx: MetricsRouteContext): Promise<Response> {
  const text = ctx.metricsText !== undefined
    ? await ctx.metricsText()
    : ctx.metrics.registry.expose();
  return new Response(text, {
    status: 200,
    headers: { "content-type": PROMETHEUS_CONTENT_TYPE, "cache-control": "no-store" },
  });
}
