/**
 * Why a provider WebSocket could not be opened, from the text of Deno's `error` event: the
 * HTTP status of a refused handshake ("Invalid status code: 429"), a refused or unreachable
 * TCP connection, a DNS or TLS failure. Deno gives no status field, only that text.
 * @module
 */

/** A failed WebSocket dial, described. */
export interface DialFailure {
  /** The HTTP status the server answered the upgrade with, when it did. */
  status?: number;
  /** A few words for the error message: `HTTP 429`, `connection refused`, ... */
  text: string;
}

/**
 * Describe a dial failure from the error event's message (empty when there was none).
 *
 * @example
 * ```ts
 * wsDialFailure("NetworkError: failed to connect to WebSocket: Invalid status code: 429");
 * // { status: 429, text: "HTTP 429" }
 * ```
 */
export function wsDialFailure(message: string): DialFailure {
  const status = /status code:?\s*(\d{3})/i.exec(message)?.[1];
  if (status !== undefined) return { status: Number(status), text: `HTTP ${status}` };
  if (/connection refused/i.test(message)) return { text: "connection refused" };
  if (/tcp connect error/i.test(message)) {
    return { text: "TCP connection failed (refused or unreachable)" };
  }
  if (/dns error|failed to lookup|name or service not known/i.test(message)) {
    return { text: "host not found" };
  }
  if (/certificate|tls|handshake/i.test(message)) return { text: "TLS failed" };
  const rest = message.replace(/^.*failed to connect to WebSocket:\s*/i, "").trim();
  return { text: rest === "" ? "no reason given" : rest.slice(0, 200) };
}
