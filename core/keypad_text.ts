/**
 * How a keypad press is told to a language model, which has no DTMF input of its own: as a user
 * turn. Realtime clients send it with `sendDtmf`; the cascaded pipeline's user aggregator commits
 * it as a user message.
 * @module
 */

import type { KeypadEntry } from "./frames.ts";

/**
 * A keypad press as a user turn; the agent's prompt says what a key means, and the model answers
 * or calls a tool.
 *
 * @example
 * ```ts
 * dtmfUserText("1"); // 'The caller pressed "1" on the phone keypad.'
 * ```
 */
export function dtmfUserText(key: KeypadEntry): string {
  return `The caller pressed "${key}" on the phone keypad.`;
}
