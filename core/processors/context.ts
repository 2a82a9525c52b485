/**
 * Context aggregation for the cascaded pipeline: the caller's side and the bot's side of one
 * shared {@link LlmContext}.
 *
 * - {@link UserContextAggregator} (before the language model) collects the caller's final
 *   Transcriptions (and typed InputText); when the caller's turn is over (after the silence its
 *   words call for, core/turn_end.ts) it appends one user message and pushes LlmContext
 *   downstream, which makes the model answer. While it waits, a draft reply may be under way.
 * - `AssistantContextAggregator` (after the language model; ./assistant_context.ts) collects the reply's LlmText
 *   and tool calls, appends one assistant message at LlmResponseEnd (or what was generated so
 *   far on an interruption), and reports the reply as a bot Transcription. Tool results travel
 *   upstream through it: each becomes a tool message, always after its assistant message.
 *   Other lines the bot speaks are recorded too, in the order they are spoken: a TtsSpeak
 *   marked `appendToContext` passing down (the model's or the transcriber's fallback line), or
 *   coming up from the brain (a transition's `say`, spoken once the reply that made the move
 *   has gone by, and written after the move's tool results, which must follow their call).
 *   When a barge-in cuts the reply's playout, the message keeps only what the caller heard
 *   (from the output transport's SpokenText and BotInterrupted, see core/heard_tracker.ts); a
 *   reply none of which was heard leaves the context, unless it made tool calls.
 *
 * The caller's side never holds two user messages in a row: a turn that follows a turn the
 * bot did not answer (the model failed quietly, or its reply went unheard) joins it.
 *
 * @example
 * ```ts
 * import { AssistantContextAggregator, createLlmContext, type ToolDecl, UserContextAggregator } from "@flowcat/flowcat";
 * declare const tools: ToolDecl[];
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
  type LlmContext,
  type LlmMessage,
  makeFrame,
  type StartParams,
  type ToolDecl,
} from "../frames.ts";
import { FrameProcessor, type Link, type ProcessorSetup } from "../processor.ts";
import {
  IMMEDIATE_TURN_WINDOWS,
  silenceNeededMs,
  transcriptCompleteness,
  type TurnWindows,
  validateTurnWindows,
} from "../turn_end.ts";
import type { InterruptionMode } from "./turn.ts";

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
 * Append the caller's `text` as a user message, joined to the last message when that is the
 * caller's too (a turn the bot did not answer), so a request never has two user messages in a
 * row.
 */
export function appendUserText(context: LlmContext, text: string): void {
  const last = context.messages.at(-1);
  if (last?.role === "user") last.content = last.content ? `${last.content} ${text}` : text;
  else context.messages.push({ role: "user", content: text });
}

/**
 * Make `message` of `context` say only `heard` (a barge-in cut it short); a message with nothing
 * heard and no tool calls is removed, since the caller never heard it (and the caller's turns
 * on either side of it become one).
 */
export function keepHeard(context: LlmContext, message: AssistantMessage, heard: string): void {
  // Set even on a message about to go: one not written yet is then left out when it would be.
  message.content = heard;
  if (heard !== "" || (message.toolCalls?.length ?? 0) > 0) return;
  const i = context.messages.indexOf(message);
  if (i < 0) return;
  context.messages.splice(i, 1);
  const before = context.messages[i - 1];
  const after = context.messages[i];
  if (before?.role === "user" && after?.role === "user") {
    before.content = `${before.content} ${after.content}`;
    context.messages.splice(i, 1);
  }
}

/** Options of a {@link UserContextAggregator}. */
export interface UserContextAggregatorOptions {
  /** Processor name (default `UserContextAggregator`). */
  name?: string;
  /**
   * When the caller's turn is over (core/turn_end.ts). Default {@link IMMEDIATE_TURN_WINDOWS}:
   * at the end of their speech, whatever they said. `pauseMs` must be the VAD's stop window
   * (the silence already behind an end of speech).
   */
  turns?: TurnWindows;
  /**
   * How the pipeline's turn strategy interrupts (default `bot-speaking`). Unless `never`, a
   * caller who speaks again within `turns.incompleteMs` of their turn being answered, before any
   * of the reply is heard, was not done: the reply is interrupted (`bot-speaking` broadcasts the
   * Interruption; `always` already did) and their next words join the turn.
   */
  interruptions?: InterruptionMode;
}

/**
 * Builds user messages from the caller's transcriptions and keypad presses, and decides when a
 * spoken turn is over: after the silence its transcript calls for (see core/turn_end.ts). While
 * it waits, a draft reply can be started on the words so far (`LlmContext` with `draft`); the
 * turn then ends with `LlmDraftSettled`, confirming the draft when the words did not change, or
 * dropping it when the caller went on.
 */
export class UserContextAggregator extends FrameProcessor {
  /** The shared context. */
  readonly context: LlmContext;
  readonly #windows: TurnWindows;
  readonly #interruptions: InterruptionMode;
  #link: Link | undefined;
  #speaking = false;
  #pending: string[] = [];
  #endOfUtterance = false;
  /** When the caller's current silence began (their last word), or undefined while they talk. */
  #silenceSince: number | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #draft: { id: number; text: string } | undefined;
  #drafts = 0;
  /** A turn was answered and no bot speech has started since. */
  #awaitingBot = false;
  /** When the last turn was answered (performance.now). */
  #answeredAt = 0;
  #botSpeaking = false;
  /** The caller went on after their turn was answered: the turn is open again. */
  #reopened = false;
  /** The text of the turn answered last (what a reopened turn continues). */
  #lastTurn = "";

