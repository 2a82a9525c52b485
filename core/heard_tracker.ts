/**
 * HeardTracker: keeps a bot line (a context message, a transcript line) to what the caller
 * heard of it, from the SpokenText and BotInterrupted frames the output transport sends
 * upstream.
 *
 * A holder *expects* each line it wrote, by utterance id. SpokenText counts what has played of
 * an utterance; a line whose text has all played is done and forgotten. On BotInterrupted every
 * expected line not yet heard in full is cut: to what played of it, plus the interrupted piece
 * when the cut is its own, and to nothing when none of it played (its words were still being
 * generated or synthesized, or were queued behind the cut). The line of an utterance already
 * cut when it is expected (a realtime model's transcript that arrives after the barge-in) is
 * cut as it is expected. Counts are in visible characters (core/heard_text.ts), so pieces and
 * lines need not agree on spacing.
 *
 * @example
 * ```ts
 * const tracker = new HeardTracker<string>();
 * tracker.expect("reply-7", "One. Two. Three.", "message");
 * tracker.spoken("reply-7", "One.");
 * tracker.interrupted({ utteranceId: "reply-7", text: "Two.", heard: "", fraction: 0.4 });
 * // [{ target: "message", heard: "One." }]
 * ```
 * @module
 */

import type { PlayoutCut } from "./frames.ts";
import { heardPrefix, visibleLength } from "./heard_text.ts";

/** A line the interruption cut: `target` should now read `heard`. */
export interface HeardCut<T> {
  /** What the holder expected (its message, its line). */
  target: T;
  /** The part of its text the caller heard (possibly empty). */
  heard: string;
}

interface Expected<T> {
  text: string;
  total: number;
  target: T;
}

interface Settled {
  spoken: number;
  cut: PlayoutCut | undefined;
}

/** Lines, counts and cuts kept at most; older ones are dropped (a line nobody settles). */
const MEMORY = 32;

/** Cuts lines of type `T` to what was heard. */
export class HeardTracker<T> {
  // Made on first use: every call holds trackers, most calls are never interrupted.
  #expectedMap: Map<string, Expected<T>> | undefined;
  #spokenMap: Map<string, number> | undefined;
  #settledMap: Map<string, Settled> | undefined;

  get #expected(): Map<string, Expected<T>> {
    return (this.#expectedMap ??= new Map());
  }

  get #spoken(): Map<string, number> {
    return (this.#spokenMap ??= new Map());
  }

  get #settled(): Map<string, Settled> {
    return (this.#settledMap ??= new Map());
  }

  /** Lines still waiting to be heard in full. */
  get pending(): number {
    return this.#expectedMap?.size ?? 0;
  }

  /**
   * Track `text` of `utteranceId` for `target`. Returns the heard text when the utterance was
   * already cut short, else `undefined` (tracked, or heard in full already).
   */
  expect(utteranceId: string, text: string, target: T): string | undefined {
    const total = visibleLength(text);
    const settled = this.#settledMap?.get(utteranceId);
    if (settled !== undefined) {
      this.#settledMap!.delete(utteranceId);
      const n = heardCount(utteranceId, settled.spoken, settled.cut, total);
      return n < total ? heardPrefix(text, n) : undefined;
    }
    const spoken = this.#spokenMap?.get(utteranceId) ?? 0;
    if (spoken >= total) {
      this.#spokenMap?.delete(utteranceId);
      return undefined;
    }
    bounded(this.#expected, utteranceId, { text, total, target });
    return undefined;
  }

  /** A SpokenText: `text` of `utteranceId` has played. */
  spoken(utteranceId: string, text: string): void {
    const n = (this.#spokenMap?.get(utteranceId) ?? 0) + visibleLength(text);
    const line = this.#expectedMap?.get(utteranceId);
    if (line !== undefined && n >= line.total) {
      this.#expectedMap!.delete(utteranceId);
      this.#spokenMap?.delete(utteranceId);
      return;
    }
    bounded(this.#spoken, utteranceId, n);
  }

  /** A BotInterrupted: every expected line not heard in full, cut to what was heard. */
  interrupted(cut: PlayoutCut | undefined): HeardCut<T>[] {
    const out: HeardCut<T>[] = [];
    for (const [id, line] of this.#expected) {
      const n = heardCount(id, this.#spoken.get(id) ?? 0, cut, line.total);
      if (n < line.total) out.push({ target: line.target, heard: heardPrefix(line.text, n) });
      this.#spoken.delete(id);
    }
    this.#expected.clear();
    // Utterances heard in part whose line is not written yet: cut it when it comes.
    for (const [id, spoken] of this.#spoken) bounded(this.#settled, id, { spoken, cut });
    if (cut !== undefined && !this.#spoken.has(cut.utteranceId)) {
      bounded(this.#settled, cut.utteranceId, { spoken: 0, cut });
    }
    this.#spoken.clear();
    return out;
  }
}

/** Visible characters heard of a line of `total`: what played, plus its share of the cut. */
function heardCount(
  id: string,
  spoken: number,
  cut: PlayoutCut | undefined,
  total: number,
): number {
  if (cut === undefined || cut.utteranceId !== id) return spoken;
  // Words the output had: count what of them played. Words it never had (they came after the
  // cut): place the cut by the share of the audio that played.
  const extra = cut.text !== ""
    ? visibleLength(cut.heard)
    : Math.floor(cut.fraction * Math.max(0, total - spoken));
  return spoken + extra;
}

function bounded<V>(map: Map<string, V>, key: string, value: V): void {
  map.delete(key);
  map.set(key, value);
  if (map.size > MEMORY) map.delete(map.keys().next().value!);
}
