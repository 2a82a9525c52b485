/**
 * SIP message framing on a byte stream (RFC 3261 §18.3): a message ends where its headers end
 * plus `Content-Length` bytes, and on a stream `Content-Length` is mandatory. CRLFs between
 * messages are keep-alives (RFC 5626 §3.5.1: a double CRLF is a ping, answered by one CRLF).
 * Pure: bytes in, whole messages out.
 *
 * @module
 */

/** Largest SIP message accepted on a stream (headers and body). */
export const MAX_STREAM_MESSAGE_BYTES = 65536;

/** What one chunk of the stream produced. */
export interface FramedChunk {
  /** Whole messages, in order. */
  messages: Uint8Array[];
  /** Keep-alive pings (double CRLF) seen: each wants one CRLF back. */
  pings: number;
  /** Set when the stream is broken (no Content-Length, oversize): close the connection. */
  error?: string;
}

const CR = 13;
const LF = 10;
const decoder = new TextDecoder();

/** Index of the first `\r\n\r\n` in `b` from `from`, or -1. */
function headerEnd(b: Uint8Array, from: number, to: number): number {
  for (let i = from; i + 3 < to; i++) {
    if (b[i] === CR && b[i + 1] === LF && b[i + 2] === CR && b[i + 3] === LF) return i;
  }
  return -1;
}

/** The Content-Length of a header block (`l` is its compact form); undefined when absent. */
function contentLength(head: string): number | undefined | "bad" {
  const m = /(?:^|\r\n)(?:content-length|l)[ \t]*:[ \t]*([^\r\n]*)/i.exec(head);
  if (m === null) return undefined;
  const v = m[1].trim();
  return /^\d{1,9}$/.test(v) ? Number(v) : "bad";
}

/** Splits one connection's bytes into SIP messages. */
export class SipStreamFramer {
  #buf = new Uint8Array(4096);
  #len = 0;

  /** Feed the next chunk read from the connection. */
  push(chunk: Uint8Array): FramedChunk {
    if (this.#len + chunk.length > this.#buf.length) {
      const bigger = new Uint8Array(Math.max(this.#buf.length * 2, this.#len + chunk.length));
      bigger.set(this.#buf.subarray(0, this.#len));
      this.#buf = bigger;
    }
    this.#buf.set(chunk, this.#len);
    this.#len += chunk.length;
    const out: FramedChunk = { messages: [], pings: 0 };
    let at = 0;
    const b = this.#buf;
    for (;;) {
      // Keep-alives: a CRLF pair between messages is a ping, a lone CRLF a pong.
      while (at + 1 < this.#len && b[at] === CR && b[at + 1] === LF) {
        if (at + 3 < this.#len && b[at + 2] === CR && b[at + 3] === LF) {
          out.pings++;
          at += 4;
        } else at += 2;
      }
      const end = headerEnd(b, at, this.#len);
      if (end < 0) {
        if (this.#len - at > MAX_STREAM_MESSAGE_BYTES) out.error = "SIP headers too long";
        break;
      }
      const length = contentLength(decoder.decode(b.subarray(at, end)));
      if (length === undefined || length === "bad") {
        out.error = length === undefined
          ? "SIP message on a stream without Content-Length"
          : "SIP message with a malformed Content-Length";
        break;
      }
      const total = end + 4 - at + length;
      if (total > MAX_STREAM_MESSAGE_BYTES) {
        out.error = `SIP message of ${total} bytes is too large`;
        break;
      }
      if (at + total > this.#len) break;
      out.messages.push(b.slice(at, at + total));
      at += total;
    }
    if (out.error !== undefined) {
      this.#len = 0;
      return out;
    }
    b.copyWithin(0, at, this.#len);
    this.#len -= at;
    return out;
  }
}
