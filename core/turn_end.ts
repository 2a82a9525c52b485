/**
 * When is the caller's turn over? Not after one fixed silence: how long to wait depends on what
 * they said. A transcript that reads finished (a question, final punctuation, or the
 * transcriber's own end-of-utterance event) is answered after a short pause; one that trails off
 * on a word that needs more ("to book a", "and", "um") waits long; anything else waits as long
 * as a fixed window would have. {@link transcriptCompleteness} reads the transcript and
 * {@link TurnWindows} says how much silence each reading needs (the user context aggregator
 * applies them, core/processors/context.ts).
 *
 * The words are English; other languages get `unsure` unless they end with a question mark or
 * final punctuation, so they never wait longer than the `unsure` window.
 *
 * @example
 * ```ts
 * import { DEFAULT_TURN_WINDOWS, silenceNeededMs, transcriptCompleteness } from "./turn_end.ts";
 * transcriptCompleteness("What time is it?"); // "complete"
 * transcriptCompleteness("I would like to book a"); // "incomplete"
 * silenceNeededMs(DEFAULT_TURN_WINDOWS, "incomplete"); // 1500
 * ```
 * @module
 */

import { FlowcatError } from "./errors.ts";

/** How finished a transcript reads. */
export type TurnCompleteness = "complete" | "unsure" | "incomplete";

/** Silence windows of adaptive turn-taking, in milliseconds (see docs/config.md `turns`). */
export interface TurnWindows {
  /**
   * Silence that ends a stretch of speech (the VAD's stop): the caller's words so far are
   * transcribed there and, with `speculate`, a reply is drafted.
   */
  pauseMs: number;
  /** Silence after which a turn that reads finished is answered. */
  completeMs: number;
  /** Silence after which a turn without a clear sign either way is answered. */
  unsureMs: number;
  /** Silence after which a turn that reads unfinished is answered anyway. */
  incompleteMs: number;
  /**
   * Start the model on the words so far while waiting (its reply is held, and dropped if the
   * caller goes on), so a turn answered after a longer window does not also wait for the model.
   */
  speculate: boolean;
}

/** The defaults: answer a finished sentence after 200 ms, an unclear one after 800 ms. */
export const DEFAULT_TURN_WINDOWS: Readonly<TurnWindows> = Object.freeze({
  pauseMs: 200,
  completeMs: 200,
  unsureMs: 800,
  incompleteMs: 1500,
  speculate: true,
});

/** When the caller's voice over the bot interrupts it (see `buildCascadedTask`'s `bargeIn`). */
export interface BargeInWindows {
  /** Speech that confirms a barge-in (the VAD's start window), ms. */
  startMs: number;
  /** How long the first sign of voice over the bot holds its audio, ms (0: never). */
  holdMs: number;
}

/** The defaults: 200 ms of speech interrupt; the bot's audio is held 300 ms at the first sign. */
export const DEFAULT_BARGE_IN: Readonly<BargeInWindows> = Object.freeze({
  startMs: 200,
  holdMs: 300,
});

/**
 * No wait beyond the pause, whatever the words: the turn ends where the speech does (what a
 * pipeline without a judge did; a fixed window is this with `pauseMs` set to it).
 */
export const IMMEDIATE_TURN_WINDOWS: Readonly<TurnWindows> = Object.freeze({
  pauseMs: 0,
  completeMs: 0,
  unsureMs: 0,
  incompleteMs: 0,
  speculate: false,
});

/** Words a finished sentence does not end on (articles, conjunctions, fillers). */
const NEVER_LAST = new Set([
  "a",
  "an",
  "the",
  "my",
  "your",
  "our",
  "their",
  "and",
  "but",
  "or",
  "nor",
  "because",
  "although",
  "unless",
  "whereas",
  "um",
  "uh",
  "umm",
  "uhm",
  "erm",
  "er",
  "hmm",
]);

/**
 * Words a sentence rarely ends on (prepositions, auxiliaries, pronoun subjects): unfinished
 * without final punctuation, unsure with it ("I'd like to." is a sentence).
 */
const RARELY_LAST = new Set([
  "to",
  "for",
  "with",
  "at",
  "in",
  "on",
  "from",
  "of",
  "about",
  "into",
  "than",
  "is",
  "are",
  "was",
  "were",
  "am",
  "be",
  "will",
  "would",
  "can",
  "could",
  "should",
  "shall",
  "must",
  "have",
  "has",
  "had",
  "i",
  "we",
  "he",
  "she",
  "they",
  "that",
  "which",
  "who",
  "whose",
  "if",
  "like",
  "very",
  "really",
  "some",
  "any",
  "this",
  "these",
  "those",
  "his",
  "her",
  "its",
  "i'm",
  "i'd",
  "i'll",
  "we're",
  "it's",
  "there's",
]);

/**
 * How finished `text` reads: `complete` for a question or final punctuation (unless it ends on
 * an article, conjunction or filler), `incomplete` for a trailing word a sentence does not end
 * on, else `unsure`. `endOfUtterance` (the transcriber's own end-of-utterance event) makes it
 * one step more finished.
 */
export function transcriptCompleteness(text: string, endOfUtterance = false): TurnCompleteness {
  const plain = text.trim().replace(/["'”’)\]]+$/u, "");
  const reading = readingOf(plain);
  if (!endOfUtterance || reading === "complete") return reading;
  return reading === "incomplete" ? "unsure" : "complete";
}

function readingOf(text: string): TurnCompleteness {
  if (text === "") return "unsure";
  if (text.endsWith("?")) return "complete";
  // Dashes and ellipses are a voice trailing off, not a full stop.
  if (/(\.\.\.|…|-|–|—|,|;|:)$/u.test(text)) return "incomplete";
  const final = /[.!。！]$/u.test(text);
  const last = lastWord(text);
  if (NEVER_LAST.has(last)) return "incomplete";
  if (RARELY_LAST.has(last)) return final ? "unsure" : "incomplete";
  return final ? "complete" : "unsure";
}

function lastWord(text: string): string {
  const words = text.toLowerCase().replace(/[.!?。！]+$/u, "").split(/\s+/);
  return (words.at(-1) ?? "").replace(/^[^\p{L}\p{N}']+|[^\p{L}\p{N}']+$/gu, "")
    .replace(/’/g, "'");
}

/** The silence (ms since the caller's last word) a turn that reads `c` needs before an answer. */
export function silenceNeededMs(windows: TurnWindows, c: TurnCompleteness): number {
  switch (c) {
    case "complete":
      return windows.completeMs;
    case "unsure":
      return windows.unsureMs;
    case "incomplete":
      return windows.incompleteMs;
  }
}

/**
 * Check `windows`: every window a whole number of ms from 0 to 10 000, and
 * `completeMs <= unsureMs <= incompleteMs`; throws a {@link FlowcatError} (`config`).
 */
export function validateTurnWindows(windows: TurnWindows): TurnWindows {
  const { pauseMs, completeMs, unsureMs, incompleteMs } = windows;
  for (const [name, v] of Object.entries({ pauseMs, completeMs, unsureMs, incompleteMs })) {
    if (!Number.isInteger(v) || v < 0 || v > 10_000) {
      throw new FlowcatError("config", `turns: ${name} must be 0-10000 ms, got ${v}`);
    }
  }
  if (!(completeMs <= unsureMs && unsureMs <= incompleteMs)) {
    throw new FlowcatError(
      "config",
      `turns: windows must grow complete <= unsure <= incomplete (got ${completeMs}, ${unsureMs}, ${incompleteMs})`,
    );
  }
  return { ...windows };
}
