/**
 * What the first words of an outbound call say about who answered: a voicemail greeting's
 * phrases ("leave a message", "not available", "after the tone", "you've reached"), a carrier's
 * announcement ("not in service"), a long monologue, or a person's ("who is this?", "speaking",
 * "how can I help"). Used by the answering-machine detector with the greeting's cadence.
 *
 * @example
 * ```ts
 * import { judgeGreetingText } from "./amd_transcript.ts";
 * judgeGreetingText("Hi, you've reached Sam. Leave a message."); // "machine"
 * judgeGreetingText("Acme support, Mary speaking, how can I help you?"); // "human"
 * judgeGreetingText("Hello?"); // undefined: says nothing either way
 * ```
 * @module
 */

/** A greeting this many words long (or longer) is a recording: people stop sooner and wait. */
export const MONOLOGUE_WORDS = 15;

const MACHINE: readonly RegExp[] = [
  /\b(leave|record) (me |us )?(a|your)( brief| short| detailed)? (message|name and number)/,
  /\b(after|at) the (tone|beep|signal)\b/,
  /\b(is|am|are|'s|'m|'re) (currently )?(not available|unavailable)\b/,
  /\bnot available (right now|at the moment|to take)/,
  /\bvoice ?mail\b/,
  /\bmail ?box\b/,
  /\byou('ve| have) reached\b/,
  /\b(can't|cannot|can not|unable to) (come to|take|answer|get to) (the |your |my )?(phone|call)/,
  /\b(get|call) (right )?back to you\b/,
  /\breturn your call\b/,
  /\bnot in service\b/,
  /\b(number|person|party|subscriber) you (are calling|have (dialed|dialled|called|reached))\b/,
  /\bplease try (again|your call again) later\b/,
];

const HUMAN: readonly RegExp[] = [
  /\bhow (can|may) (i|we) help\b/,
  /\bwho('s| is) (this|calling|speaking)\b/,
  /\b(is |am |'s |'m )?speaking\b/,
  /\bwhat can i do for you\b/,
];

/**
 * `machine`, `human`, or undefined when `text` (the callee's first words, so far) says neither.
 * A voicemail phrase or a monologue wins over a person's phrase: a greeting may say both.
 */
export function judgeGreetingText(text: string): "human" | "machine" | undefined {
  const t = text.toLowerCase().replace(/[’‘]/g, "'").replace(/\s+/g, " ");
  if (MACHINE.some((re) => re.test(t))) return "machine";
  const words = t.split(/[^a-z0-9']+/).filter((w) => w !== "").length;
  if (words >= MONOLOGUE_WORDS) return "machine";
  if (HUMAN.some((re) => re.test(t))) return "human";
  return undefined;
}
