/**
 * HTTP pieces shared by the carrier REST clients (originating calls, transferring them): Basic
 * auth, the API origin, the carrier's own error text, and scrubbing secrets out of messages.
 * @module
 */

/** A Basic authorization header value for `user`:`pass`. */
export const basicAuth = (user: string, pass: string): string =>
  `Basic ${new TextEncoder().encode(`${user}:${pass}`).toBase64()}`;

/** The API origin: `base` when given, else the carrier's, without a trailing slash. */
export function apiOrigin(base: string | undefined, fallback: string): string {
  return (base ?? fallback).replace(/\/+$/, "");
}

/** The carrier's own error text from a JSON error body (Twilio, Telnyx, Plivo, Vonage shapes). */
export function carrierError(json: Record<string, unknown> | undefined, text: string): string {
  if (json) {
    const errors = json.errors;
    if (Array.isArray(errors) && errors.length > 0 && typeof errors[0] === "object") {
      const e = errors[0] as Record<string, unknown>;
      const code = e.code !== undefined ? ` (code ${e.code})` : "";
      return `${e.detail ?? e.title ?? "error"}${code}`;
    }
    const message = json.message ?? json.error ?? json.detail ?? json.error_title;
    if (typeof message === "string") {
      return json.code !== undefined ? `${message} (code ${json.code})` : message;
    }
  }
  return text.trim() || "no error message";
}

/** `text` with every secret replaced and cut to a log-friendly length. */
export function scrub(text: string, secrets: string[]): string {
  let out = text;
  for (const s of secrets) if (s.length >= 4) out = out.split(s).join("***");
  return out.replace(/\s+/g, " ").slice(0, 300);
}

/** `text` parsed as a JSON object, or undefined. */
export function jsonObject(text: string): Record<string, unknown> | undefined {
  try {
    const parsed = JSON.parse(text);
    return parsed !== null && typeof parsed === "object" ? parsed : undefined;
  } catch {
    return undefined;
  }
}
