/**
 * Turn strategies: what the caller's voice-activity edges mean for the conversation.
 *
 * The default ({@link DefaultTurnStrategy}) turns VadUserStartedSpeaking into a broadcast
 * UserStartedSpeaking and, when the caller speaks over the bot (barge-in), a broadcast
 * Interruption; VadUserStoppedSpeaking becomes a broadcast UserStoppedSpeaking. Whether the
 * bot is speaking comes from the BotStartedSpeaking / BotStoppedSpeaking frames the output
 * transport broadcasts. With `holdMs`, the first sign of the caller's voice over the bot (before
 * the VAD's `startSecs` confirm it) already holds the bot's audio (BotAudioHold): a barge-in
 * silences the bot a start window sooner, and a noise that is never confirmed only pauses it.
 * {@link VadProcessor} runs a strategy on its own edges; {@link TurnProcessor} runs one on VAD
 * frames produced elsewhere (e.g. a realtime model's server-side VAD).
 *
 * @example
 * ```ts
 * import { DefaultTurnStrategy, TurnProcessor } from "@flowcat/flowcat";
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
  /**
   * The VAD hears what may be speech, not yet long enough to be a start (each such frame while
   * the caller is not speaking). Optional.
   */
  onSpeechOnset?(link: Link): void;
}

/** Options of a {@link DefaultTurnStrategy}. */
export interface DefaultTurnStrategyOptions {
  /** When a user start interrupts the bot (default `bot-speaking`). */
  interruptions?: InterruptionMode;
  /**
   * On the first sign of the caller's voice while the bot speaks, hold the bot's audio this long
   * (BotAudioHold), so it stops at once instead of when the start is confirmed; 0 for never
   * (default 0). Longer than the VAD's `startSecs`, or a real start finds the audio playing again.
   */
  holdMs?: number;
}

/** The default turn strategy: user edges follow VAD edges; barge-in interrupts. */
export class DefaultTurnStrategy implements TurnStrategy {
  /** When a user start interrupts the bot. */
  readonly interruptions: InterruptionMode;
  /** How long a sign of the caller's voice holds the bot's audio (0: never). */
  readonly holdMs: number;
  #botSpeaking = false;
  #userSpeaking = false;
  #interrupts = 0;
  #holds = 0;
  #heldUntil = 0;

  /** Make a strategy (see {@link DefaultTurnStrategyOptions}). */
  constructor(opts: DefaultTurnStrategyOptions = {}) {
    this.interruptions = opts.interruptions ?? "bot-speaking";
    this.holdMs = opts.holdMs ?? 0;
  }

  /** Number of BotAudioHold frames sent so far (each a first sign of voice over the bot). */
  get holdCount(): number {
    return this.#holds;
  }

  /** A sign of voice over the bot: hold its audio until the start is confirmed or dismissed. */
  onSpeechOnset(link: Link): void {
    if (this.holdMs <= 0 || !this.#botSpeaking || this.interruptions === "never") return;
    const now = performance.now();
    // One frame per hold; renewed only once most of it is spent (the caller is still at it).
    if (now < this.#heldUntil - this.holdMs / 2) return;
    if (now >= this.#heldUntil) this.#holds++;
    this.#heldUntil = now + this.holdMs;
    link.pushDown(makeFrame("BotAudioHold", { ms: this.holdMs }));
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
        this.#heldUntil = 0;
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
