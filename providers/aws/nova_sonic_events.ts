/**
 * What Nova Sonic's output events mean to a call: each content block is announced by
 * `contentStart` (type, role and, in `additionalModelFields`, the generation stage), carries
 * `textOutput`, `audioOutput` or `toolUse`, and is closed by `contentEnd` with a stop reason.
 * USER text is the caller's transcript; ASSISTANT text is SPECULATIVE (what the model is about
 * to say, sent before its audio) or FINAL (what was actually said, after it); `INTERRUPTED`
 * ends a block the caller talked over (barge-in) and `END_TURN` the model's turn. `usageEvent`
 * carries running token totals, reported once per turn.
 * @module
 */

import type { RealtimeEvent } from "../../core/seams.ts";
import { pcm16FromBase64 } from "../realtime/_shared.ts";

/** Sample rate of the audio Nova Sonic is asked for and sends back. */
export const NOVA_OUTPUT_RATE = 24_000;

interface Block {
  type: string;
  role: string;
  stage?: string;
}

/** A line of the conversation, kept to seed a new session with. */
export interface NovaHistoryLine {
  /** Who said it. */
  role: "USER" | "ASSISTANT";
  /** What was said. */
  text: string;
}

/** Turns output events into {@link RealtimeEvent}s; one per session. */
export class NovaOutput {
  #block: Block | undefined;
  #turnOpen = false;
  #reported = { input: 0, output: 0 };
  #totals = { input: 0, output: 0 };

  /** @param history Where final transcripts of both sides are appended, oldest first. */
  constructor(readonly history: NovaHistoryLine[] = []) {}

  /** The events `ev` (one output event's body, by name) stands for. */
  handle(name: string, body: Record<string, unknown>): RealtimeEvent[] {
    switch (name) {
      case "contentStart": {
        const block: Block = { type: String(body.type), role: String(body.role) };
        const stage = generationStage(body.additionalModelFields);
        if (stage !== undefined) block.stage = stage;
        this.#block = block;
        // FINAL text tells what was said; only voice or its preview opens the model's turn.
        if (block.role === "ASSISTANT" && (block.type === "AUDIO" || stage === "SPECULATIVE")) {
          this.#turnOpen = true;
        }
        return [];
      }
      case "textOutput":
        return this.#text(String(body.content ?? ""));
      case "audioOutput": {
        const pcm = typeof body.content === "string" ? pcm16FromBase64(body.content) : undefined;
        if (pcm === undefined || pcm.length === 0) return [];
        this.#turnOpen = true;
        return [{
          type: "audio_out",
          audio: { pcm, sampleRate: NOVA_OUTPUT_RATE, numChannels: 1 },
        }];
      }
      case "toolUse":
        return [{
          type: "tool_call",
          id: String(body.toolUseId ?? ""),
          name: String(body.toolName ?? ""),
          args: parseArgs(body.content),
        }];
      case "contentEnd": {
        const block = this.#block;
        this.#block = undefined;
        if (block?.role !== "ASSISTANT") return [];
        if (body.stopReason === "INTERRUPTED") {
          if (!this.#turnOpen) return [];
          this.#turnOpen = false;
          return [{ type: "interrupted" }, ...this.#usage()];
        }
        if (body.stopReason === "END_TURN") return this.#endTurn();
        return [];
      }
      case "completionEnd":
        return this.#endTurn();
      case "usageEvent": {
        const input = Number(body.totalInputTokens);
        const output = Number(body.totalOutputTokens);
        if (Number.isFinite(input) && Number.isFinite(output)) this.#totals = { input, output };
        return [];
      }
      default:
        return [];
    }
  }

  /** Tokens counted since the last report, as a `usage` event (none when nothing is new). */
  pendingUsage(): RealtimeEvent[] {
    return this.#usage();
  }

  /** The session ended: close a turn still open (its usage, then `turn_complete`). */
  flush(): RealtimeEvent[] {
    return this.#endTurn();
  }

  #text(text: string): RealtimeEvent[] {
    const block = this.#block;
    if (block === undefined || text === "") return [];
    if (block.role === "USER") {
      const final = block.stage !== "SPECULATIVE";
      if (final) this.history.push({ role: "USER", text });
      return [{ type: "user_text", text, final }];
    }
    if (block.role !== "ASSISTANT" || isInterruptionNote(text)) return [];
    if (block.stage === "SPECULATIVE") return [{ type: "bot_text", text, final: false }];
    this.history.push({ role: "ASSISTANT", text });
    return [{ type: "bot_text", text, final: true }];
  }

  #endTurn(): RealtimeEvent[] {
    if (!this.#turnOpen) return [];
    this.#turnOpen = false;
    return [...this.#usage(), { type: "turn_complete" }];
  }

  #usage(): RealtimeEvent[] {
    const prompt = this.#totals.input - this.#reported.input;
    const completion = this.#totals.output - this.#reported.output;
    if (prompt <= 0 && completion <= 0) return [];
    this.#reported = { ...this.#totals };
    return [{
      type: "usage",
      usage: {
        promptTokens: Math.max(0, prompt),
        completionTokens: Math.max(0, completion),
        totalTokens: Math.max(0, prompt) + Math.max(0, completion),
      },
    }];
  }
}

/** `generationStage` from the JSON string in `additionalModelFields`. */
function generationStage(fields: unknown): string | undefined {
  if (typeof fields !== "string") return undefined;
  try {
    const v = JSON.parse(fields) as { generationStage?: unknown };
    return typeof v.generationStage === "string" ? v.generationStage : undefined;
  } catch {
    return undefined;
  }
}

/** Nova Sonic writes `{ "interrupted" : true }` as the text of a block it stopped. */
function isInterruptionNote(text: string): boolean {
  if (!text.trimStart().startsWith("{")) return false;
  try {
    return (JSON.parse(text) as { interrupted?: unknown }).interrupted === true;
  } catch {
    return false;
  }
}

/** Tool arguments: `content` is a JSON string of an object (anything else gives `{}`). */
function parseArgs(content: unknown): Record<string, unknown> {
  if (typeof content !== "string") return {};
  try {
    const v = JSON.parse(content);
    return typeof v === "object" && v !== null && !Array.isArray(v) ? v : {};
  } catch {
    return {};
  }
}
