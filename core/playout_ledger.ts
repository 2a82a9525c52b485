/**
 * PlayoutLedger: which bot words the far end has played, kept by the output transport.
 *
 * The output queues audio in order; the ledger lays the text that came with it on the same
 * timeline (milliseconds of audio queued). A TtsText opens a *segment* (a sentence of a cascaded
 * reply, or a realtime model's turn, whose transcript pieces add to it) and the audio after it
 * is that segment's; TtsStopped says the segment has all its audio. Given how far playout has
 * got, the ledger says which segments have played in full ({@link PlayoutLedger.played}) and,
 * on an interruption, where playout stopped ({@link PlayoutLedger.cut}).
 *
 * Where a segment is cut is an estimate: its characters are taken as spread evenly over its
 * audio, and the cut goes back to a word boundary (core/heard_text.ts). A segment whose audio is
 * still arriving is taken to last at least as long as its text at the call's speech rate (learned
 * from its finished segments; 65 ms a character until then), so a cut early in a sentence still
 * synthesizing is not mistaken for its end.
 *
 * @example
 * ```ts
 * const ledger = new PlayoutLedger();
 * ledger.text("reply-1", "Hello there.");
 * ledger.audio(800);
 * ledger.close();
 * ledger.cut(400).cut?.heard; // "Hello"
 * ```
 * @module
 */

import type { PlayoutCut } from "./frames.ts";
import { cutAtFraction } from "./heard_text.ts";

/** A piece of a bot utterance that has played in full. */
export interface SpokenPiece {
  /** The utterance it belongs to. */
  utteranceId: string;
  /** Its text. */
  text: string;
}

/** What an interruption leaves: the pieces that had played in full, then the cut. */
export interface LedgerCut {
  /** Pieces that had played in full and were not yet reported, in playout order. */
  spoken: SpokenPiece[];
  /** The segment that was playing; absent when playout was between or past segments. */
  cut?: PlayoutCut;
}

/** Speech rate assumed before the call has one of its own (about 15 characters a second). */
export const DEFAULT_MS_PER_CHAR = 65;
/** Characters of finished speech before the learned rate replaces the default. */
const RATE_MIN_CHARS = 40;
/** Cut utterances remembered, so their late words are not taken for new speech. */
const CUT_MEMORY = 8;
const NOTHING: readonly SpokenPiece[] = Object.freeze([]);

interface Segment {
  utteranceId: string;
  text: string;
  startMs: number;
  audioMs: number;
  closed: boolean;
}

/** The far end's playout, in words. One per output transport. */
export class PlayoutLedger {
  #segments: Segment[] = [];
  #open: Segment | undefined;
  #queuedMs = 0;
  #rateMs = 0;
  #rateChars = 0;
  readonly #cutIds: string[] = [];

  /** True while some segment is not yet reported played. */
  get active(): boolean {
    return this.#segments.length > 0;
  }

  /**
   * True when the oldest unreported segment has all its audio, so {@link PlayoutLedger.played}
   * may report something; while false it reports nothing, however far playout has got.
   */
  get headClosed(): boolean {
    return this.#segments.length > 0 && this.#segments[0].closed;
  }

  /** Milliseconds of audio queued since the timeline began (the last cut). */
  get queuedMs(): number {
    return this.#queuedMs;
  }

  /** A TtsText reached the output: add to the open segment of `utteranceId`, or open one. */
  text(utteranceId: string, text: string): void {
    if (this.#cutIds.includes(utteranceId)) return; // words of a line already cut: never played
    const open = this.#open;
    if (open !== undefined && open.utteranceId === utteranceId) {
      open.text += text;
      return;
    }
    this.close();
    const seg = { utteranceId, text, startMs: this.#queuedMs, audioMs: 0, closed: false };
    this.#segments.push(seg);
    this.#open = seg;
  }

  /** `ms` of audio queued after what came before. */
  audio(ms: number): void {
    this.#queuedMs += ms;
    if (this.#open !== undefined) this.#open.audioMs += ms;
  }

  /** The open segment has all its audio (TtsStopped, or the model's turn is over). */
  close(): void {
    const seg = this.#open;
    if (seg === undefined) return;
    seg.closed = true;
    this.#open = undefined;
    if (seg.audioMs > 0 && seg.text.length > 0) {
      this.#rateMs += seg.audioMs;
      this.#rateChars += seg.text.length;
    }
  }

  /** Segments whose audio has all played by `playedMs` (on the queued timeline); forgotten. */
  played(playedMs: number): readonly SpokenPiece[] {
    // Asked on every playout tick: nothing is allocated until a segment is done.
    let out: SpokenPiece[] | undefined;
    const segs = this.#segments;
    while (segs.length > 0) {
      const seg = segs[0];
      if (!seg.closed || playedMs < seg.startMs + seg.audioMs) break;
      segs.shift();
      if (seg.text !== "") (out ??= []).push({ utteranceId: seg.utteranceId, text: seg.text });
    }
    return out ?? NOTHING;
  }

  /** An interruption at `playedMs`: what had played, where it stopped; the timeline restarts. */
  cut(playedMs: number): LedgerCut {
    const result: LedgerCut = { spoken: [] };
    for (const seg of this.#segments) {
      const length = this.#expectedMs(seg);
      if (playedMs >= seg.startMs + length) {
        if (seg.text !== "") result.spoken.push({ utteranceId: seg.utteranceId, text: seg.text });
        continue;
      }
      this.#remember(seg.utteranceId);
      if (result.cut === undefined && playedMs >= seg.startMs) {
        const fraction = length > 0 ? (playedMs - seg.startMs) / length : 0;
        result.cut = {
          utteranceId: seg.utteranceId,
          text: seg.text,
          heard: cutAtFraction(seg.text, fraction),
          fraction,
        };
      }
    }
    this.#segments = [];
    this.#open = undefined;
    this.#queuedMs = 0;
    return result;
  }

  /** Milliseconds of speech a character, learned from this call's finished segments. */
  get msPerChar(): number {
    return this.#rateChars >= RATE_MIN_CHARS ? this.#rateMs / this.#rateChars : DEFAULT_MS_PER_CHAR;
  }

  #expectedMs(seg: Segment): number {
    if (seg.closed) return seg.audioMs;
    return Math.max(seg.audioMs, seg.text.length * this.msPerChar);
  }

  #remember(utteranceId: string): void {
    if (this.#cutIds.includes(utteranceId)) return;
    this.#cutIds.push(utteranceId);
    if (this.#cutIds.length > CUT_MEMORY) this.#cutIds.shift();
  }
}
