/**
 * The agent server's routes, as a table of method, path, guards and handler. The guards
 * (server/route_guards.ts) make the access checks before a handler runs; handlers are thin:
 * they check the request's content and hand the call to the {@link CallManager}.
 *
 * | method | path                               | guards                           | handler       |
 * | ------ | ---------------------------------- | -------------------------------- | ------------- |
 * | GET    | /, /app.js, /style.css             | playgroundHost                   | file          |
 * | GET    | /healthz                           |                                  | health        |
 * | GET    | /metrics                           | metricsAccess                    | metrics       |
 * | POST   | /webrtc/offer                      | playgroundOrigin, clientRate     | webrtcOffer   |
 * | POST   | /telephony/answer/:carrier/:run?   | enabledCarrier, carrierSignature | carrierAnswer |
 * | GET    | /telephony/ws/:carrier/:run        | enabledCarrier, websocketUpgrade | mediaSocket   |
 * | POST   | /telephony/transfer/:carrier/:call | enabledCarrier, carrierSignature | transferDial  |
 * | POST   | /calls                             | bearerToken                      | originate     |
 *
 * What each guard checks and answers: server/route_guards.ts. The media socket's call token
 * (query or start message) is checked by its handler (server/media_socket.ts), since Twilio
 * sends it only after the upgrade.
 * @module
 */

import { errorMessage } from "../core/errors.ts";
import type { Logger } from "../core/log.ts";
import type { WebRtcAnswerOptions } from "../transports/webrtc.ts";
import {
  answerCallId,
  answerDocument,
  answerUrl,
  hasAnswerDocument,
  streamUrl,
} from "../telephony/answer.ts";
import { isE164, ReplayGuard } from "../telephony/security.ts";
import type { CarrierName } from "../telephony/serializers/mod.ts";
import {
  type CarrierWebhookSecrets,
  WEBHOOK_SECRET_ENV,
  webhookSecretsFromEnv,
} from "../telephony/webhooks.ts";
import type { CarrierTransferOptions } from "../telephony/carrier_transfer.ts";
import type { CallManager, EnvGet } from "./calls.ts";
import type { AgentServerConfig } from "./config.ts";
import type { OutboundDialer } from "./outbound.ts";
import { mediaSocketHandler } from "./media_socket.ts";
import { transferDialHandler } from "./transfer_route.ts";
import { TRANSFER_DIAL_PATH } from "../telephony/transfer_dial.ts";
import { metricsResponse, scrapeRefusal } from "./metrics_route.ts";
import { forwardedOrigin, peerKey } from "./forwarded.ts";
import { type Guard, json, jsonError, type Route, type RouteContext } from "./router.ts";
import {
  bearerToken,
  carrierSignature,
  clientRate,
  enabledCarrier,
  playgroundHost,
  playgroundOrigin,
  type RefusalLog,
  websocketUpgrade,
} from "./route_guards.ts";
import type { ServerMetrics } from "./server_metrics.ts";
import type { MemorySessionSource } from "./session_store.ts";
import { servePlayground } from "./static.ts";
import { playgroundHosts, RateLimiter } from "./browser_guard.ts";
import { hostInterfaces } from "./webrtc_peers.ts";
import { transcriptEvent } from "./transcript_event.ts";

/** What the handlers share. */
export interface ServerContext {
  config: AgentServerConfig;
  calls: CallManager;
  sessions: MemorySessionSource;
  env: EnvGet;
  logger: Logger;
  /** Where refused requests are logged: rate-limited, a flood is one line per interval. */
  refusals: Logger;
  /** The server's metrics. */
  metrics: ServerMetrics;
  /** Where `/metrics` text comes from instead (workers: all of them, joined). */
  metricsText?: () => Promise<string>;
  /** Originates outbound calls (carrier REST or SIP); `/calls` answers 501 without one. */
  dialer?: OutboundDialer;
  /** WebRTC answer options (ICE mode, extra host addresses). */
  webrtc?: Omit<WebRtcAnswerOptions, "logger">;
  /** How carrier calls are transferred over REST (tests point it at a fake API). */
  carrierApi?: CarrierTransferOptions;
  /** Carrier silence after which a call counts as lost, ms (server/media_socket.ts). */
  mediaSilenceLimitMs?: number;
}

