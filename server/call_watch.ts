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
 *
 * Per call this costs one small object and two closures; the frame-kind Sets are shared.
 * @module
 */

import type { Frame, FrameKind } from "../core/frames.ts";
import type { Logger } from "../core/log.ts";
import type { PipelineTask } from "../core/task.ts";
import {
  type CallFailureReport,
  CallFailures,
  type ProviderNames,
  serviceOf,
} from "./call_failures.ts";
import type { ServerMetrics } from "./server_metrics.ts";

/**
 * Turns and turn latency from speaking edges. A turn is the caller's speech between two of the
 * bot's (the VAD's stop edges are pauses: several of them can make one turn); its latency is
 * measured from the last stop to the bot's next start, unless the caller spoke again first.
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
  /** The caller's turn since the bot last started speaking was counted. */
  #counted = false;

  /** The caller started speaking (VAD): a reply not yet begun is no longer timed. */
  userStarted(): void {
    this.#vad = true;
    this.#stoppedAt = undefined;
  }

  /** The caller stopped speaking (VAD) at `ms`: a pause, maybe the end of their turn. */
  userStopped(ms: number): void {
    this.#vad = true;
    if (!this.#counted) this.turns++;
    this.#counted = true;
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
    this.#counted = false;
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

/** What every call of one server shares (made once, so a call holds only a reference). */
export interface WatchShared {
  /** Provider per service, for log lines and the TTFB and error labels. */
  providers: ProviderNames;
  /** The server's metrics, when it keeps them. */
  metrics?: ServerMetrics;
  /** Clock in ms (default `performance.now`). */
  now?: () => number;
}

/** The default clock, made once (not a bound function per frame). */
const performanceNow = (): number => performance.now();

/** Frame kinds looked at, as Sets shared by every call. */
const UP_KINDS: ReadonlySet<FrameKind> = new Set([
  "UserStartedSpeaking",
  "UserStoppedSpeaking",
  "BotInterrupted",
]);
const DOWN_KINDS: ReadonlySet<FrameKind> = new Set([
  "Transcription",
  "BotStartedSpeaking",
  "BotStoppedSpeaking",
  "Metrics",
]);

/**
 * One call's watch: its {@link TurnMeter} (it is one), and its {@link CallFailures}, made on the
 * first failure. An idle call holds this object, two small closures and its hook entries.
 */
export class CallWatch extends TurnMeter {
  readonly #shared: WatchShared;
  readonly #log: Logger;
  readonly #onFatal: ((f: CallFailureReport) => void) | undefined;
  #failures: CallFailures | undefined;
  /** Bot audio (20 ms chunks) the output discarded on barge-ins. */
  bargeInFrames = 0;

  /**
   * A watch logging to `log` (which carries the call's id); fatal failures also go to
   * `onFatal` (error reporting), when given.
   */
  constructor(shared: WatchShared, log: Logger, onFatal?: (f: CallFailureReport) => void) {
    super();
    this.#shared = shared;
    this.#log = log;
    this.#onFatal = onFatal;
  }

  /** The call's failures (made on first use). */
  get failures(): CallFailures {
    return this.#failures ??= new CallFailures(
      this.#log,
      this.#shared.providers,
      this.#shared.metrics,
      this.#onFatal,
    );
  }

  /** The call's failures, or `undefined` when nothing failed. */
  get failed(): CallFailures | undefined {
    return this.#failures?.any ? this.#failures : undefined;
  }

  /** Hook `task` (before it runs). */
  attach(task: PipelineTask): void {
    const onFrame = (f: Frame) => this.#frame(f);
    task.onFrameReachedUpstream(UP_KINDS, onFrame);
    task.onFrameReachedDownstream(DOWN_KINDS, onFrame);
    task.onError((message, fatal, processor) => this.failures.record(message, fatal, processor));
  }

  #frame(f: Frame): void {
    const { metrics, providers } = this.#shared;
    const now = this.#shared.now ?? performanceNow;
    switch (f.kind) {
      case "UserStartedSpeaking":
        return this.userStarted();
      case "UserStoppedSpeaking":
        return this.userStopped(now());
      case "BotInterrupted":
        this.bargeInFrames += f.droppedFrames ?? 0;
        return;
      case "Transcription":
        if (f.final && f.userId === "user") this.userTranscript(now());
        return;
      case "BotStartedSpeaking": {
        const s = this.botStarted(now());
        if (s !== undefined) metrics?.turnLatency.labels().observe(s);
        return;
      }
      case "BotStoppedSpeaking":
        return this.botStopped();
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
  }
}

/** Watch `task` (before it runs): a {@link CallWatch} attached to it. */
export function watchCall(
  task: PipelineTask,
  shared: WatchShared,
  log: Logger,
  onFatal?: (f: CallFailureReport) => void,
): CallWatch {
  const w = new CallWatch(shared, log, onFatal);
  w.attach(task);
  return w;
}
