/**
 * The client-to-server byte stream of one connection, as the connection guard
 * (server/conn_guard.ts) follows it: HTTP/1.1 request heads (buffered until complete, size
 * capped), request bodies (Content-Length or chunked, counted, never copied) and, once the
 * server answered an upgrade with 101, WebSocket frame headers (RFC 6455), so that a message
 * longer than the cap is refused before its bytes reach Deno's WebSocket, which buffers a
 * whole message before JavaScript sees it. Payloads are skipped by arithmetic: neither copied
 * nor unmasked.
 *
 * @example
 * ```ts
 * import { FEED_OK, RequestStream } from "./guard_stream.ts";
 * declare const chunk: Uint8Array;
 * declare function closeConnection(verdict: number): void;
 * const s = new RequestStream({ maxHeadBytes: 32768, maxMessageBytes: 1 << 20 });
 * const verdict = s.feed(chunk, chunk.length);
 * if (verdict !== FEED_OK) closeConnection(verdict);
 * ```
 * @module
 */

/** The chunk is fine: forward it. */
export const FEED_OK = 0;
/** A request head over the size cap (answered 431). */
export const FEED_HEAD_TOO_LARGE = 1;
/** Framing the guard will not pass on (answered 400): ambiguous or invalid. */
export const FEED_BAD_REQUEST = 2;
/** A WebSocket message over the cap (the connection is dropped). */
export const FEED_MESSAGE_TOO_BIG = 3;

/** What {@link RequestStream.feed} says about a chunk. */
export type FeedVerdict =
  | typeof FEED_OK
  | typeof FEED_HEAD_TOO_LARGE
  | typeof FEED_BAD_REQUEST
  | typeof FEED_MESSAGE_TOO_BIG;

/** Where the stream is. */
export enum StreamState {
  /** Between requests or inside a request head. */
  Head,
  /** A Content-Length body. */
  Body,
  /** A chunked body (see the chunk sub-states). */
  Chunked,
  /** An upgrade request was passed on; the server's answer decides what follows. */
  UpgradeWait,
  /** Upgraded: WebSocket frames. */
  WebSocket,
}

enum Chunk {
  Size,
  Ext,
  Data,
  DataEnd,
  Trailer,
}

/** Caps of a {@link RequestStream}. */
export interface StreamLimits {
  /** Largest request head, bytes (request line and header fields). */
  maxHeadBytes: number;
  /** Largest WebSocket data message (all its fragments), bytes. */
  maxMessageBytes: number;
}

const LF = 10;
const CR = 13;

/** The request-framing and WebSocket-frame follower of one connection (see the module doc). */
export class RequestStream {
  /** Where the stream is now. */
  state: StreamState = StreamState.Head;
  /** Request heads completed so far. */
  heads = 0;
  /** Bytes of the request head in progress (0: none started). */
  headBytes = 0;
  /** Size of the WebSocket message refused, when `feed` said {@link FEED_MESSAGE_TOO_BIG}. */
  refusedMessageBytes = 0;

  readonly #limits: StreamLimits;
  /** A head split over reads, gathered here (allocated on first need). */
  #head: Uint8Array | undefined;
  #bodyLeft = 0;
  #chunk: Chunk = Chunk.Size;
  #chunkSize = 0;
  #chunkDigits = 0;
  #lineLen = 0;
  /** WebSocket frame header bytes gathered so far, and how many the header has. */
  readonly #frame = new Uint8Array(14);
  #frameHave = 0;
  #frameNeed = 2;
  #payloadLeft = 0;
  #messageBytes = 0;

  /** A stream with these caps. */
  constructor(limits: StreamLimits) {
    this.#limits = limits;
  }

