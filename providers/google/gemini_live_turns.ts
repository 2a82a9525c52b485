/**
 * Turn bookkeeping of a Gemini Live session: parsed server messages become
 * {@link RealtimeEvent}s, transcript fragments are joined into the final texts emitted at the
 * turn end, and tool-call ids are remembered (name, cancellation) for `toolResponse`.
 * @module
 */

import type { RealtimeEvent } from "../../core/seams.ts";
import type { GeminiServerMessage } from "./gemini_live_parse.ts";

/** What a tool result may do with a call id. */
export type ToolCallLookup =
  | { kind: "answer"; name: string }
  | { kind: "cancelled" }
  | { kind: "unknown" };

/** Per-session turn state; one per client, kept across resumed connections. */
export class GeminiTurnTracker {
  #userText = "";
  #botText = "";
  #modelTurnOpen = false;
  /** The open turn carried speech (audio or its transcript) for the caller. */
  #spoke = false;
  readonly #toolNames = new Map<string, string>();
  readonly #cancelled = new Set<string>();

  /** True while the model is answering (content seen, no `turnComplete` yet). */
  get modelTurnOpen(): boolean {
    return this.#modelTurnOpen;
  }

  /**
   * The open turn's transcript so far when it carried speech (what the caller was given of an
   * answer); `undefined` when no spoken answer is running.
   */
  get spokenSoFar(): string | undefined {
    return this.#modelTurnOpen && this.#spoke ? this.#botText.trim() : undefined;
  }

  /**
   * Events for one message, content first and the turn end last (a message may bundle both):
   * interrupted, audio, transcripts, tool calls, usage, final texts, turn_complete.
   */
  apply(msg: GeminiServerMessage): RealtimeEvent[] {
    const out: RealtimeEvent[] = [];
    if (msg.interrupted) out.push({ type: "interrupted" });
    if (msg.modelTurn) this.#modelTurnOpen = true;
    for (const audio of msg.audio) out.push({ type: "audio_out", audio });
    if (msg.audio.length > 0 || msg.outputTranscript !== undefined) this.#spoke = true;
    if (msg.inputTranscript !== undefined) {
      this.#userText += msg.inputTranscript;
      out.push({ type: "user_text", text: msg.inputTranscript, final: false });
    }
    if (msg.outputTranscript !== undefined) {
      this.#modelTurnOpen = true;
      this.#botText += msg.outputTranscript;
      out.push({ type: "bot_text", text: msg.outputTranscript, final: false });
    }
    for (const call of msg.toolCalls) {
      this.#modelTurnOpen = true;
      this.#toolNames.set(call.id, call.name);
      out.push({ type: "tool_call", id: call.id, name: call.name, args: call.args });
    }
    for (const id of msg.cancelledToolCallIds) {
      this.#toolNames.delete(id);
      this.#cancelled.add(id);
    }
    if (msg.usage) out.push({ type: "usage", usage: msg.usage });
    if (msg.turnComplete) {
      this.#finals(out);
      this.#modelTurnOpen = false;
      this.#spoke = false;
      out.push({ type: "turn_complete" });
    }
    return out;
  }

  /**
   * Close the turn locally when the connection it ran on is abandoned: final texts, and a
   * `turn_complete` when the model was answering (its `turnComplete` will never come).
   */
  cutTurn(): RealtimeEvent[] {
    const out: RealtimeEvent[] = [];
    this.#finals(out);
    if (this.#modelTurnOpen) out.push({ type: "turn_complete" });
    this.#modelTurnOpen = false;
    this.#spoke = false;
    return out;
  }

  /** What to do with a result for call `id`; the id is consumed either way. */
  takeToolCall(id: string): ToolCallLookup {
    if (this.#cancelled.delete(id)) return { kind: "cancelled" };
    const name = this.#toolNames.get(id);
    if (name === undefined) return { kind: "unknown" };
    this.#toolNames.delete(id);
    return { kind: "answer", name };
  }

  /** Forget pending calls: a new (not resumed) session never made them. */
  forgetCalls(): void {
    this.#toolNames.clear();
    this.#cancelled.clear();
  }

  #finals(out: RealtimeEvent[]): void {
    const user = this.#userText.trim();
    const bot = this.#botText.trim();
    if (user) out.push({ type: "user_text", text: user, final: true });
    if (bot) out.push({ type: "bot_text", text: bot, final: true });
    this.#userText = "";
    this.#botText = "";
  }
}
