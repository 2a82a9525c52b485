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
 * Media a call dropped, by reason: what its leg says ({@link MediaTransport.droppedMedia}:
 * `before_start`, `oversized`, `too_fast`, `overflow`, `late`, `jitter_discard`, `barge_in`)
 * plus `bargeInFrames`, the bot audio its output discarded on barge-in. Zero counts are left
 * out; `undefined` when nothing was dropped.
 */
export function droppedMedia(
  transport: MediaTransport,
  bargeInFrames = 0,
): Record<string, number> | undefined {
  const out: Record<string, number> = {};
  for (const [reason, n] of Object.entries(transport.droppedMedia?.() ?? {})) {
    if (n > 0) out[reason] = n;
  }
  if (bargeInFrames > 0) out.barge_in = (out.barge_in ?? 0) + bargeInFrames;
  return Object.keys(out).length > 0 ? out : undefined;
}