  /** Follow `buf[0, n)`; anything but {@link FEED_OK} means the connection must end. */
  feed(buf: Uint8Array, n: number): FeedVerdict {
    let pos = 0;
    while (pos < n) {
      switch (this.state) {
        case StreamState.Head: {
          const end = this.#headEnd(buf, pos, n);
          if (end < 0) {
            this.headBytes += n - pos;
            if (this.headBytes > this.#limits.maxHeadBytes) return FEED_HEAD_TOO_LARGE;
            this.#keepHead(buf, pos, n);
            return FEED_OK;
          }
          if (this.headBytes + (end - pos) > this.#limits.maxHeadBytes) return FEED_HEAD_TOO_LARGE;
          const verdict = this.#onHead(buf, pos, end);
          if (verdict !== FEED_OK) return verdict;
          pos = end;
          // A client waits for the server's 101 before sending frames: bytes already here
          // would go unchecked, so they end the connection.
          if ((this.state as StreamState) === StreamState.UpgradeWait && pos < n) {
            return FEED_BAD_REQUEST;
          }
          break;
        }
        case StreamState.Body: {
          const take = Math.min(this.#bodyLeft, n - pos);
          pos += take;
          this.#bodyLeft -= take;
          if (this.#bodyLeft === 0) this.state = StreamState.Head;
          break;
        }
        case StreamState.Chunked: {
          const next = this.#chunked(buf, pos, n);
          if (next < 0) return FEED_BAD_REQUEST;
          pos = next;
          break;
        }
        case StreamState.UpgradeWait:
          return FEED_BAD_REQUEST;
        case StreamState.WebSocket: {
          const next = this.#frames(buf, pos, n);
          if (next < 0) return FEED_MESSAGE_TOO_BIG;
          pos = next;
          break;
        }
      }
    }
    return FEED_OK;
  }

  /** The server answered the upgrade request: with 101 (`upgraded`) or anything else. */
  answered(upgraded: boolean): void {
    if (this.state !== StreamState.UpgradeWait) return;
    this.state = upgraded ? StreamState.WebSocket : StreamState.Head;
  }

  /**
   * Index just past the empty line ending the head that continues at `buf[from]`, or -1. The
   * empty line may end in CRLF or a bare LF, as Deno's parser accepts both.
   */
  #headEnd(buf: Uint8Array, from: number, n: number): number {
    let i = buf.indexOf(LF, from);
    while (i >= 0 && i < n) {
      // The line before this LF is empty when the previous line's LF sits right before it,
      // optionally with a CR between; those bytes may be in an earlier read.
      const b1 = this.#byteBefore(buf, from, i, 1);
      if (b1 === LF) return i + 1;
      if (b1 === CR && this.#byteBefore(buf, from, i, 2) === LF) return i + 1;
      i = buf.indexOf(LF, i + 1);
    }
    return -1;
  }

  /** The byte `back` places before `buf[i]`, reaching into the gathered head when needed. */
  #byteBefore(buf: Uint8Array, from: number, i: number, back: number): number {
    const j = i - back;
    if (j >= from) return buf[j];
    const k = this.headBytes + (j - from);
    return k >= 0 && this.#head !== undefined ? this.#head[k] : -1;
  }

  #keepHead(buf: Uint8Array, from: number, to: number): void {
    const start = this.headBytes - (to - from);
    const need = this.headBytes;
    if (this.#head === undefined || this.#head.length < need) {
      const grown = new Uint8Array(Math.min(this.#limits.maxHeadBytes, Math.max(need, 1024) * 2));
      if (this.#head !== undefined) grown.set(this.#head.subarray(0, start));
      this.#head = grown;
    }
    this.#head.set(buf.subarray(from, to), start);
  }

  /** A complete head: its earlier part gathered, the rest `buf[from, end)`. */
  #onHead(buf: Uint8Array, from: number, end: number): FeedVerdict {
    let bytes = buf.subarray(from, end);
    if (this.headBytes > 0) {
      const whole = new Uint8Array(this.headBytes + bytes.length);
      whole.set(this.#head!.subarray(0, this.headBytes));
      whole.set(bytes, this.headBytes);
      bytes = whole;
    }
    this.headBytes = 0;
    // Blank lines before a request line are allowed (RFC 9112 2.2).
    const text = latin1.decode(bytes).replace(/^(\r?\n)+/, "");
    if (text === "") return FEED_OK;
    this.heads++;
    const framing = requestFraming(text);
    if (framing === undefined) return FEED_BAD_REQUEST;
    if (framing.upgrade) {
      if (framing.chunked || framing.length > 0) return FEED_BAD_REQUEST;
      this.state = StreamState.UpgradeWait;
    } else if (framing.chunked) {
      this.state = StreamState.Chunked;
      this.#chunk = Chunk.Size;
      this.#chunkSize = 0;
      this.#chunkDigits = 0;
    } else if (framing.length > 0) {
      this.state = StreamState.Body;
      this.#bodyLeft = framing.length;
    }
    return FEED_OK;
  }

  /** Follow chunked framing from `buf[pos]`; the index reached, or -1 for bad framing. */
  #chunked(buf: Uint8Array, pos: number, n: number): number {
    while (pos < n) {
      const b = buf[pos];
      switch (this.#chunk) {
        case Chunk.Size: {
          const d = hexDigit(b);
          if (d >= 0) {
            if (++this.#chunkDigits > 12) return -1;
            this.#chunkSize = this.#chunkSize * 16 + d;
            pos++;
            continue;
          }
          if (this.#chunkDigits === 0) return -1;
          this.#chunk = Chunk.Ext;
          continue;
        }
        case Chunk.Ext:
          pos++;
          if (b === LF) {
            if (this.#chunkSize === 0) {
              this.#chunk = Chunk.Trailer;
              this.#lineLen = 0;
            } else {
              this.#chunk = Chunk.Data;
              this.#bodyLeft = this.#chunkSize;
            }
          }
          continue;
        case Chunk.Data: {
          const take = Math.min(this.#bodyLeft, n - pos);
          pos += take;
          this.#bodyLeft -= take;
          if (this.#bodyLeft === 0) this.#chunk = Chunk.DataEnd;
          continue;
        }
        case Chunk.DataEnd:
          pos++;
          if (b === LF) {
            this.#chunk = Chunk.Size;
            this.#chunkSize = 0;
            this.#chunkDigits = 0;
          } else if (b !== CR) return -1;
          continue;
        case Chunk.Trailer:
          pos++;
          if (b === LF) {
            if (this.#lineLen === 0) {
              this.state = StreamState.Head;
              return pos;
            }
            this.#lineLen = 0;
          } else if (b !== CR) {
            if (++this.#lineLen > this.#limits.maxHeadBytes) return -1;
          }
          continue;
      }
    }
    return pos;
  }

  /** Follow WebSocket frames from `buf[pos]`; the index reached, or -1 for a message too big. */
  #frames(buf: Uint8Array, pos: number, n: number): number {
    const frame = this.#frame;
    while (pos < n) {
      if (this.#payloadLeft > 0) {
        const take = Math.min(this.#payloadLeft, n - pos);
        pos += take;
        this.#payloadLeft -= take;
        continue;
      }
      frame[this.#frameHave++] = buf[pos++];
      if (this.#frameHave === 2) {
        const len7 = frame[1] & 0x7f;
        this.#frameNeed = 2 + (len7 === 126 ? 2 : len7 === 127 ? 8 : 0) +
          ((frame[1] & 0x80) !== 0 ? 4 : 0);
      }
      if (this.#frameHave < this.#frameNeed) continue;
      this.#frameHave = 0;
      this.#frameNeed = 2;
      const len7 = frame[1] & 0x7f;
      let len = len7;
      if (len7 === 126) len = (frame[2] << 8) | frame[3];
      else if (len7 === 127) {
        // Above 2^32 is over any cap; the high word alone says so.
        const high = ((frame[2] << 24) | (frame[3] << 16) | (frame[4] << 8) | frame[5]) >>> 0;
        const low = ((frame[6] << 24) | (frame[7] << 16) | (frame[8] << 8) | frame[9]) >>> 0;
        len = high !== 0 ? Number.MAX_SAFE_INTEGER : low;
      }
      const opcode = frame[0] & 0x0f;
      // Control frames (close, ping, pong) sit between fragments and carry at most 125 bytes.
      if (opcode < 8) {
        this.#messageBytes = opcode === 0 ? this.#messageBytes + len : len;
        if (this.#messageBytes > this.#limits.maxMessageBytes) {
          this.refusedMessageBytes = this.#messageBytes;
          return -1;
        }
      } else if (len > 125) {
        this.refusedMessageBytes = len;
        return -1;
      }
      this.#payloadLeft = len;
    }
    return pos;
  }
}

const latin1 = new TextDecoder("latin1");

function hexDigit(b: number): number {
  if (b >= 48 && b <= 57) return b - 48;
  const l = b | 0x20;
  return l >= 97 && l <= 102 ? l - 87 : -1;
}

/** How a request's body is framed, read from its head; undefined when ambiguous or invalid. */
export interface RequestFraming {
  /** Content-Length (0 when absent). */
  length: number;
  /** Transfer-Encoding ends in chunked. */
  chunked: boolean;
  /** The request asks to upgrade the connection. */
  upgrade: boolean;
}

/**
 * Read a request head's framing. Refused (undefined): a request line that is not HTTP/1.x,
 * Content-Length together with Transfer-Encoding, differing or malformed lengths, a
 * Transfer-Encoding not ending in chunked: the cases where two parsers could disagree about
 * where the next request starts.
 */
export function requestFraming(head: string): RequestFraming | undefined {
  const lines = head.split(/\r?\n/);
  if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+ \S+ HTTP\/1\.[01]$/.test(lines[0])) return undefined;
  let length: number | undefined;
  let te: string | undefined;
  let upgrade = false;
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i];
    if (line === "") continue;
    const colon = line.indexOf(":");
    if (colon <= 0) return undefined;
    const name = line.slice(0, colon).toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (name === "content-length") {
      if (!/^\d{1,15}$/.test(value)) return undefined;
      const v = Number(value);
      if (length !== undefined && length !== v) return undefined;
      length = v;
    } else if (name === "transfer-encoding") {
      te = te === undefined ? value : `${te}, ${value}`;
    } else if (name === "upgrade") upgrade = true;
  }
  let chunked = false;
  if (te !== undefined) {
    if (length !== undefined) return undefined;
    const codings = te.toLowerCase().split(",").map((c) => c.trim());
    if (codings[codings.length - 1] !== "chunked") return undefined;
    chunked = true;
  }
  return { length: length ?? 0, chunked, upgrade };
}
