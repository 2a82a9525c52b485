/**
 * Per-processor metric helpers behind {@link Link}'s start/stop TTFB and processing calls.
 * A Metrics frame is emitted downstream only when metrics (or usage metrics) are enabled
 * for the task and the processor says it can generate them.
 * @module
 */

import { type LlmTokenUsage, makeFrame, type MetricsData } from "./frames.ts";
import type { Frame } from "./frames.ts";

export type { LlmTokenUsage, MetricsData } from "./frames.ts";

/** Options of a {@link MetricsTracker}. */
export interface MetricsOptions {
  /** Name of the processor the metrics are reported for. */
  processor: string;
  /** Whether time-to-first-byte and processing times are reported. */
  enableMetrics: boolean;
  /** Whether usage (tokens, characters) is reported. */
  enableUsageMetrics: boolean;
  /** Report time-to-first-byte only for the first response, not every one. */
  reportOnlyInitialTtfb: boolean;
  /** Monotonic clock in nanoseconds. */
  clock: () => number;
  /** Where Metrics frames go (downstream). */
  emit: (frame: Frame) => void;
}

/** TTFB, processing-time and usage reporting for one processor. */
export class MetricsTracker {
  #ttfbStart: number | undefined;
  #processingStart: number | undefined;
  #ttfbReported = false;

  /** Make a tracker for one processor. */
  constructor(private readonly o: MetricsOptions) {}

  /** Start timing the first byte. */
  startTtfb(): void {
    if (!this.o.enableMetrics) return;
    if (this.o.reportOnlyInitialTtfb && this.#ttfbReported) return;
    this.#ttfbStart = this.o.clock();
  }

  /** Stop timing and report. No-op without a matching start. */
  stopTtfb(model?: string): void {
    if (this.#ttfbStart === undefined) return;
    const seconds = (this.o.clock() - this.#ttfbStart) / 1e9;
    this.#ttfbStart = undefined;
    this.#ttfbReported = true;
    this.#report({ type: "ttfb", processor: this.o.processor, model, seconds });
  }

  /** Start timing processing. */
  startProcessing(): void {
    if (this.o.enableMetrics) this.#processingStart = this.o.clock();
  }

  /** Stop timing processing and report. No-op without a matching start. */
  stopProcessing(model?: string): void {
    if (this.#processingStart === undefined) return;
    const seconds = (this.o.clock() - this.#processingStart) / 1e9;
    this.#processingStart = undefined;
    this.#report({ type: "processing", processor: this.o.processor, model, seconds });
  }

  /** Report LLM token usage. */
  reportLlmUsage(tokens: LlmTokenUsage, model?: string): void {
    if (!this.o.enableUsageMetrics) return;
    this.#report({ type: "llm_usage", processor: this.o.processor, model, tokens });
  }

  /** Report TTS characters. */
  reportTtsUsage(characters: number, model?: string): void {
    if (!this.o.enableUsageMetrics) return;
    this.#report({ type: "tts_usage", processor: this.o.processor, model, characters });
  }

  #report(data: MetricsData): void {
    if (data.type !== "turn_prediction" && data.model === undefined) delete data.model;
    this.o.emit(makeFrame("Metrics", { data: [data] }));
  }
}
