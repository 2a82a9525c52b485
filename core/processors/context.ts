/**
 * Context aggregation for the cascaded pipeline: the caller's side and the bot's side of one
 * shared {@link LlmContext}.
 *
 * - {@link UserContextAggregator} (before the language model) collects the caller's final
 *   Transcriptions (and typed InputText); when the caller's turn is over (after the silence its
 *   words call for, core/turn_end.ts) it appends one user message and pushes LlmContext
 *   downstream, which makes the model answer. While it waits, a draft reply may be under way.
 * - {@link AssistantContextAggregator} (after the language model) collects the reply's LlmText
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
import { replyUtteranceId, speakUtteranceId } from "../utterance.ts";
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

/** Builds assistant (and tool) messages from the model's reply and the bot's other lines. */
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
  /** Tool calls of the committed reply still without their result. */
  #unanswered = new Set<string>();
  /** The brain's lines that came while a reply was still passing: spoken once it has. */
  #unspoken: FrameOf<"TtsSpeak">[] = [];
  /** Lines spoken while tool results were outstanding: written after those results. */
  #unwritten: AssistantMessage[] = [];

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
   * Collects the reply downstream; turns tool results into tool messages upstream, records the
   * bot's other lines, and cuts lines to what was heard.
   */
  override processFrame(frame: Frame, dir: Direction, link: Link): void {
    if (dir === "upstream") return this.#upstream(frame, link);
    switch (frame.kind) {
      case "LlmResponseStart":
        if (this.#open) {
          // A new reply replaced an unfinished one.
          this.#commit(link);
          this.#forwardEarly(link);
        }
        // Results that never came (the model moved on) must not hold lines back any longer.
        this.#unanswered.clear();
        this.#write();
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
        // The reply's line goes down before its end, so whatever waits for the end (the
        // transcript's node moves, the brain's lines) comes after it; the results go on to the
        // model last, once the lines it must know of are written.
        this.#commit(link);
        link.push(frame, dir);
        this.#speakHeld(link);
        return this.#forwardEarly(link);
      case "TtsSpeak":
        if (frame.appendToContext && frame.text.trim()) {
          link.push(frame, dir);
          return this.#spoken(frame, link);
        }
        break;
    }
    link.push(frame, dir);
  }

  /** Keeps what was said of an interrupted reply; the brain's unspoken lines are dropped. */
  override onInterruption(): void {
    if (this.#open || this.#calls.length > 0) {
      this.#commit(this.#link);
      this.#forwardEarly(this.#link);
    }
    this.#unspoken = [];
  }

  #upstream(frame: Frame, link: Link): void {
    switch (frame.kind) {
      case "SpokenText":
        this.#heard.spoken(frame.utteranceId, frame.text);
        break;
      case "BotInterrupted":
        for (const c of this.#heard.interrupted(frame.cut)) {
          keepHeard(this.context, c.target, c.heard);
        }
        break;
      case "FunctionCallResult":
        // FunctionCallsStarted is a system frame and may overtake its reply's text: hold the
        // result until the assistant message it answers is in the context.
        if (this.#open || this.#calls.length > 0) {
          this.#early.push(frame);
          return;
        }
        this.#addToolResult(frame);
        break;
      case "TtsSpeak":
        // A line of the brain's (a transition's `say`): spoken after the reply that made the
        // move, recorded here, not passed on (the model has nothing to do with it).
        if (!frame.appendToContext) break;
        if (!frame.text.trim()) return;
        if (this.#open || this.#calls.length > 0) this.#unspoken.push(frame);
        else this.#speak(frame, link);
        return;
      case "End":
        // The call is ending: results that will never come hold nothing back.
        this.#unanswered.clear();
        this.#write();
        break;
    }
    link.push(frame, "upstream");
  }

  #commit(link: Link | undefined): void {
    const text = this.#text.trim();
    const utteranceId = this.#utterance;
    if (text || this.#calls.length > 0) {
      const message: AssistantMessage = this.#calls.length > 0
        ? { role: "assistant", content: text, toolCalls: this.#calls }
        : { role: "assistant", content: text };
      this.context.messages.push(message);
      for (const c of this.#calls) this.#unanswered.add(c.toolCallId);
      const heard = utteranceId === undefined
        ? undefined
        : this.#heard.expect(utteranceId, text, message);
      if (heard !== undefined) keepHeard(this.context, message, heard);
    }
    if (text && link) link.pushDown(botLine(text, utteranceId));
    this.#open = false;
    this.#text = "";
    this.#utterance = undefined;
    this.#calls = [];
    for (const r of this.#early) this.#addToolResult(r);
  }

  /** Pass on the results that waited for their reply (already in the context). */
  #forwardEarly(link: Link | undefined): void {
    const early = this.#early;
    this.#early = [];
    for (const r of early) link?.push(r, "upstream");
  }

  /** Speak the brain's lines that waited for the reply to go by. */
  #speakHeld(link: Link): void {
    const held = this.#unspoken;
    this.#unspoken = [];
    for (const f of held) this.#speak(f, link);
  }

  /** Send a line of the brain's down to be spoken, and record it. */
  #speak(frame: FrameOf<"TtsSpeak">, link: Link): void {
    link.pushDown(frame);
    this.#spoken(frame, link);
  }

  /** Record `frame`, now on its way to be spoken: its message, and the bot's line. */
  #spoken(frame: FrameOf<"TtsSpeak">, link: Link): void {
    const text = frame.text.trim();
    const utteranceId = speakUtteranceId(frame);
    const message: AssistantMessage = { role: "assistant", content: text };
    const heard = this.#heard.expect(utteranceId, text, message);
    if (heard !== undefined) message.content = heard;
    this.#unwritten.push(message);
    this.#write();
    link.pushDown(botLine(text, utteranceId));
  }

  /** Write the spoken lines into the context, once no tool result must come before them. */
  #write(): void {
    if (this.#unanswered.size > 0 || this.#unwritten.length === 0) return;
    const lines = this.#unwritten;
    this.#unwritten = [];
    for (const m of lines) {
      // A line cut to nothing before it was written was never heard.
      if (m.content !== "") this.context.messages.push(m);
    }
  }

  #addToolResult(frame: FrameOf<"FunctionCallResult">): void {
    const r = frame.result;
    this.context.messages.push({
      role: "tool",
      toolCallId: r.toolCallId,
      content: typeof r.result === "string" ? r.result : JSON.stringify(r.result ?? null),
    });
    this.#unanswered.delete(r.toolCallId);
    this.#write();
  }
}

/** The bot's final Transcription of a line (for the transcript). */
function botLine(text: string, utteranceId: string | undefined): Frame {
  return makeFrame(
    "Transcription",
    utteranceId === undefined
      ? { text, userId: "bot", final: true }
      : { text, userId: "bot", final: true, utteranceId },
  );
}
