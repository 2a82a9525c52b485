/**
 * The DTMF keypad: keys, their row/column frequencies (ITU-T Q.23), and key-string parsing.
 *
 * @example
 * ```ts
 * import { DTMF_FREQS, parseDtmfKeys } from "@flowcat/flowcat/audio";
 * DTMF_FREQS["5"]; // [770, 1336]
 * parseDtmfKeys("12#"); // ["1", "2", "#"]
 * ```
 * @module
 */

import { FlowcatError } from "../errors.ts";
import type { KeypadEntry } from "../frames.ts";

/** Low-group (row) frequencies in Hz, top row first. */
export const DTMF_ROW_FREQS: readonly number[] = Object.freeze([697, 770, 852, 941]);
/** High-group (column) frequencies in Hz, left column first. */
export const DTMF_COL_FREQS: readonly number[] = Object.freeze([1209, 1336, 1477, 1633]);

/** The keypad, row-major: `DTMF_KEYPAD[row][col]`. */
export const DTMF_KEYPAD: readonly (readonly KeypadEntry[])[] = Object.freeze([
  Object.freeze(["1", "2", "3", "A"] as KeypadEntry[]),
  Object.freeze(["4", "5", "6", "B"] as KeypadEntry[]),
  Object.freeze(["7", "8", "9", "C"] as KeypadEntry[]),
  Object.freeze(["*", "0", "#", "D"] as KeypadEntry[]),
]);

/** All 16 keys in keypad order. */
export const DTMF_KEYS: readonly KeypadEntry[] = Object.freeze(DTMF_KEYPAD.flat());

/** `[low, high]` frequencies of each key, in Hz. */
export const DTMF_FREQS: Readonly<Record<KeypadEntry, readonly [number, number]>> = Object.freeze(
  Object.fromEntries(
    DTMF_KEYPAD.flatMap((row, r) =>
      row.map((k, c) => [k, Object.freeze([DTMF_ROW_FREQS[r], DTMF_COL_FREQS[c]] as const)])
    ),
  ) as Record<KeypadEntry, readonly [number, number]>,
);

/** True when `s` is one keypad key (`0`-`9`, `*`, `#`, `A`-`D`, upper case). */
export function isKeypadEntry(s: string): s is KeypadEntry {
  return s.length === 1 && Object.hasOwn(DTMF_FREQS, s);
}

/**
 * Split a key string such as `"123#"` into keys. Lower-case `a`-`d` are accepted; anything
 * else throws a {@link FlowcatError} (`config`).
 */
export function parseDtmfKeys(keys: string | readonly string[]): KeypadEntry[] {
  const list = typeof keys === "string" ? [...keys] : keys;
  return list.map((k) => {
    const up = k.toUpperCase();
    if (!isKeypadEntry(up)) {
      throw new FlowcatError("config", `dtmf: ${JSON.stringify(k)} is not a keypad key`);
    }
    return up;
  });
}
