/**
 * The carrier media socket, `GET /telephony/ws/:carrier/:run`: checks the call token (in the
 * query before the upgrade, or in the start message after it, as Twilio sends it), caps the
 * sockets waiting for their start, and hands the stream to the {@link CallManager} as a
 * {@link WsMediaTransport}. The route table (server/routes.ts) runs the enabled-carrier and
 * WebSocket-upgrade guards first.
 * @module
 */

import { errorMessage } from "../core/errors.ts";
import type { Logger } from "../core/log.ts";
import { type CarrierName, createSerializer } from "../telephony/serializers/mod.ts";
import { socketFromWebSocket, WsMediaTransport } from "../telephony/ws_transport.ts";
import {
  carrierTransfer,
  type CarrierTransferFn,
  type CarrierTransferOptions,
} from "../telephony/carrier_transfer.ts";
import type { CallManager, CallTicket, EnvGet } from "./calls.ts";
import type { AgentServerConfig } from "./config.ts";
import { jsonError, type RouteContext } from "./router.ts";
import type { RefusalLog } from "./route_guards.ts";
import type { MemorySessionSource } from "./session_store.ts";

/** Sockets that may wait for their start message at once, and how long each may wait. */
const MAX_PENDING_SOCKETS = 200;
const START_DEADLINE_MS = 5000;
/**
 * A call whose carrier sends no audio for this long has lost its peer and ends (carriers stream
 * audio all through a call). It replaces Deno's WebSocket idle timeout, off on these sockets:
 * that one re-arms a timer on every message (docs/decisions.md).
 */
export const MEDIA_SILENCE_LIMIT_MS = 20_000;

/** What the media-socket handler uses of the server. */
export interface MediaSocketContext {
  /** The server config (the media limits). */
  config: AgentServerConfig;
  /** Admits and runs the call. */
  calls: CallManager;
  /** Checks the call token and binds the run's one media socket. */
  sessions: MemorySessionSource;
  /** Where a call that ended early is logged. */
  logger: Logger;
  /** The carrier API credentials a transfer uses. */
  env: EnvGet;
  /** How carrier calls are transferred over REST (tests point it at a fake API). */
  carrierApi?: CarrierTransferOptions;
  /** The server's public origin as the carrier reached it (where Plivo fetches a transfer). */
  dialOrigin?: (req: Request, remote: string | undefined) => string;
  /** Silence after which a carrier leg counts as lost (default {@link MEDIA_SILENCE_LIMIT_MS}). */
  mediaSilenceLimitMs?: number;
}

/** Media sockets upgraded but not yet past their start message (counted and capped). */
interface MediaGate {
  pending: number;
  /** One transfer function per carrier, shared by its calls (it keeps nothing of a call). */
  transfers: Map<CarrierName, CarrierTransferFn>;
}

/** The media-socket route handler; one per server, as it counts the sockets awaiting a start. */
export function mediaSocketHandler(
  ctx: MediaSocketContext,
  refuse: RefusalLog,
): (req: Request, c: RouteContext) => Promise<Response> {
  const gate: MediaGate = { pending: 0, transfers: new Map() };
  return (req, c) => mediaSocket({ ...ctx, refuse, gate }, req, c);
}

/** The handler's context: the server's, the refusal log and the socket gate. */
interface Ctx extends MediaSocketContext {
  refuse: RefusalLog;
  gate: MediaGate;
}

