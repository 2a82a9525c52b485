/**
 * Context aggregation for the cascaded pipeline: the caller's side and the bot's side of one
 * shared {@link LlmContext}.
 *
 * - {@link UserContextAggregator} (before the language model) collects the caller's final
 *   Transcriptions (and typed InputText); when the caller's turn is over it appends one user
 *   message and pushes LlmContext downstream, which makes the model answer.
 * - {@link AssistantContextAggregator} (after the language model) collects the reply's LlmText
 *   and tool calls, appends one assistant message at LlmResponseEnd (or what was said so far on
 *   an interruption), and reports the reply as a bot Transcription. Tool results travel
 *   upstream through it: each becomes a tool message, always after its assistant message.
 *
 * @example
 * ```ts
 * const context = createLlmContext("You are helpful.", tools);
 * const user = new UserContextAggregator(context);
 * const assistant = new AssistantContextAggregator(context);
 * ```
 * @module
 */

import { dtmfUserText } from "../keypad_text.ts";
import {
  type Direction,
  type Frame,
  type FrameOf,
  type FunctionCall,
  type LlmContext,
  makeFrame,
  type StartParams,
  type ToolDecl,
} from "../frames.ts";
import { FrameProcessor, type Link, type ProcessorSetup } from "../processor.ts";

/** A fresh context holding the system prompt and tools. */
export function createLlmContext(systemPrompt: string, tools: readonly ToolDecl[]): LlmContext {
  return {
    messages: systemPrompt ? [{ role: "system", content: systemPrompt }] : [],
    tools: [...tools],
  };
}

/** Replace the system prompt and tools in place (a brain transition); history is kept. */
export function setContextSystem(
  context: LlmContext,
  systemPrompt: string,
  tools: readonly ToolDecl[],
): void {
  const i = context.messages.findIndex((m) => m.role === "system");
  if (i >= 0) context.messages[i] = { role: "system", content: systemPrompt };
  else context.messages.unshift({ role: "system", content: systemPrompt });
  context.tools = [...tools];
}

/** Builds user messages from the caller's transcriptions and keypad presses. */
export class UserContextAggregator extends FrameProcessor {
  /** The shared context. */
  readonly context: LlmContext;
  #speaking = false;
  #pending: string[] = [];

  /** Append to `context`. */
  constructor(context: LlmContext, name = "UserContextAggregator") {
    super(name);
    this.context = context;
  }

  /** Collects transcriptions; commits a user turn when the caller is done speaking. */
  override processFrame(frame: Frame, dir: Direction, link: Link): void {
    link.push(frame, dir);
    if (dir !== "downstream") return;
    switch (frame.kind) {
      case "UserStartedSpeaking":
        this.#speaking = true;
        return;
      case "UserStoppedSpeaking":
        this.#speaking = false;
        return this.#commit(link);
      case "Transcription":
        if (frame.userId === "bot" || !frame.final || !frame.text.trim()) return;
        this.#pending.push(frame.text.trim());
        // Streaming STT finalises while the caller still talks: wait for the end of the turn.
        if (!this.#speaking) this.#commit(link);
        return;
      case "InputText":
        if (!frame.text.trim()) return;
        this.#pending.push(frame.text.trim());
        return this.#commit(link);
      case "InputDtmf":
        // A key press is a whole turn: the model answers it at once.
        this.#pending.push(dtmfUserText(frame.key));
        return this.#commit(link);
    }
  }

  #commit(link: Link): void {
    if (this.#pending.length === 0) return;
    this.context.messages.push({ role: "user", content: this.#pending.join(" ") });
    this.#pending = [];
    link.pushDown(makeFrame("LlmContext", { context: this.context }));
  }
}

/** Builds assistant (and tool) messages from the model's reply. */
export class AssistantContextAggregator extends FrameProcessor {
  /** The shared context. */
  readonly context: LlmContext;
  #link: Link | undefined;
  #open = false;
  #text = "";
  #calls: FunctionCall[] = [];
  /** Tool results that overtook their reply's end, forwarded once it is committed. */
  #early: FrameOf<"FunctionCallResult">[] = [];

  /** Append to `context`. */
  constructor(context: LlmContext, name = "AssistantContextAggregator") {
    super(name);
    this.context = context;
  }

  /** Keeps the link for commits made on interruption. */
  override start(_s: ProcessorSetup, _p: StartParams, link: Link): void {
    this.#link = link;
  }

  /** Collects the reply downstream; turns tool results into tool messages upstream. */
  override processFrame(frame: Frame, dir: Direction, link: Link): void {
    if (dir === "upstream") {
      if (frame.kind === "FunctionCallResult") {
        // FunctionCallsStarted is a system frame and may overtake its reply's text: hold the
        // result until the assistant message it answers is in the context.
        if (this.#open || this.#calls.length > 0) {
          this.#early.push(frame);
          return;
        }
        this.#addToolResult(frame);
      }
      return link.push(frame, dir);
    }
    switch (frame.kind) {
      case "LlmResponseStart":
        if (this.#open) this.#commit(link); // a new reply replaced an unfinished one
        this.#open = true;
        break;
      case "LlmText":
        if (this.#open) this.#text += frame.text;
        break;
      case "FunctionCallsStarted":
        this.#calls.push(...frame.calls);
        break;
      case "LlmResponseEnd":
        link.push(frame, dir);
        return this.#commit(link);
    }
    link.push(frame, dir);
  }

  /** Keeps what was said of an interrupted reply. */
  override onInterruption(): void {
    if (this.#open || this.#calls.length > 0) this.#commit(this.#link);
  }

  #commit(link: Link | undefined): void {
    const text = this.#text.trim();
    if (text || this.#calls.length > 0) {
      this.context.messages.push(
        this.#calls.length > 0
          ? { role: "assistant", content: text, toolCalls: this.#calls }
          : { role: "assistant", content: text },
      );
    }
    if (text && link) {
      link.pushDown(makeFrame("Transcription", { text, userId: "bot", final: true }));
    }
    this.#open = false;
    this.#text = "";
    this.#calls = [];
    const early = this.#early;
    this.#early = [];
    for (const r of early) {
      this.#addToolResult(r);
      link?.push(r, "upstream");
    }
  }

  #addToolResult(frame: FrameOf<"FunctionCallResult">): void {
    const r = frame.result;
    this.context.messages.push({
      role: "tool",
      toolCallId: r.toolCallId,
      content: typeof r.result === "string" ? r.result : JSON.stringify(r.result ?? null),
    });
  }
}
