/**
 * GreetingProcessor: the bot speaks a fixed line as soon as the caller is connected, and the
 * line goes into the conversation context, so the model knows it was said.
 *
 * @example
 * ```ts
 * const greet = new GreetingProcessor("Hello! How can I help?", context);
 * ```
 * @module
 */

import { type Direction, type Frame, type LlmContext, makeFrame } from "../frames.ts";
import { FrameProcessor, type Link } from "../processor.ts";

/** Speaks `text` once, on the first ClientConnected. */
export class GreetingProcessor extends FrameProcessor {
  readonly #text: string;
  readonly #context: LlmContext | undefined;
  #done = false;

  /** Greet with `text`; record it in `context` when given. */
  constructor(text: string, context?: LlmContext, name = "GreetingProcessor") {
    super(name);
    this.#text = text;
    this.#context = context;
  }

  /** Forwards everything; on the first ClientConnected pushes TtsSpeak and a bot line. */
  override processFrame(frame: Frame, dir: Direction, link: Link): void {
    link.push(frame, dir);
    if (this.#done || dir !== "downstream" || frame.kind !== "ClientConnected") return;
    this.#done = true;
    this.#context?.messages.push({ role: "assistant", content: this.#text });
    link.pushDown(makeFrame("TtsSpeak", { text: this.#text }));
    link.pushDown(makeFrame("Transcription", { text: this.#text, userId: "bot", final: true }));
  }
}
