/**
 * The playground's `transcript` event for one transcript line. `id` is the line's place in the
 * call's transcript: a line sent again under the same id (a bot line a barge-in cut short,
 * then marked `interrupted`) replaces the one shown.
 *
 * @example
 * ```ts
 * transcriptEvent({ role: "bot", text: "Hello", atMs: 900, interrupted: true }, 2);
 * // { type: "transcript", id: 2, role: "bot", text: "Hello", final: true, interrupted: true }
 * ```
 * @module
 */

import type { TranscriptLine } from "../core/processors/finalize.ts";

/** The data-channel event of a caller or agent line at `index` in the transcript. */
export function transcriptEvent(line: TranscriptLine, index: number): Record<string, unknown> {
  const event: Record<string, unknown> = {
    type: "transcript",
    id: index,
    role: line.role,
    text: line.text,
    final: true,
  };
  if (line.interrupted) event.interrupted = true;
  return event;
}