  /** Append to `context` (`options` may be just the name). */
  constructor(context: LlmContext, options: string | UserContextAggregatorOptions = {}) {
    const o = typeof options === "string" ? { name: options } : options;
    super(o.name ?? "UserContextAggregator");
    this.context = context;
    this.#windows = validateTurnWindows({ ...(o.turns ?? IMMEDIATE_TURN_WINDOWS) });
    this.#interruptions = o.interruptions ?? "bot-speaking";
  }

  /** Keeps the link for turns that end on a timer. */
  override start(_s: ProcessorSetup, _p: StartParams, link: Link): void {
    this.#link = link;
  }

  /** Collects transcriptions; commits a user turn when the caller is done. */
  override processFrame(frame: Frame, dir: Direction, link: Link): void {
    link.push(frame, dir);
    if (dir === "upstream") {
      if (frame.kind === "BotStartedSpeaking") {
        this.#botSpeaking = true;
        this.#awaitingBot = false;
      } else if (frame.kind === "BotStoppedSpeaking") this.#botSpeaking = false;
      return;
    }
    switch (frame.kind) {
      case "UserStartedSpeaking":
        return this.#resumed(link);
      case "UserStoppedSpeaking":
        this.#speaking = false;
        this.#silenceSince = performance.now() - this.#windows.pauseMs;
        return this.#judge(link);
      case "Transcription":
        if (frame.userId === "bot" || !frame.final || !frame.text.trim()) return;
        this.#pending.push(frame.text.trim());
        this.#endOfUtterance = frame.endOfUtterance === true;
        // Streaming STT finalises while the caller still talks: wait for the end of the turn.
        if (this.#speaking) return;
        // Without speech edges (no VAD in front) the transcript itself marks the pause.
        this.#silenceSince ??= performance.now() - this.#windows.pauseMs;
        return this.#judge(link);
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

  /** No timer outlives the call. */
  override stop(): void {
    this.#clearTimer();
  }

  /** The caller speaks (again): whatever was about to end their turn waits. */
  #resumed(link: Link): void {
    this.#speaking = true;
    this.#silenceSince = undefined;
    this.#clearTimer();
    this.#dropDraft(link);
    if (!this.#awaitingBot || this.#botSpeaking || this.#interruptions === "never") return;
    // Only as soon after the answer as the judge could have waited: later it is a new turn.
    if (performance.now() - this.#answeredAt > this.#windows.incompleteMs) return;
    // Answered too soon: nothing of the reply has played, so stop it and hear them out.
    this.#awaitingBot = false;
    this.#reopened = true;
    if (this.#interruptions === "bot-speaking") link.broadcast(makeFrame("Interruption", {}));
  }

  /** Commit now, or wait for the silence the words call for (drafting a reply meanwhile). */
  #judge(link: Link): void {
    if (this.#speaking || this.#silenceSince === undefined) return;
    const text = this.#pending.join(" ");
    if (text === "" && !this.#reopened) return;
    const turn = this.#reopened && this.#lastTurn ? `${this.#lastTurn} ${text}`.trim() : text;
    // Words that reopened a turn may still be on their way from the transcriber: wait as long as
    // for an unclear turn before answering the turn as it was.
    const reading = text === "" ? "unsure" : transcriptCompleteness(turn, this.#endOfUtterance);
    const wait = silenceNeededMs(this.#windows, reading) -
      (performance.now() - this.#silenceSince);
    this.#clearTimer();
    if (wait <= 0) return this.#commit(link);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (this.#link !== undefined) this.#commit(this.#link);
    }, wait);
    if (this.#windows.speculate && reading !== "incomplete" && text !== "") {
      this.#startDraft(text, link);
    }
  }

  #startDraft(text: string, link: Link): void {
    if (this.#draft?.text === text) return;
    this.#dropDraft(link);
    const id = ++this.#drafts;
    this.#draft = { id, text };
    const copy: LlmContext = { messages: [...this.context.messages], tools: this.context.tools };
    // The last message may be the caller's and be joined: copy it rather than touch it.
    const last = copy.messages.at(-1);
    if (last?.role === "user") copy.messages[copy.messages.length - 1] = { ...last };
    appendUserText(copy, text);
    link.pushDown(makeFrame("LlmContext", { context: copy, draft: id }));
  }

  #dropDraft(link: Link): void {
    const draft = this.#draft;
    if (draft === undefined) return;
    this.#draft = undefined;
    link.pushDown(
      makeFrame("LlmDraftSettled", { draftId: draft.id, confirmed: false, context: this.context }),
    );
  }

  #commit(link: Link): void {
    this.#clearTimer();
    const text = this.#pending.join(" ");
    if (text === "" && !this.#reopened) return;
    this.#lastTurn = this.#reopened && this.#lastTurn ? `${this.#lastTurn} ${text}`.trim() : text;
    this.#pending = [];
    this.#endOfUtterance = false;
    this.#reopened = false;
    this.#silenceSince = undefined;
    this.#awaitingBot = true;
    this.#answeredAt = performance.now();
    if (text !== "") appendUserText(this.context, text);
    const draft = this.#draft;
    if (draft !== undefined && draft.text === text) {
      this.#draft = undefined;
      link.pushDown(
        makeFrame("LlmDraftSettled", { draftId: draft.id, confirmed: true, context: this.context }),
      );
      return;
    }
    this.#dropDraft(link);
    link.pushDown(makeFrame("LlmContext", { context: this.context }));
  }

  #clearTimer(): void {
    if (this.#timer === undefined) return;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
