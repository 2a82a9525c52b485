/**
 * Sentence splitting for streamed language-model text, so text-to-speech can start on the
 * first sentence instead of waiting for the whole reply.
 *
 * A sentence ends at `.`, `!`, `?`, `…` (or their CJK forms) followed by white space, or at
 * a line break. Not an end: a period after a common abbreviation ("Dr.", "e.g."), after a
 * single letter ("J. Smith"), or inside a number ("3.14", no space follows). Very long runs
 * without an end are cut at the last comma or space before {@link SentenceSplitterOptions.maxChars}.
 *
 * @example
 * ```ts
 * import { SentenceSplitter } from "./sentences.ts";
 * const s = new SentenceSplitter();
 * s.push("Hello there. How a"); // ["Hello there."]
 * s.push("re you?");            // []  (no space after "?" yet)
 * s.flush();                    // ["How are you?"]
 * ```
 * @module
 */

/** Options of a {@link SentenceSplitter}. */
export interface SentenceSplitterOptions {
  /** Cut a sentence that grows past this many characters (default 240). */
  maxChars?: number;
  /** Sentences shorter than this are joined with the next (default 2). */
  minChars?: number;
}

const ABBREVIATIONS = new Set([
  "mr",
  "mrs",
  "ms",
  "dr",
  "prof",
  "sr",
  "jr",
  "st",
  "vs",
  "etc",
  "e.g",
  "i.e",
  "approx",
  "no",
  "inc",
  "ltd",
  "co",
  "mt",
  "ft",
  "jan",
  "feb",
  "mar",
  "apr",
  "jun",
  "jul",
  "aug",
  "sep",
  "sept",
  "oct",
  "nov",
  "dec",
]);

const END = /[.!?…。！？]/;
const CLOSERS = /["'”’)\]]/;

/** Splits streamed text into speakable sentences. Stateful: one per reply. */
export class SentenceSplitter {
  readonly #max: number;
  readonly #min: number;
  #buf = "";

  /** A splitter (see {@link SentenceSplitterOptions}). */
  constructor(opts: SentenceSplitterOptions = {}) {
    this.#max = opts.maxChars ?? 240;
    this.#min = opts.minChars ?? 2;
  }

  /** Text not yet returned as a sentence. */
  get pending(): string {
    return this.#buf;
  }

  /** Add streamed text; returns the sentences it completed (trimmed, non-empty). */
  push(text: string): string[] {
    this.#buf += text;
    const out: string[] = [];
    let from = 0;
    for (let i = 0; i < this.#buf.length; i++) {
      const c = this.#buf[i];
      let cut = -1;
      if (c === "\n") cut = i;
      else if (END.test(c)) {
        let j = i + 1;
        while (j < this.#buf.length && (END.test(this.#buf[j]) || CLOSERS.test(this.#buf[j]))) j++;
        // Need the following character to know it is an end ("3.14", "e.g." run on).
        if (j >= this.#buf.length) break;
        // CJK full stops need no space after them.
        const cjk = c === "。" || c === "！" || c === "？";
        if ((cjk || /\s/.test(this.#buf[j])) && !(c === "." && this.#isAbbreviation(from, i))) {
          cut = j - 1;
        }
        i = j - 1;
      }
      if (cut >= 0) {
        const sentence = this.#buf.slice(from, cut + 1).trim();
        if (sentence.length >= this.#min) {
          out.push(sentence);
          from = cut + 1;
        }
      } else if (i - from >= this.#max) {
        const part = this.#buf.slice(from, i + 1);
        const at = Math.max(part.lastIndexOf(", "), part.lastIndexOf(" "));
        const end = at > 0 ? from + at + 1 : i + 1;
        const sentence = this.#buf.slice(from, end).trim();
        if (sentence) out.push(sentence);
        from = end;
      }
    }
    this.#buf = this.#buf.slice(from);
    return out;
  }

  /** The rest of the text as a last sentence (if any), and reset. */
  flush(): string[] {
    const rest = this.#buf.trim();
    this.#buf = "";
    return rest ? [rest] : [];
  }

  /** Drop pending text (an interruption). */
  reset(): void {
    this.#buf = "";
  }

  #isAbbreviation(from: number, dot: number): boolean {
    let k = dot - 1;
    while (k >= from && /[\p{L}.]/u.test(this.#buf[k])) k--;
    const word = this.#buf.slice(k + 1, dot).toLowerCase();
    // An initial ("J. Smith"), but not the pronoun ("So do I. Then...").
    if (word.length === 1 && /\p{L}/u.test(word)) return word !== "i";
    return ABBREVIATIONS.has(word);
  }
}
