/**
 * Cutting a bot line to what the caller heard.
 *
 * Heard text is measured in visible (non-white-space) characters, so a count taken on the
 * sentences the output transport played maps onto the line a consumer holds (a reply, a
 * transcript line) whatever their spacing. A cut never ends inside a word: a word whose audio
 * was still playing is left out (text without spaces, such as Chinese, is cut per character),
 * and the soft punctuation a cut leaves dangling (`,` `;` `:` dashes) is dropped.
 *
 * @example
 * ```ts
 * import { cutAtFraction, heardPrefix } from "./heard_text.ts";
 * heardPrefix("Hello there, how are you?", 12); // "Hello there"
 * cutAtFraction("one two three four", 0.5);     // "one two"
 * ```
 * @module
 */

const SPACE = /\s/;
/** Characters that make up a word: a cut between two of them is inside the word. */
const WORD = /[\p{L}\p{N}\p{M}'\u2019]/u;
const DANGLING = /[\s,;:\u2013\u2014-]+$/u;

/** Visible (non-white-space) characters in `text`. */
export function visibleLength(text: string): number {
  let n = 0;
  for (const ch of text) if (!SPACE.test(ch)) n++;
  return n;
}

/**
 * The start of `text` holding at most `count` visible characters, cut back to a word boundary;
 * `text` itself once `count` covers it.
 */
export function heardPrefix(text: string, count: number): string {
  if (count >= visibleLength(text)) return text;
  if (count <= 0) return "";
  let seen = 0;
  let end = 0;
  // UTF-16 offsets, but counting code points: a surrogate pair is one visible character.
  for (const ch of text) {
    if (!SPACE.test(ch)) {
      if (seen === count) break;
      seen++;
    }
    end += ch.length;
  }
  // Inside a word: back to its start. Text with no space at all has no words to keep whole.
  if (SPACE.test(text) && isWordAt(text, end)) {
    while (end > 0 && isWordAt(text, before(text, end))) end = before(text, end);
  }
  return text.slice(0, end).replace(DANGLING, "");
}

/**
 * The part of `text` heard when `fraction` (0..1) of its audio played, the characters taken as
 * spread evenly over the audio: an estimate, since speech dwells on some words and pauses at
 * commas.
 */
export function cutAtFraction(text: string, fraction: number): string {
  const f = Math.min(1, Math.max(0, fraction));
  return heardPrefix(text, Math.floor(f * visibleLength(text)));
}

function isWordAt(text: string, i: number): boolean {
  const cp = text.codePointAt(i);
  return cp !== undefined && WORD.test(String.fromCodePoint(cp));
}

/** Where the code point ending at `i` starts (a surrogate pair is two units). */
function before(text: string, i: number): number {
  const unit = text.charCodeAt(i - 1);
  return unit >= 0xdc00 && unit <= 0xdfff && i >= 2 ? i - 2 : i - 1;
}
