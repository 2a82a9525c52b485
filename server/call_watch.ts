/**
 * What a running call shows its operator, read off the frames that reach the ends of its
 * pipeline (task hooks, not observers: nothing runs per processor hop, and the only per-frame
 * work is the task's own kind check at the sink):
 *
 * - turns and turn latency ({@link TurnMeter}): from the caller stopping speaking (the VAD's
 *   UserStoppedSpeaking, or for a speech-to-speech model without one, its final transcript of
 *   the caller) to the bot's first audio (BotStartedSpeaking);
 * - time to first byte per service (the Metrics frames the service processors report);
 * - every Error frame, handed to {@link CallFailures}.
 * @module
 */

import type { Frame } from "../core/frames.ts";
import type { PipelineTask } from "../core/task.ts";
import { type CallFailures, type ProviderNames, serviceOf } from "./call_failures.ts";
import type { ServerMetrics } from "./server_metrics.ts";

/**
 * Turns and turn latency from speaking edges. A turn is the caller finishing speaking; its
 * latency is measured when the bot starts speaking next, unless the caller spoke again first.
 */
export class TurnMeter {
  /** Caller turns so far. */
  turns = 0;
  /** Replies whose latency was measured. */
  measured = 0;
  /** Sum of the measured latencies, seconds. */
  latencySum = 0;
  #stoppedAt: number | undefined;
  #botSpeaking = false;
  #vad = false;

  /** The caller started speaking (VAD): a reply not yet begun is no longer timed. */
  userStarted(): void {
    this.#vad = true;
    this.#stoppedAt = undefined;
  }

  /** The caller stopped speaking (VAD) at `ms`. */
  userStopped(ms: number): void {
    this.#vad = true;
    this.turns++;
    this.#stoppedAt = ms;
  }

  /**
   * A final transcript of the caller at `ms`: the end of a turn for a pipeline without VAD
   * edges (a speech-to-speech model detects turns itself). Ignored once VAD edges were seen.
   */
  userTranscript(ms: number): void {
    if (this.#vad) return;
    this.turns++;
    if (!this.#botSpeaking) this.#stoppedAt ??= ms;
  }

  /** The bot started speaking at `ms`: the latency in seconds when a turn was waiting. */
  botStarted(ms: number): number | undefined {
    this.#botSpeaking = true;
    const from = this.#stoppedAt;
    if (from === undefined) return undefined;
    this.#stoppedAt = undefined;
    const seconds = Math.max(0, ms - from) / 1000;
    this.measured++;
    this.latencySum += seconds;
    return seconds;
  }

  /** The bot stopped speaking. */
  botStopped(): void {
    this.#botSpeaking = false;
  }

  /** Mean measured latency in seconds (3 decimals), or `undefined` with none. */
  meanLatency(): number | undefined {
    return this.measured === 0 ? undefined : Math.round(this.latencySum / this.measured * 1000) /
      1000;
  }
}

/** Where a call's observations go. */
export interface CallWatchTargets {
  /** Counts and logs the call's failures. */
  failures: CallFailures;
  /** Provider per service, for the TTFB labels. */
  providers: ProviderNames;
  /** The server's metrics, when it keeps them. */
  metrics?: ServerMetrics;
  /** Clock in ms (default `performance.now`). */
  now?: () => number;
}

const UP_KINDS = ["UserStartedSpeaking", "UserStoppedSpeaking"] as const;
const DOWN_KINDS = [
  "Transcription",
  "BotStartedSpeaking",
  "BotStoppedSpeaking",
  "Metrics",
] as const;

/**
 * Hook `task` (before it runs) so that its turns, latencies, TTFBs and errors reach `targets`.
 * Returns the call's {@link TurnMeter}.
 */
export function watchCall(task: PipelineTask, targets: CallWatchTargets): TurnMeter {
  const meter = new TurnMeter();
  const now = targets.now ?? (() => performance.now());
  const { metrics, failures, providers } = targets;
  const latency = metrics?.turnLatency.labels();
  task.onFrameReachedUpstream(UP_KINDS, (f: Frame) => {
    if (f.kind === "UserStartedSpeaking") meter.userStarted();
    else meter.userStopped(now());
  });
  task.onFrameReachedDownstream(DOWN_KINDS, (f: Frame) => {
    switch (f.kind) {
      case "Transcription":
        if (f.final && f.userId === "user") meter.userTranscript(now());
        return;
      case "BotStartedSpeaking": {
        const s = meter.botStarted(now());
        if (s !== undefined) latency?.observe(s);
        return;
      }
      case "BotStoppedSpeaking":
        return meter.botStopped();
      case "Metrics":
        if (metrics === undefined) return;
        for (const d of f.data) {
          if (d.type !== "ttfb") continue;
          const service = serviceOf(d.processor);
          if (service === undefined) continue;
          metrics.ttfb.labels(service, providers[service] ?? service).observe(d.seconds);
        }
        return;
    }
  });
  task.onError((message, fatal, processor) => failures.record(message, fatal, processor));
  return meter;
}
