/**
 * Utterance ids: what ties a bot line (a context message, a transcript line) to the speech the
 * output transport plays, so the line can be cut to what was heard (core/heard_tracker.ts).
 *
 * A language-model reply's id comes from its LlmResponseStart frame, which the context
 * aggregator and the TTS processor both see (frames travel by reference); other lines get a
 * fresh id from whoever makes them.
 *
 * @example
 * ```ts
 * import { newUtteranceId, replyUtteranceId } from "./utterance.ts";
 * const greeting = newUtteranceId("greeting"); // "greeting-1"
 * ```
 * @module
 */

import type { FrameOf } from "./frames.ts";

let last = 0;

/** A process-unique (per isolate) utterance id. */
export function newUtteranceId(prefix = "utt"): string {
  return `${prefix}-${++last}`;
}

/** The utterance id of the reply that `start` opens. */
export function replyUtteranceId(start: FrameOf<"LlmResponseStart">): string {
  return `reply-${start.id}`;
}

/** The utterance id of a TtsSpeak: its own, or one made from the frame. */
export function speakUtteranceId(speak: FrameOf<"TtsSpeak">): string {
  return speak.utteranceId ?? `speak-${speak.id}`;
}