/** The route table of the agent server. */
export function agentRoutes(ctx: ServerContext): Route[] {
  const refused: RefusalLog = (reason, message, fields) => refuse(ctx, reason, message, fields);
  const hosts = playgroundHosts(
    ctx.config.server.host,
    hostInterfaces(),
    ctx.config.playground.hosts,
  );
  const page = [playgroundHost(hosts)];
  const offer = [
    playgroundOrigin(hosts),
    clientRate(new RateLimiter(OFFER_BURST, OFFERS_PER_MINUTE)),
  ];
  const carrier = enabledCarrier(ctx.config.telephony.carriers);
  const signed = carrierSignature({
    secrets: webhookSecrets(ctx),
    replay: new ReplayGuard(),
    publicOrigin: (req, c) => publicOrigin(ctx, req, c.remote),
    refuse: refused,
  });
  const api = bearerToken(
    () => apiToken(ctx),
    refused,
    "outbound calls are disabled (set api.token_env)",
  );
  const file = (name: string) => () => servePlayground(ctx.config, name);
  return [
    { method: "GET", path: "/", guards: page, handler: file("index.html") },
    { method: "GET", path: "/app.js", guards: page, handler: file("app.js") },
    { method: "GET", path: "/style.css", guards: page, handler: file("style.css") },
    { method: "GET", path: "/healthz", handler: () => health(ctx) },
    { method: "GET", path: "/metrics", guards: [metricsAccess(ctx)], handler: () => metrics(ctx) },
    {
      method: "POST",
      path: "/webrtc/offer",
      guards: offer,
      handler: (r, c) => webrtcOffer(ctx, r, c),
    },
    {
      method: "POST",
      path: "/telephony/answer/:carrier/:run?",
      guards: [carrier, signed],
      handler: (r, c) => carrierAnswer(ctx, r, c),
    },
    {
      method: "GET",
      path: "/telephony/ws/:carrier/:run",
      guards: [carrier, websocketUpgrade],
      handler: mediaSocketHandler(
        { ...ctx, dialOrigin: (req, remote) => publicOrigin(ctx, req, remote) },
        refused,
      ),
    },
    {
      method: "POST",
      path: `${TRANSFER_DIAL_PATH}/:carrier/:call`,
      guards: [carrier, signed],
      handler: transferDialHandler(ctx, refused),
    },
    { method: "POST", path: "/calls", guards: [api], handler: (r, c) => originate(ctx, r, c) },
  ];
}

/** `/metrics` is open to a loopback scraper, else needs the `api.token_env` bearer. */
function metricsAccess(ctx: ServerContext): Guard {
  return {
    name: "loopback or bearer token",
    check: (r, c) => scrapeRefusal({ ...ctx, token: apiToken(ctx) }, r, c.remote),
  };
}

function metrics(ctx: ServerContext): Promise<Response> {
  return metricsResponse({ ...ctx, token: apiToken(ctx) });
}

function health(ctx: ServerContext): Response {
  return json(ctx.calls.draining ? 503 : 200, {
    ok: !ctx.calls.draining,
    activeCalls: ctx.calls.active,
    draining: ctx.calls.draining,
    ...(ctx.sessions.worker !== undefined ? { worker: ctx.sessions.worker } : {}),
  });
}

/** The value of `api.token_env` (the bearer of `/calls` and remote `/metrics`), if set. */
function apiToken(ctx: ServerContext): string | undefined {
  const env = ctx.config.api.tokenEnv;
  return env === undefined ? undefined : ctx.env(env);
}

/** Count a refused request and log it (rate-limited: a flood is one line per interval). */
function refuse(
  ctx: ServerContext,
  reason: string,
  message: string,
  fields: Record<string, unknown>,
): void {
  ctx.metrics.requestsRefused.labels(reason).inc();
  ctx.refusals.warn(message, fields);
}

async function jsonBody(c: RouteContext): Promise<Record<string, unknown> | Response> {
  const bytes = await c.body();
  if (bytes === undefined) return jsonError(413, "request body too large");
  try {
    const v = JSON.parse(new TextDecoder().decode(bytes));
    if (typeof v === "object" && v !== null && !Array.isArray(v)) return v;
  } catch { /* answered below */ }
  return jsonError(400, "body must be a JSON object");
}

// ---------------------------------------------------------------- browser

/** Offers a client may make at once, and per minute after that. */
const OFFER_BURST = 5;
const OFFERS_PER_MINUTE = 20;

async function webrtcOffer(ctx: ServerContext, _req: Request, c: RouteContext): Promise<Response> {
  if (!ctx.config.playground.enabled) return jsonError(404, "playground disabled");
  const body = await jsonBody(c);
  if (body instanceof Response) return body;
  if (typeof body.sdp !== "string") return jsonError(400, "sdp: expected the offer's SDP text");
  const refused = ctx.calls.refusal();
  if (refused !== undefined) return jsonError(503, refused);
  let answer;
  try {
    // Loaded at the first offer: the WebRTC stack (werift and its npm dependencies, one of
    // which reads process.env when imported) costs nothing to a server no browser calls.
    const { answerWebRtcOffer } = await import("../transports/webrtc.ts");
    answer = await answerWebRtcOffer(body.sdp, { ...ctx.webrtc, logger: ctx.logger });
  } catch (err) {
    return jsonError(400, errorMessage(err));
  }
  const { session, answerSdp } = answer;
  const run = await ctx.sessions.createRun("browser");
  session.sendEvent({ type: "state", state: "listening", runId: run.runId });
  void ctx.calls.run(session, run, {
    onTranscript: (line, index) =>
      line.role === "tool" // the page shows what is said and node moves, not tool results
        ? undefined
        : line.role === "node"
        ? session.sendEvent({ type: "node", id: line.text })
        : session.sendEvent(transcriptEvent(line, index)),
    onFailed: (reason) => session.sendEvent({ type: "error", message: reason }),
    onFinalized: (r) => session.sendEvent({ type: "state", state: "ended", usage: r.usage }),
  }).catch((err) => ctx.logger.warn("browser call refused", { err: errorMessage(err) }));
  if (ctx.config.agent.kind === "graph") {
    session.sendEvent({ type: "node", id: ctx.config.agent.spec.start });
  }
  return json(200, { sdp: answerSdp, runId: run.runId });
}

