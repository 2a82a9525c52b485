/**
 * Outbound calls for `POST /calls`: a run and its token are created, then the call is placed
 * through a carrier's REST API (the carrier fetches the run's answer document when the callee
 * picks up) or, with `via: "sip"`, through the SIP trunk.
 * @module
 */

import { FlowcatError } from "../core/errors.ts";
import { type CarrierName, isCarrierName } from "../telephony/serializers/mod.ts";
import {
  ORIGINATE_CARRIERS,
  originateCall,
  originateCredentialsFromEnv,
  type OriginateOptions,
} from "../telephony/originate.ts";
import type { EnvGet } from "./calls.ts";
import type { MemorySessionSource, RunRecord } from "./session_store.ts";

/** One outbound call request. */
export interface DialRequest {
  /** Callee, E.164 (already checked). */
  to: string;
  /** `sip`, or a carrier name; default: the SIP trunk when configured, else the first carrier. */
  via?: string;
  /** The answer URL for a carrier and run. */
  answerUrl: (carrier: CarrierName, runId: number) => string;
}

/** What `POST /calls` answers. */
export interface DialResult {
  /** The run created for the call (its answer URL and artifacts use it). */
  runId: number;
  /** How the call was placed: `sip` or the carrier name. */
  via: string;
  /** The carrier's call id; for SIP, `sip-run-<runId>` (the INVITE is still in flight). */
  callId?: string;
}

/** Places outbound calls. */
export interface OutboundDialer {
  /** Create a run and place the call; throws a `config` error when it cannot be placed. */
  dial(req: DialRequest): Promise<DialResult>;
}

/** Places calls through a SIP trunk; the server plugs its SIP agent in here. */
export type SipDialFn = (to: string, runId: number) => Promise<{ callId: string }>;

/** Options of {@link carrierDialer}. */
export interface CarrierDialerOptions {
  sessions: MemorySessionSource;
  env: EnvGet;
  /** Enabled carriers, in config order. */
  carriers: readonly CarrierName[];
  /** Caller id for carrier calls (E.164). */
  callerId?: string;
  sip?: SipDialFn;
  originate?: OriginateOptions;
}

/** A dialer over the enabled carriers and, when given, the SIP trunk. */
export function carrierDialer(opts: CarrierDialerOptions): OutboundDialer {
  return {
    async dial(req) {
      const via = req.via ??
        (opts.sip ? "sip" : opts.carriers.find((c) => ORIGINATE_CARRIERS.includes(c)));
      if (via === "sip") {
        if (opts.sip === undefined) throw new FlowcatError("config", "no SIP trunk configured");
        const run = await opts.sessions.createRun("sip", { to: req.to });
        const placed = await opts.sip(req.to, run.runId);
        return { runId: run.runId, via, callId: placed.callId };
      }
      if (via === undefined || !isCarrierName(via) || !opts.carriers.includes(via)) {
        throw new FlowcatError("config", `via: no enabled carrier "${via ?? ""}" can place calls`);
      }
      if (!ORIGINATE_CARRIERS.includes(via)) {
        throw new FlowcatError("config", `via: ${via} cannot place calls from here`);
      }
      if (opts.callerId === undefined) {
        throw new FlowcatError("config", "no caller id configured for outbound carrier calls");
      }
      const creds = originateCredentialsFromEnv(via, opts.env);
      const run = await opts.sessions.createRun("outbound", { carrier: via, to: req.to });
      const placed = await originateCall(
        via,
        { to: req.to, from: opts.callerId, answerUrl: outboundAnswerUrl(req, opts, via, run) },
        creds,
        opts.originate,
      );
      return { runId: run.runId, via, callId: placed.callId };
    },
  };
}

/**
 * The answer URL handed to the carrier. With several workers on one port the carrier's fetch may
 * reach another worker, so the URL carries the run's signed token for that worker to adopt it.
 */
function outboundAnswerUrl(
  req: { answerUrl: (carrier: CarrierName, runId: number) => string },
  opts: { sessions: MemorySessionSource },
  via: CarrierName,
  run: RunRecord,
): string {
  const url = req.answerUrl(via, run.runId);
  return opts.sessions.worker === undefined ? url : `${url}?token=${encodeURIComponent(run.token)}`;
}
