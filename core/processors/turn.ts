/**
 * Turn strategies: what the caller's voice-activity edges mean for the conversation.
 *
 * The default ({@link DefaultTurnStrategy}) turns VadUserStartedSpeaking into a broadcast
 * UserStartedSpeaking and, when the caller speaks over the bot (barge-in), a broadcast
 * Interruption; VadUserStoppedSpeaking becomes a broadcast UserStoppedSpeaking. Whether the
 * bot is speaking comes from the BotStartedSpeaking / BotStoppedSpeaking frames the output
 * transport broadcasts. {@link VadProcessor} runs a strategy on its own edges;
 * {@link TurnProcessor} runs one on VAD frames produced elsewhere (e.g. a realtime model's
 * server-side VAD).
 *
 * @example
 * ```ts
 * import { DefaultTurnStrategy, TurnProcessor } from "./turn.ts";
 * const turns = new TurnProcessor(new DefaultTurnStrategy({ interruptions: "always" }));
 * ```
 * @module
 */

import { type Direction, type Frame, makeFrame } from "../frames.ts";
import { FrameProcessor, type Link } from "../processor.ts";

/**
 * When the caller starting to speak interrupts the bot:
 * - `bot-speaking` (default): only while the bot is speaking (barge-in);
 * - `always`: every time, which also cancels a reply still being generated (pipecat's
 *   `allow_interruptions=True`);
 * - `never`: the bot always finishes (pipecat's `allow_interruptions=False`).
 */
export type InterruptionMode = "bot-speaking" | "always" | "never";

/** Decides the conversation frames that follow voice-activity edges. */
export interface TurnStrategy {
  /**
   * Sees every frame the owning processor passes on, after it was forwarded, and any VAD edge
   * that processor makes; pushes its own frames through `link`.
   */
  onFrame(frame: Frame, direction: Direction, link: Link): void;
}

/** Options of a {@link DefaultTurnStrategy}. */
export interface DefaultTurnStrategyOptions {
  /** When a user start interrupts the bot (default `bot-speaking`). */
  interruptions?: InterruptionMode;
}

/** The default turn strategy: user edges follow VAD edges; barge-in interrupts. */
export class DefaultTurnStrategy implements TurnStrategy {
  /** When a user start interrupts the bot. */
  readonly interruptions: InterruptionMode;
  #botSpeaking = false;
  #userSpeaking = false;
  #interrupts = 0;

  /** Make a strategy (see {@link DefaultTurnStrategyOptions}). */
  constructor(opts: DefaultTurnStrategyOptions = {}) {
    this.interruptions = opts.interruptions ?? "bot-speaking";
  }

  /** True between BotStartedSpeaking and BotStoppedSpeaking. */
  get botSpeaking(): boolean {
    return this.#botSpeaking;
  }

  /** True between the user's started and stopped edges. */
  get userSpeaking(): boolean {
    return this.#userSpeaking;
  }

  /** Number of Interruption broadcasts made so far. */
  get interruptCount(): number {
    return this.#interrupts;
  }

  /** Track bot speech; turn VAD edges into user edges and barge-in. */
  onFrame(frame: Frame, _direction: Direction, link: Link): void {
    switch (frame.kind) {
      case "BotStartedSpeaking":
        this.#botSpeaking = true;
        break;
      case "BotStoppedSpeaking":
        this.#botSpeaking = false;
        break;
      case "VadUserStartedSpeaking": {
        // Both copies of a broadcast edge may pass by; the first one counts.
        if (this.#userSpeaking) break;
        this.#userSpeaking = true;
        link.broadcast(makeFrame("UserStartedSpeaking", {}));
        const mode = this.interruptions;
        if (mode === "always" || (mode === "bot-speaking" && this.#botSpeaking)) {
          this.#interrupts++;
          link.broadcast(makeFrame("Interruption", {}));
        }
        break;
      }
      case "VadUserStoppedSpeaking":
        if (!this.#userSpeaking) break;
        this.#userSpeaking = false;
        link.broadcast(makeFrame("UserStoppedSpeaking", {}));
        break;
    }
  }
}

/** Runs a {@link TurnStrategy} on the frames passing through; forwards every frame. */
export class TurnProcessor extends FrameProcessor {
  /** The strategy in use. */
  readonly strategy: TurnStrategy;

  /** Wrap `strategy` (default: a {@link DefaultTurnStrategy}). */
  constructor(strategy: TurnStrategy = new DefaultTurnStrategy(), name = "TurnProcessor") {
    super(name);
    this.strategy = strategy;
  }

  /** Forward, then let the strategy react. */
  override processFrame(frame: Frame, direction: Direction, link: Link): void {
    link.push(frame, direction);
    this.strategy.onFrame(frame, direction, link);
  }
}
