/**
 * The record of a realtime session handover (one provider connection replaced by the next):
 * logged once per handover and passed to the process's listeners (the server's metrics).
 * @module
 */

import type { Logger } from "./log.ts";

/** What happened to the model's answer that was running when the old connection ended. */
export type HandoverReply =
  /** No answer was running. */
  | "none"
  /** The model was told what the caller heard and asked to go on from there. */
  | "continued"
  /** Nothing of the answer had been heard: the model was asked to give it again. */
  | "re-asked";

/** One handover, as logged. */
export interface HandoverReport {
  /** `gemini`, `openai`, ... */
  provider: string;
  /** Why: `goAway`, `goAway deadline`, `socket closed (code 1006)`, ... */
  reason: string;
  /** From the old connection's last message to the new session being ready, ms (>= 0). */
  gapMs: number;
  /** Caller audio written again on the new session, ms. */
  replayedMs: number;
  reply: HandoverReply;
  /** The new session carries the old one's conversation (resumed or reseeded). */
  resumed: boolean;
}

/** The reply handling for an answer cut with `heard` spoken so far (undefined: none running). */
export function handoverReply(heard: string | undefined): HandoverReply {
  return heard === undefined ? "none" : heard === "" ? "re-asked" : "continued";
}

const listeners = new Set<(r: HandoverReport) => void>();

/** Log the handover once (info) and tell the listeners. */
export function reportHandover(log: Logger, r: HandoverReport): void {
  log.info(`${r.provider}: session handed over`, {
    reason: r.reason,
    gapMs: Math.round(r.gapMs),
    replayedMs: Math.round(r.replayedMs),
    reply: r.reply,
    resumed: r.resumed,
  });
  for (const fn of listeners) fn(r);
}

/** Call `fn` with every handover in this process; returns the unsubscribe. */
export function onHandover(fn: (r: HandoverReport) => void): () => void {
  listeners.add(fn);
  return () => void listeners.delete(fn);
}
