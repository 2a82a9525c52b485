/**
 * What an OpenAI Realtime session must be given again when its socket drops: OpenAI has no
 * session resumption, so a new session is seeded with the conversation so far (one
 * `conversation.item.create` per heard turn, tool call and result) and then the caller audio
 * the old session had not yet turned into a transcribed turn. Pure bookkeeping, no I/O.
 * @module
 */

import type { OpenAIRealtimeProtocol } from "./realtime_wire.ts";
import type { ClientEvent } from "./realtime_wire.ts";

type Item =
  | { kind: "user"; text: string }
  | { kind: "assistant"; text: string }
  | { kind: "call"; callId: string; name: string; args: string }
  | { kind: "output"; callId: string; output: string };

/** What the caller was given of the answer running when the socket dropped. */
export interface CutAnswer {
  /** Its transcript so far; "" when nothing was spoken yet. */
  heard: string;
}

/** The conversation of one call, as the caller heard it. */
export class OpenAIConversation {
  readonly #items: Item[] = [];
  #answer = "";
  #answerSpoke = false;
  /** The caller barged in on the running answer: its later transcript is not what was heard. */
  #barged = false;

  /** A caller turn's final transcript. */
  userSaid(text: string): void {
    if (text.trim() !== "") this.#items.push({ kind: "user", text: text.trim() });
  }

  /** A fragment of the running answer's transcript (or its audio, `text` ""). */
  answerPart(text: string): void {
    this.#answer += text;
    this.#answerSpoke = true;
  }

  /** The running answer's final transcript. */
  answerDone(text: string): void {
    if (!this.#barged) this.#close(text || this.#answer);
  }

  /** The response ended: an answer without a final transcript is kept as far as it went. */
  responseDone(): void {
    if (!this.#barged) this.#close(this.#answer);
    this.#barged = false;
  }

  /** The caller barged in: only what was said so far stays. */
  answerCut(): void {
    if (this.#barged || !this.#answerSpoke) return;
    this.#close(this.#answer);
    this.#barged = true;
  }

  /** A function call the model made. */
  toolCall(callId: string, name: string, args: Record<string, unknown>): void {
    this.#items.push({ kind: "call", callId, name, args: JSON.stringify(args) });
  }

  /** The result sent for a call. */
  toolResult(callId: string, output: string): void {
    this.#items.push({ kind: "output", callId, output });
  }

  /** The answer running now, if it had started to speak; it is then closed in the record. */
  takeCutAnswer(): CutAnswer | undefined {
    const spoke = this.#answerSpoke && !this.#barged;
    const heard = this.#answer.trim();
    this.#barged = false;
    if (!spoke) return undefined;
    this.#close(heard);
    return { heard };
  }

  #close(text: string): void {
    const t = text.trim();
    if (t !== "") this.#items.push({ kind: "assistant", text: t });
    this.#answer = "";
    this.#answerSpoke = false;
  }

  /** Items that rebuild the conversation in a new session, oldest first. */
  seedEvents(protocol: OpenAIRealtimeProtocol): ClientEvent[] {
    return this.#items.map((it) => ({
      type: "conversation.item.create",
      item: toWire(it, protocol),
    }));
  }
}

function toWire(it: Item, protocol: OpenAIRealtimeProtocol): Record<string, unknown> {
  switch (it.kind) {
    case "user":
      return { type: "message", role: "user", content: [{ type: "input_text", text: it.text }] };
    case "assistant":
      return {
        type: "message",
        role: "assistant",
        content: [{ type: protocol === "beta" ? "text" : "output_text", text: it.text }],
      };
    case "call":
      return { type: "function_call", call_id: it.callId, name: it.name, arguments: it.args };
    case "output":
      return { type: "function_call_output", call_id: it.callId, output: it.output };
  }
}

/** The user turn after a cut answer: go on from what was heard, or answer again. */
export function continueAnswerText(cut: CutAnswer): string {
  return cut.heard === ""
    ? "(The line dropped before your last answer reached me. Please give it again, in full.)"
    : "(The line dropped while you were answering; I heard you up to here. Please continue " +
      "from exactly where it stopped, without repeating what I heard.)";
}

/**
 * Caller audio (as sent, base64) that no transcribed caller turn covers yet: written again on a
 * new session. A turn is covered once its transcript completed; audio sent after the commit of
 * that turn stays. Bounded by duration, oldest dropped first: audio already sent only shortens
 * what a new session would get (counted, reported at replay); audio not sent yet (the socket is
 * down) is lost, and `onDrop` is told once per outage.
 */
export class AudioBacklog {
  #chunks: { b64: string; ms: number; sent: boolean }[] = [];
  #ms = 0;
  /** Chunks before this index were committed by the server (`input_audio_buffer.committed`). */
  #committed = 0;
  #missingMs = 0;
  #warned = false;

  /** @param maxMs audio kept at most */
  constructor(readonly maxMs: number, readonly onDrop: () => void) {}

  /** Milliseconds kept. */
  get ms(): number {
    return this.#ms;
  }

  /** A chunk, written to the live session (`sent`) or waiting for the next one. */
  push(b64: string, ms: number, sent: boolean): void {
    this.#chunks.push({ b64, ms, sent });
    this.#ms += ms;
    while (this.#ms > this.maxMs && this.#chunks.length > 1) {
      const old = this.#chunks.shift()!;
      this.#ms -= old.ms;
      this.#committed = Math.max(0, this.#committed - 1);
      if (old.sent) this.#missingMs += old.ms;
      else if (!this.#warned) {
        this.#warned = true;
        this.onDrop();
      }
    }
  }

  /** The server committed the audio buffer (a caller turn ended). */
  committed(): void {
    this.#committed = this.#chunks.length;
  }

  /**
   * A committed turn's transcript completed (its audio is in the record as text), or failed
   * (its audio is not kept either: holding it for the rest of the call would cost more than a
   * turn a new session would lack).
   */
  transcribed(): void {
    for (const c of this.#chunks.splice(0, this.#committed)) this.#ms -= c.ms;
    this.#committed = 0;
    this.#missingMs = 0;
  }

  /** Every chunk kept, oldest first, and the ms the bound dropped; all count as sent now. */
  replay(): { chunks: string[]; ms: number; missingMs: number } {
    this.#committed = 0;
    this.#warned = false;
    const missingMs = this.#missingMs;
    this.#missingMs = 0;
    for (const c of this.#chunks) c.sent = true;
    return { chunks: this.#chunks.map((c) => c.b64), ms: this.#ms, missingMs };
  }
}
