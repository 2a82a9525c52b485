/**
 * The two lines every call leaves in the log: `call started` and `call ended`, with the fields
 * an operator searches by (see docs/observability.md for both formats). Pure: the call manager
 * gathers the facts, these functions shape them.
 * @module
 */

import type { Finalize, MediaTransport } from "../core/seams.ts";
import type { EndReason } from "./end_reason.ts";
import type { RunRecord } from "./session_store.ts";

/** Who a call is, as logged on both lines. */
export interface CallIdentity {
  /** Flowcat's id of the call (the run id of its URLs and artifacts). */
  runId: number;
  /** The carrier's or leg's own id (Twilio CallSid, SIP Call-ID...), when it has one. */
  callId?: string;
  /** `browser`, `sip`, or the carrier's name (`twilio`, `telnyx`, ...). */
  transport: string;
  /** `inbound` or `outbound`. */
  direction: "inbound" | "outbound";
}

/** The transport label of a run: the carrier, else `sip`, `browser` (or the origin). */
export function transportOf(run: Pick<RunRecord, "origin" | "carrier">): string {
  return run.carrier ?? run.origin;
}

/** The leg's own call id, for transports that expose one (`callId`). */
export function legCallId(transport: MediaTransport): string | undefined {
  const id = (transport as { callId?: unknown }).callId;
  return typeof id === "string" && id !== "" ? id : undefined;
}

/** A call's identity from its run and leg. */
export function callIdentity(run: RunRecord, transport: MediaTransport): CallIdentity {
  const out: CallIdentity = {
    runId: run.runId,
    transport: transportOf(run),
    direction: run.to !== undefined ? "outbound" : "inbound",
  };
  const callId = legCallId(transport);
  if (callId !== undefined) out.callId = callId;
  return out;
}

/** Fields of the `call started` line. */
export function callStartFields(
  id: CallIdentity,
  pipeline: string,
  models: string,
): Record<string, unknown> {
  return { ...id, pipeline, models };
}

/** What is known when a call has ended. */
export interface CallEnd {
  /** Seconds from start to end (one decimal). */
  durationSeconds: number;
  /** Why, as a word. */
  reason: EndReason;
  /** The task's own stop reason (`end: caller hung up`, `cancel: idle timeout`, ...). */
  detail: string;
  /** Caller turns. */
  turns: number;
  /** Mean turn latency in seconds, when one was measured. */
  meanTurnLatencySeconds?: number;
  /** The finalize report, when finalize ran. */
  report?: Finalize;
  /** Failure counts by `service/provider/kind`, when there were any. */
  failures?: Record<string, number>;
  /** Inbound media dropped, by reason, when any was. */
  dropped?: Record<string, number>;
}

/** Fields of the `call ended` line. */
export function callEndFields(id: CallIdentity, end: CallEnd): Record<string, unknown> {
  const f: Record<string, unknown> = {
    ...id,
    durationSeconds: end.durationSeconds,
    reason: end.reason,
    detail: end.detail,
    turns: end.turns,
  };
  if (end.meanTurnLatencySeconds !== undefined) {
    f.meanTurnLatencySeconds = end.meanTurnLatencySeconds;
  }
  const r = end.report;
  if (r?.disposition !== undefined) f.disposition = r.disposition;
  if (r?.recordingUrl !== undefined) f.recording = r.recordingUrl;
  if (r?.transcriptUrl !== undefined) f.transcript = r.transcriptUrl;
  if (end.failures !== undefined) f.failures = end.failures;
  if (end.dropped !== undefined) f.dropped = end.dropped;
  return f;
}

/**
 * Inbound audio a leg dropped, by reason: `before_start` (carrier WebSocket audio ahead of the
 * stream's start message), `overflow` (SIP/RTP packets the call fell too far behind to keep).
 */
export function droppedMedia(transport: MediaTransport): Record<string, number> | undefined {
  const t = transport as { droppedBeforeStart?: unknown; droppedInbound?: unknown };
  const out: Record<string, number> = {};
  if (typeof t.droppedBeforeStart === "number" && t.droppedBeforeStart > 0) {
    out.before_start = t.droppedBeforeStart;
  }
  if (typeof t.droppedInbound === "number" && t.droppedInbound > 0) {
    out.overflow = t.droppedInbound;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}
