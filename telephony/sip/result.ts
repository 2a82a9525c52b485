/**
 * The result shape every SIP/SDP parser returns: parsers never throw on peer input, because a
 * malformed datagram from the network is an expected event, not a programming error.
 * @module
 */

/**
 * Outcome of parsing untrusted input: the value, or a short human-readable reason.
 *
 * @example
 * ```ts
 * const r: ParseResult<number> = { ok: false, reason: "bad CSeq number" };
 * ```
 */
export type ParseResult<T> = { ok: true; value: T } | { ok: false; reason: string };

/** A successful {@link ParseResult}. */
export function ok<T>(value: T): ParseResult<T> {
  return { ok: true, value };
}

/** A failed {@link ParseResult}. */
export function fail<T = never>(reason: string): ParseResult<T> {
  return { ok: false, reason };
}