async function mediaSocket(ctx: Ctx, req: Request, c: RouteContext): Promise<Response> {
  const carrier = c.params.carrier as CarrierName; // checked by the enabled-carrier guard
  const runId = /^\d{1,15}$/.test(c.params.run) ? Number(c.params.run) : -1;
  const queryToken = c.url.searchParams.get("token");
  // A token in the query is checked before the upgrade: a bad one never gets a socket, nor does
  // a second socket for the same run or one for a call that has ended.
  // While draining, a socket is refused before the upgrade, so a balancer can send it to
  // another instance (which adopts the run by its signed token) instead of losing the call.
  if (ctx.calls.draining) return jsonError(503, "server is draining");
  const adopt = { origin: "carrier" as const, carrier };
  if (queryToken !== null) {
    const run = await ctx.sessions.verify(runId, queryToken, adopt);
    if (run === undefined) {
      ctx.refuse("call_token", "media socket refused: bad call token", {
        carrier,
        run: c.params.run,
      });
      return jsonError(401, "bad call token");
    }
    if (!ctx.sessions.bindMedia(run)) {
      ctx.refuse("call_token", "media socket refused: the run has had its socket", {
        carrier,
        run: runId,
      });
      return jsonError(409, "this call already has (or had) its media socket");
    }
  }
  if (ctx.gate.pending >= MAX_PENDING_SOCKETS) {
    ctx.refuse("pending_sockets", "media socket refused: too many waiting for a start", {
      carrier,
    });
    return jsonError(503, "too many media sockets waiting for their start");
  }
  const { socket, response } = Deno.upgradeWebSocket(req, { idleTimeout: 0 });
  const limits = ctx.config.limits;
  const transport = new WsMediaTransport(socketFromWebSocket(socket), createSerializer(carrier), {
    logger: ctx.logger,
    maxMessageAudioMs: limits.maxMessageAudioMs,
    maxAudioBurstMs: limits.mediaBurstMs,
    silenceLimitMs: ctx.mediaSilenceLimitMs ?? MEDIA_SILENCE_LIMIT_MS,
    // Only Plivo's transfer names this server's public origin (its <Dial> document URL),
    // which depends on the request; the other carriers' functions are shared.
    transfer: carrier === "plivo" && ctx.dialOrigin !== undefined
      ? carrierTransfer(carrier, ctx.env, {
        ...ctx.carrierApi,
        dialOrigin: ctx.dialOrigin(req, c.remote),
      })
      : transferFor(ctx, carrier),
  });
  // Accepted before any drain: its call may still start once one began (and the drain waits).
  const ticket = ctx.calls.admit();
  // A function of its own, so the call (which lives for minutes) holds on to what it needs and
  // not to the upgrade request, its headers and the route context.
  runMediaCall(ctx, transport, runId, queryToken, carrier, ticket).catch((err) => {
    ticket.release();
    endedEarly(ctx, err);
  });
  return response;
}

/** The stream's start, or undefined when it ends first or does not come within the deadline. */
async function startWithin(
  transport: WsMediaTransport,
  ms: number,
): Promise<Awaited<ReturnType<WsMediaTransport["waitForStart"]>>> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), ms)));
  try {
    return await Promise.race([transport.waitForStart(), late]);
  } finally {
    clearTimeout(timer);
  }
}

async function runMediaCall(
  ctx: Ctx,
  transport: WsMediaTransport,
  runId: number,
  queryToken: string | null,
  carrier: CarrierName,
  ticket: CallTicket,
): Promise<void> {
  // Carriers that cannot put a query on the stream URL (Twilio) pass the token in the start
  // message: nothing is resolved until it checks out, and a socket that never sends one is
  // closed after the deadline.
  ctx.gate.pending++;
  let start;
  try {
    start = await startWithin(transport, START_DEADLINE_MS);
  } finally {
    ctx.gate.pending--;
  }
  if (start === undefined) {
    ticket.release();
    ctx.refuse("no_start", "media socket closed: no start message in time", { carrier });
    await transport.close();
    return;
  }
  const adopt = { origin: "carrier" as const, carrier };
  if (queryToken === null) {
    const run = await ctx.sessions.verify(runId, start.params?.token ?? "", adopt);
    if (run === undefined || !ctx.sessions.bindMedia(run)) {
      ticket.release();
      ctx.refuse("call_token", "media socket closed: bad or used call token", {
        carrier,
        run: runId,
      });
      await transport.close();
      return;
    }
    ctx.calls.run(transport, run, {}, ticket).catch((err) => endedEarly(ctx, err));
    return;
  }
  const run = ctx.sessions.get(runId);
  if (run === undefined || run.finalize !== undefined) {
    ticket.release();
    await transport.close();
    return;
  }
  // Not awaited: this function's frame would stay suspended for the whole call.
  ctx.calls.run(transport, run, {}, ticket).catch((err) => endedEarly(ctx, err));
}

/** The carrier's transfer function, made once per server and carrier. */
function transferFor(ctx: Ctx, carrier: CarrierName): CarrierTransferFn {
  let fn = ctx.gate.transfers.get(carrier);
  if (fn === undefined) {
    fn = carrierTransfer(carrier, ctx.env, ctx.carrierApi);
    ctx.gate.transfers.set(carrier, fn);
  }
  return fn;
}

function endedEarly(ctx: Ctx, err: unknown): void {
  ctx.logger.warn("carrier call ended early", { err: errorMessage(err) });
}
