/**
 * Context aggregation for the cascaded pipeline: the caller's side and the bot's side of one
 * shared {@link LlmContext}.
 *
 * - {@link UserContextAggregator} (before the language model) collects the caller's final
 *   Transcriptions (and typed InputText); when the caller's turn is over it appends one user
 *   message and pushes LlmContext downstream, which makes the model answer.
 * - {@link AssistantContextAggregator} (after the language model) collects the reply's LlmText
 *   and tool calls, appends one assistant message at LlmResponseEnd (or what was generated so
 *   far on an interruption), and reports the reply as a bot Transcription. Tool results travel
 *   upstream through it: each becomes a tool message, always after its assistant message.
 *   When a barge-in cuts the reply's playout, the message keeps only what the caller heard
 *   (from the output transport's SpokenText and BotInterrupted, see core/heard_tracker.ts); a
 *   reply none of which was heard leaves the context, unless it made tool calls.
 *
 * @example
 * ```ts
 * const context = createLlmContext("You are helpful.", tools);
 * const user = new UserContextAggregator(context);
 * const assistant = new AssistantContextAggregator(context);
 * ```
 * @module
 */

import { HeardTracker } from "../heard_tracker.ts";
import { dtmfUserText } from "../keypad_text.ts";
import {
  type Direction,
  type Frame,
  type FrameOf,
  type FunctionCall,
  type LlmContext,
  type LlmMessage,
  makeFrame,
  type StartParams,
  type ToolDecl,
} from "../frames.ts";
import { FrameProcessor, type Link, type ProcessorSetup } from "../processor.ts";
import { replyUtteranceId } from "../utterance.ts";

/** An assistant message of a context. */
export type AssistantMessage = Extract<LlmMessage, { role: "assistant" }>;

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

/**
 * Make `message` of `context` say only `heard` (a barge-in cut it short); a message with nothing
 * heard and no tool calls is removed, since the caller never heard it.
 */
export function keepHeard(context: LlmContext, message: AssistantMessage, heard: string): void {
  if (heard !== "" || (message.toolCalls?.length ?? 0) > 0) {
    message.content = heard;
    return;
  }
  const i = context.messages.indexOf(message);
  if (i >= 0) context.messages.splice(i, 1);
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
  #utterance: string | undefined;
  #calls: FunctionCall[] = [];
  readonly #heard = new HeardTracker<AssistantMessage>();
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

  /**
   * Collects the reply downstream; turns tool results into tool messages upstream, and cuts
   * replies to what was heard.
   */
  override processFrame(frame: Frame, dir: Direction, link: Link): void {
    if (dir === "upstream") {
      if (frame.kind === "SpokenText") this.#heard.spoken(frame.utteranceId, frame.text);
      else if (frame.kind === "BotInterrupted") {
        for (const c of this.#heard.interrupted(frame.cut)) {
          keepHeard(this.context, c.target, c.heard);
        }
      } else if (frame.kind === "FunctionCallResult") {
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
        this.#utterance = replyUtteranceId(frame);
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
    const utteranceId = this.#utterance;
    if (text || this.#calls.length > 0) {
      const message: AssistantMessage = this.#calls.length > 0
        ? { role: "assistant", content: text, toolCalls: this.#calls }
        : { role: "assistant", content: text };
      this.context.messages.push(message);
      const heard = utteranceId === undefined
        ? undefined
        : this.#heard.expect(utteranceId, text, message);
      if (heard !== undefined) keepHeard(this.context, message, heard);
    }
    if (text && link) {
      link.pushDown(
        makeFrame(
          "Transcription",
          utteranceId === undefined
            ? { text, userId: "bot", final: true }
            : { text, userId: "bot", final: true, utteranceId },
        ),
      );
    }
    this.#open = false;
    this.#text = "";
    this.#utterance = undefined;
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
