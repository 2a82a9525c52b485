/**
 * Why a call ended, as one of a few words an operator can count and alert on: the label of
 * `flowcat_calls_ended_total` and the `reason` of the call-end log line. The task's own stop
 * reason (`end: caller hung up`, `cancel: idle timeout`, ...) is kept beside it as the detail.
 * @module
 */

import { TRANSFERRED } from "../core/call_control.ts";
import type { StopReason } from "../core/frames.ts";
import { MEDIA_STOPPED } from "../core/seams.ts";

/** Every end reason, in the order docs/observability.md lists them. */
export const END_REASONS = [
  "caller_hung_up",
  "agent_ended",
  "transferred",
  "model_error",
  "timeout",
  "limit",
  "drain",
  "error",
  "other",
] as const;

/** Why a call ended. */
export type EndReason = typeof END_REASONS[number];

/** What else is known when the call ended. */
export interface EndFacts {
  /** The brain's disposition, when it ended the call. */
  disposition?: string;
  /** True when the fatal error that ended the call came from a model or provider. */
  fatalFromProvider?: boolean;
}

/**
 * The {@link EndReason} of a call that stopped with `stop` (`undefined`: the task failed).
 *
 * @example
 * ```ts
 * endReason({ kind: "end", reason: "caller hung up" }); // "caller_hung_up"
 * endReason({ kind: "cancel", reason: "call too long" }); // "limit"
 * ```
 */
export function endReason(stop: StopReason | undefined, facts: EndFacts = {}): EndReason {
  if (stop === undefined) return "error";
  if (stop.kind === "stop") return "other";
  const why = stop.reason ?? "";
  if (stop.kind === "end") {
    // A peer that takes a transfer often hangs up at once, racing the agent's own End.
    if (why === "caller hung up") {
      return facts.disposition === TRANSFERRED ? "transferred" : "caller_hung_up";
    }
    // The carrier stopped sending media without closing: the leg is gone all the same.
    if (why === MEDIA_STOPPED) return "caller_hung_up";
    if (why.startsWith("brain:")) {
      return /transfer/i.test(facts.disposition ?? why) ? "transferred" : "agent_ended";
    }
    if (why.startsWith("model closed") || why.startsWith("model failed")) return "model_error";
    return "other";
  }
  if (why === "idle timeout") return "timeout";
  if (why === "call too long") return "limit";
  if (why === "server shutting down") return "drain";
  if (why.startsWith("fatal error")) return facts.fatalFromProvider ? "model_error" : "error";
  return "other";
}

/** The task's stop reason as text: `end: caller hung up`, `cancel`, ... (`error` when none). */
export function stopDetail(stop: StopReason | undefined): string {
  if (stop === undefined) return "error";
  return "reason" in stop && stop.reason ? `${stop.kind}: ${stop.reason}` : stop.kind;
}