// ---------------------------------------------------------------- carriers

function webhookSecrets(ctx: ServerContext): CarrierWebhookSecrets {
  // A config may name its own variable for a one-secret carrier; the rest use the defaults.
  const named = ctx.config.telephony.webhookSecretsEnv as Record<string, string | undefined>;
  const get: EnvGet = (name) => {
    for (const [carrier, env] of Object.entries(named)) {
      const defaults = WEBHOOK_SECRET_ENV[carrier as CarrierName];
      if (env !== undefined && defaults?.length === 1 && defaults[0] === name) return ctx.env(env);
    }
    return ctx.env(name);
  };
  return webhookSecretsFromEnv(get);
}

/**
 * The public origin carriers reach us at: the config's `public_url`, else the request's, as a
 * trusted proxy (`server.trusted_proxies`) forwarded it.
 */
function publicOrigin(ctx: ServerContext, req: Request, remote: string | undefined): string {
  return ctx.config.telephony.publicUrl ??
    forwardedOrigin(req, remote, new Set(ctx.config.server.trustedProxies.map(peerKey)));
}

async function carrierAnswer(
  ctx: ServerContext,
  req: Request,
  c: RouteContext,
): Promise<Response> {
  // The guards have checked the carrier and the signature over the (cached) body.
  const carrier = c.params.carrier as CarrierName;
  const body = await c.body();
  if (body === undefined) return jsonError(413, "request body too large");
  if (!hasAnswerDocument(carrier)) {
    return jsonError(404, `${carrier} does not fetch answer documents (see docs/carriers.md)`);
  }
  let run;
  if (c.params.run !== undefined) {
    const id = /^\d{1,15}$/.test(c.params.run) ? Number(c.params.run) : -1;
    run = ctx.sessions.get(id);
    // Another worker placed the call: the signed token in the URL lets this one adopt it.
    const token = c.url.searchParams.get("token");
    if (run === undefined && token !== null && id >= 0) {
      run = await ctx.sessions.verify(id, token, { origin: "outbound", carrier });
    }
    if (run === undefined || run.finalize !== undefined || run.carrier !== carrier) {
      return jsonError(404, "no such call");
    }
    // The token goes out once: a replayed or repeated answer webhook for a run whose media
    // socket is already bound gets no copy of it.
    if (run.mediaBound) return jsonError(409, "this call is already connected");
  } else {
    const refused = ctx.calls.refusal();
    if (refused !== undefined) return jsonError(503, refused);
    run = await ctx.sessions.createRun("carrier", { carrier });
  }
  const origin = publicOrigin(ctx, req, c.remote);
  const callId = answerCallId(carrier, c.url, body);
  const doc = answerDocument(carrier, {
    streamUrl: streamUrl(origin, carrier, run.runId, run.token),
    token: run.token,
    runId: run.runId,
    ...(callId !== undefined ? { callId } : {}),
  });
  if (doc === undefined) return jsonError(500, "no answer document");
  return new Response(doc.body, { status: 200, headers: { "content-type": doc.contentType } });
}

// ---------------------------------------------------------------- outbound

async function originate(ctx: ServerContext, req: Request, c: RouteContext): Promise<Response> {
  const body = await jsonBody(c);
  if (body instanceof Response) return body;
  if (!isE164(body.to)) return jsonError(400, "to: expected an E.164 number such as +14155550123");
  const via = typeof body.via === "string" ? body.via : undefined;
  if (ctx.dialer === undefined) return jsonError(501, "no outbound route configured");
  const refused = ctx.calls.refusal();
  if (refused !== undefined) return jsonError(503, refused);
  try {
    const placed = await ctx.dialer.dial({
      to: body.to,
      via,
      answerUrl: (carrier, runId) => answerUrl(publicOrigin(ctx, req, c.remote), carrier, runId),
    });
    return json(202, placed);
  } catch (err) {
    return jsonError(502, errorMessage(err));
  }
}
