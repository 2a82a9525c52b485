/**
 * Call tokens and constant-time comparison, shared by the core's in-memory session source and
 * the telephony security helpers (which re-export both).
 * @module
 */

import { FlowcatError } from "./errors.ts";

const utf8 = new TextEncoder();

/** UTF-8 of a string, or the bytes themselves. */
function bytesOf(v: string | Uint8Array): Uint8Array {
  return typeof v === "string" ? utf8.encode(v) : v;
}

/**
 * Compare two secrets in time that depends only on `a`'s length, never on where they differ.
 *
 * @example
 * ```ts
 * timingSafeEqual("abc", "abc"); // true
 * ```
 */
export function timingSafeEqual(a: string | Uint8Array, b: string | Uint8Array): boolean {
  const x = bytesOf(a);
  const y = bytesOf(b);
  // On a length mismatch compare x with itself so the loop still runs over x.length.
  const other = x.length === y.length ? y : x;
  let diff = x.length ^ y.length;
  for (let i = 0; i < x.length; i++) diff |= x[i] ^ other[i];
  return diff === 0;
}

/** A random URL-safe token (base64url, no padding) of `byteLength` random bytes (default 32). */
export function createCallToken(byteLength = 32): string {
  if (!Number.isInteger(byteLength) || byteLength < 16 || byteLength > 1024) {
    throw new FlowcatError("config", `call token length must be 16..1024 bytes, got ${byteLength}`);
  }
  return crypto.getRandomValues(new Uint8Array(byteLength)).toBase64({
    alphabet: "base64url",
    omitPadding: true,
  });
}
