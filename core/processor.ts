/**
 * FrameProcessor: one small unit with one job. The framework owns its loop (see
 * core/runtime.ts): lifecycle frames go to hooks, every other frame to
 * {@link FrameProcessor.processFrame}.
 *
 * @example
 * ```ts
 * import { FrameProcessor, type Link } from "@flowcat/flowcat";
 * import { type Direction, type Frame, outputAudio } from "@flowcat/flowcat";
 *
 * class Echo extends FrameProcessor {
 *   override processFrame(frame: Frame, dir: Direction, link: Link): void {
 *     if (frame.kind === "InputAudio") link.push(outputAudio(frame.audio), "downstream");
 *     else link.push(frame, dir);
 *   }
 * }
 * ```
 * @module
 */

import type { Direction, Frame, LlmTokenUsage, StartParams, StopReason } from "./frames.ts";
import type { Logger } from "./log.ts";
import type { Observer } from "./observers.ts";
import type { CallTracer } from "./tracing.ts";

/** What the framework hands a processor before Start. */
export interface ProcessorSetup {
  /** Monotonic pipeline clock in nanoseconds. */
  clock: () => number;
  /** The task's observers, composed; `undefined` when none is registered. */
  observer: Observer | undefined;
  /** Aborted when the task is cancelled past its cancel timeout (forced abort). */
  cancel: AbortSignal;
  /** Whether the processor reports time-to-first-byte and processing metrics. */
  enableMetrics: boolean;
  /** Whether the processor reports usage metrics. */
  enableUsageMetrics: boolean;
  /** Logger of the task the processor runs in. */
  logger: Logger;
  /** Where provider requests are traced; `undefined` when tracing is off (the default). */
  tracer?: CallTracer;
}

/** How a processor emits frames. One per processor per task; never allocated per frame. */
export interface Link {
  /** Push a frame to the neighbour in `direction`. Never blocks. */
  push(frame: Frame, direction: Direction): void;
  /** Push downstream. */
  pushDown(frame: Frame): void;
  /** Push an Error frame upstream, naming this processor. */
  pushError(message: string, fatal?: boolean): void;
  /** Push copies of `frame` both ways, each carrying the other's id as broadcast sibling. */
  broadcast(frame: Frame): void;
  /**
   * For producers outside the processor loop (reader tasks): resolves once the downstream
   * (or upstream) neighbour has room. Inside `processFrame` the loop does this for you.
   */
  writable(direction?: Direction): Promise<void>;
  /** Start a time-to-first-byte measurement. */
  startTtfb(): void;
  /** Stop it and report a Ttfb metric (once only when `reportOnlyInitialTtfb`). */
  stopTtfb(model?: string): void;
  /** Start a processing-time measurement. */
  startProcessing(): void;
  /** Stop it and report a Processing metric. */
  stopProcessing(model?: string): void;
  /** Report LLM token usage (when usage metrics are enabled). */
  reportLlmUsage(tokens: LlmTokenUsage, model?: string): void;
  /** Report TTS character usage (when usage metrics are enabled). */
  reportTtsUsage(characters: number, model?: string): void;
}

let unnamed = 0;

/**
 * Base class of every processor. Override what you need; the default `processFrame`
 * forwards the frame unchanged in the direction it arrived.
 */
export class FrameProcessor {
  /** Name shown in logs, Error frames, metrics and observer events. */
  readonly name: string;

  /** Make a processor; the name defaults to `<ClassName>#<n>`. */
  constructor(name?: string) {
    this.name = name ?? `${this.constructor.name}#${++unnamed}`;
  }

  /**
   * Start hook: open sockets, spawn readers (which push through `link`). Runs when Start
   * arrives, before it is forwarded.
   */
  start(_setup: ProcessorSetup, _params: StartParams, _link: Link): void | Promise<void> {}

  /** Handle one frame. Throwing (or rejecting) becomes an upstream Error frame, fatal false. */
  processFrame(frame: Frame, direction: Direction, link: Link): void | Promise<void> {
    link.push(frame, direction);
  }

  /** Runs on Interruption, after queued interruptible frames are dropped. */
  onInterruption(): void | Promise<void> {}

  /** Stop hook: flush and close. Runs on End, Stop or Cancel, before the frame is forwarded. */
  stop(_reason: StopReason): void | Promise<void> {}

  /** Whether this processor reports metrics (default false). */
  canGenerateMetrics(): boolean {
    return false;
  }
}
