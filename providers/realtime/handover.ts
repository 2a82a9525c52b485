/**
 * The record of a realtime session handover (one provider connection replaced by the next):
 * logged once per handover and added to a process-wide tally that metrics read at scrape time.
 * @module
 */

import type { Logger } from "../../core/log.ts";

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

const tally = new Map<string, number>();

/** Log the handover once (info) and count it. */
export function reportHandover(log: Logger, r: HandoverReport): void {
  log.info(`${r.provider}: session handed over`, {
    reason: r.reason,
    gapMs: Math.round(r.gapMs),
    replayedMs: Math.round(r.replayedMs),
    reply: r.reply,
    resumed: r.resumed,
  });
  const key = `${r.provider}\u0000${r.reply}`;
  tally.set(key, (tally.get(key) ?? 0) + 1);
}

/** Handovers so far in this process, by provider and reply handling (for metrics). */
export function handoverTotals(): { provider: string; reply: HandoverReply; count: number }[] {
  return [...tally].map(([key, count]) => {
    const [provider, reply] = key.split("\u0000");
    return { provider, reply: reply as HandoverReply, count };
  });
}
