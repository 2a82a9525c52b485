/**
 * Safe access to untrusted carrier JSON: every reader returns `undefined` on a wrong type, so a
 * serializer turns bad input into an `ignore` result instead of a throw.
 * @module
 */

import type { KeypadEntry } from "../../core/frames.ts";
import type { SerIn } from "../../core/seams.ts";

/** A parsed JSON object. */
export type JsonObject = Record<string, unknown>;

/** Parse `text` as a JSON object; a string result is the reason it is not one. */
export function parseObject(text: string): JsonObject | string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return "malformed JSON";
  }
  return isObject(value) ? value : "JSON message is not an object";
}

/** Whether `value` is a plain JSON object (not null, not an array). */
export function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** `o[key]` when it is an object. */
export function objectAt(o: JsonObject | undefined, key: string): JsonObject | undefined {
  const v = o?.[key];
  return isObject(v) ? v : undefined;
}

/** `o[key]` when it is a non-empty string. */
export function stringAt(o: JsonObject | undefined, key: string): string | undefined {
  const v = o?.[key];
  return typeof v === "string" && v !== "" ? v : undefined;
}

/** `o[key]` as a finite number; carriers send some numbers as strings (`"8000"`). */
export function numberAt(o: JsonObject | undefined, key: string): number | undefined {
  const v = o?.[key];
  const n = typeof v === "number" ? v : typeof v === "string" && v !== "" ? Number(v) : NaN;
  return Number.isFinite(n) ? n : undefined;
}

// Above any carrier's rate (Sinch allows 96 kHz); rejects absurd values from a hostile peer.
const MAX_RATE = 192_000;

/** A sample rate from `o[key]` when it is a positive integer (number or numeric string). */
export function rateAt(o: JsonObject | undefined, key: string): number | undefined {
  const n = numberAt(o, key);
  return n !== undefined && Number.isInteger(n) && n > 0 && n <= MAX_RATE ? n : undefined;
}

/** String-valued view of a custom-parameter object; numbers and booleans are stringified. */
export function stringParams(value: unknown): Record<string, string> | undefined {
  if (!isObject(value)) return undefined;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(value)) {
    if (typeof v === "string") out[k] = v;
    else if (typeof v === "number" || typeof v === "boolean") out[k] = String(v);
  }
  return out;
}

const KEYS = new Set<string>("0123456789*#ABCD");

/** A DTMF digit as a {@link KeypadEntry} (`a`-`d` accepted as upper case), else `undefined`. */
export function keypadEntry(value: unknown): KeypadEntry | undefined {
  if (typeof value !== "string" || value.length !== 1) return undefined;
  const key = value.toUpperCase();
  return KEYS.has(key) ? key as KeypadEntry : undefined;
}

/** A DTMF result for `digit`, or an ignore saying why it is not one. */
export function dtmfResult(digit: unknown): SerIn {
  const key = keypadEntry(digit);
  return key === undefined ? ignore("dtmf without a valid digit") : { type: "dtmf", key };
}

/** A mark result for `name`, or an ignore when it is missing. */
export function markResult(name: unknown): SerIn {
  return typeof name === "string" && name !== ""
    ? { type: "mark", name }
    : ignore("mark without a name");
}

/** An `ignore` result. */
export function ignore(reason: string): SerIn {
  return { type: "ignore", reason };
}

/** The one `stop` result (results are never mutated, so it is shared). */
export const STOP: SerIn = Object.freeze({ type: "stop" });

/** Carrier text is echoed in ignore reasons; cap it so a hostile peer cannot bloat logs. */
export function shortName(text: string, max = 40): string {
  return text.length > max ? `${text.slice(0, max)}...` : text;
}

/** Whether a media `track` field names the caller's leg (absent counts as inbound). */
export function isInboundTrack(track: unknown): boolean {
  return track === undefined || (typeof track === "string" && track.startsWith("inbound"));
}

/** Copy the non-empty string fields `fields` of `o` into `into` (a fresh object by default). */
export function pickStrings(
  o: JsonObject | undefined,
  fields: readonly string[],
  into: Record<string, string> = {},
): Record<string, string> {
  for (const field of fields) {
    const value = stringAt(o, field);
    if (value !== undefined) into[field] = value;
  }
  return into;
}
