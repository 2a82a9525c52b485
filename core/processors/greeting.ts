/**
 * GreetingProcessor: the bot speaks a fixed line as soon as the caller is connected, and the
 * line goes into the conversation context, so the model knows it was said. When the caller
 * talks over it, the context keeps only what was heard of it (see core/heard_tracker.ts).
 *
 * @example
 * ```ts
 * declare const context: ConstructorParameters<typeof GreetingProcessor>[1];
 * const greet = new GreetingProcessor("Hello! How can I help?", context);
 * ```
 * @module
 */

import { type Direction, type Frame, type LlmContext, makeFrame } from "../frames.ts";
import { HeardTracker } from "../heard_tracker.ts";
import { FrameProcessor, type Link } from "../processor.ts";
import { newUtteranceId } from "../utterance.ts";
import { type AssistantMessage, keepHeard } from "./context.ts";

/** Speaks `text` once, on the first ClientConnected. */
export class GreetingProcessor extends FrameProcessor {
  readonly #text: string;
  readonly #context: LlmContext | undefined;
  readonly #heard = new HeardTracker<AssistantMessage>();
  #done = false;

  /** Greet with `text`; record it in `context` when given. */
  constructor(text: string, context?: LlmContext, name = "GreetingProcessor") {
    super(name);
    this.#text = text;
    this.#context = context;
  }

  /**
   * Forwards everything; on the first ClientConnected pushes TtsSpeak and a bot line; cuts the
   * line in the context to what was heard.
   */
  override processFrame(frame: Frame, dir: Direction, link: Link): void {
    link.push(frame, dir);
    if (dir === "upstream") return this.#onPlayout(frame);
    if (this.#done || frame.kind !== "ClientConnected") return;
    this.#done = true;
    const utteranceId = newUtteranceId("greeting");
    const text = this.#text;
    if (this.#context !== undefined) {
      const message: AssistantMessage = { role: "assistant", content: text };
      this.#context.messages.push(message);
      this.#heard.expect(utteranceId, text, message);
    }
    link.pushDown(makeFrame("TtsSpeak", { text, utteranceId }));
    link.pushDown(makeFrame("Transcription", { text, userId: "bot", final: true, utteranceId }));
  }

  #onPlayout(frame: Frame): void {
    if (this.#heard.pending === 0) return;
    if (frame.kind === "SpokenText") this.#heard.spoken(frame.utteranceId, frame.text);
    else if (frame.kind === "BotInterrupted") {
      for (const c of this.#heard.interrupted(frame.cut)) {
        keepHeard(this.#context!, c.target, c.heard);
      }
    }
  }
}
