/**
 * The bot's side of a cascaded call's {@link LlmContext}: {@link AssistantContextAggregator},
 * after the language model. The caller's side and the context helpers are in ./context.ts,
 * whose module doc describes how the two sides share one context.
 * @module
 */

import { HeardTracker } from "../heard_tracker.ts";
import {
  type Direction,
  type Frame,
  type FrameOf,
  type FunctionCall,
  type LlmContext,
  makeFrame,
  type StartParams,
} from "../frames.ts";
import { FrameProcessor, type Link, type ProcessorSetup } from "../processor.ts";
import { replyUtteranceId, speakUtteranceId } from "../utterance.ts";
import { type AssistantMessage, keepHeard } from "./context.ts";

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
