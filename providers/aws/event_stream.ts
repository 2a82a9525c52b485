/**
 * The AWS event-stream encoding (`application/vnd.amazon.eventstream`), which Transcribe
 * streaming, Bedrock ConverseStream and Nova Sonic frame their events in
 * (smithy.io/2.0/aws/amazon-eventstream.html; aws-c-event-stream source/event_stream.c).
 *
 * A message is a 12-byte prelude (total length, headers length, CRC32 of those 8 bytes), the
 * headers, the payload and a CRC32 of everything before it, all big-endian. A header is a
 * 1-byte name length, the name, a 1-byte type and the value: 0 true, 1 false, 2 byte, 3 short,
 * 4 integer, 5 long, 6 bytes (2-byte length), 7 string (2-byte length), 8 timestamp (ms, int64),
 * 9 uuid (16 bytes).
 *
 * @example
 * ```ts
 * import { decodeMessage, encodeMessage, stringHeaders } from "./event_stream.ts";
 * const bytes = encodeMessage({
 *   headers: stringHeaders({ ":message-type": "event", ":event-type": "AudioEvent" }),
 *   payload: new Uint8Array(320),
 * });
 * decodeMessage(bytes).headers[":event-type"]; // { type: "string", value: "AudioEvent" }
 * ```
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import { networkCause } from "../http.ts";

/** One header value, typed as on the wire. */
export type EventHeaderValue =
  | { type: "boolean"; value: boolean }
  | { type: "byte" | "short" | "integer"; value: number }
  | { type: "long" | "timestamp"; value: bigint }
  | { type: "binary"; value: Uint8Array }
  | { type: "string"; value: string }
  | { type: "uuid"; value: Uint8Array };

/** Headers by name (names are unique within a message). */
export type EventHeaders = Record<string, EventHeaderValue>;

/** One event-stream message. */
export interface EventMessage {
  /** The message's headers. */
  headers: EventHeaders;
  /** The payload bytes. */
  payload: Uint8Array;
}

/** Largest message the decoder accepts (the format's limit: 16 MiB). */
export const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;
const PRELUDE = 12;
const TRAILER = 4;

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

/** CRC-32 (IEEE 802.3, as gzip and zlib compute it) of `bytes`, continuing from `crc`. */
export function crc32(bytes: Uint8Array, crc = 0): number {
  let c = ~crc >>> 0;
  for (let i = 0; i < bytes.length; i++) c = CRC_TABLE[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return ~c >>> 0;
}

/** String headers, the common case (`:message-type`, `:event-type`, `:content-type`). */
export function stringHeaders(values: Record<string, string>): EventHeaders {
  const out: EventHeaders = {};
  for (const [k, v] of Object.entries(values)) out[k] = { type: "string", value: v };
  return out;
}

/** The string value of header `name`, if it is a string header. */
export function headerString(msg: EventMessage, name: string): string | undefined {
  const h = msg.headers[name];
  return h?.type === "string" ? h.value : undefined;
}

const enc = new TextEncoder();
const dec = new TextDecoder("utf-8", { fatal: true });

/** The wire bytes of `msg`. */
export function encodeMessage(msg: EventMessage): Uint8Array {
  const headers = encodeHeaders(msg.headers);
  const total = PRELUDE + headers.length + msg.payload.length + TRAILER;
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  view.setUint32(0, total);
  view.setUint32(4, headers.length);
  view.setUint32(8, crc32(out.subarray(0, 8)));
  out.set(headers, PRELUDE);
  out.set(msg.payload, PRELUDE + headers.length);
  view.setUint32(total - TRAILER, crc32(out.subarray(0, total - TRAILER)));
  return out;
}

/** The wire bytes of `headers` alone (what an event signature hashes). */
export function encodeHeaders(headers: EventHeaders): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const [name, h] of Object.entries(headers)) {
    const nameBytes = enc.encode(name);
    if (nameBytes.length > 255) throw new FlowcatError("protocol", "event header name too long");
    let value: Uint8Array;
    let type: number;
    switch (h.type) {
      case "boolean":
        type = h.value ? 0 : 1;
        value = new Uint8Array(0);
        break;
      case "byte":
        type = 2;
        value = Uint8Array.of(h.value & 0xff);
        break;
      case "short":
        type = 3;
        value = fixed(2, (v) => v.setInt16(0, h.value));
        break;
      case "integer":
        type = 4;
        value = fixed(4, (v) => v.setInt32(0, h.value));
        break;
      case "long":
      case "timestamp":
        type = h.type === "long" ? 5 : 8;
        value = fixed(8, (v) => v.setBigInt64(0, h.value));
        break;
      case "binary":
      case "string": {
        type = h.type === "binary" ? 6 : 7;
        const bytes = h.type === "string" ? enc.encode(h.value) : h.value;
        if (bytes.length > 0x7fff) throw new FlowcatError("protocol", "event header too long");
        value = new Uint8Array(2 + bytes.length);
        new DataView(value.buffer).setUint16(0, bytes.length);
        value.set(bytes, 2);
        break;
      }
      case "uuid":
        if (h.value.length !== 16) throw new FlowcatError("protocol", "uuid header not 16 bytes");
        type = 9;
        value = h.value;
        break;
    }
    parts.push(Uint8Array.of(nameBytes.length), nameBytes, Uint8Array.of(type), value);
  }
  return concat(parts);
}

function fixed(n: number, write: (v: DataView) => void): Uint8Array {
  const out = new Uint8Array(n);
  write(new DataView(out.buffer));
  return out;
}

/** Decode one whole message; a bad length, CRC or header is a `protocol` FlowcatError. */
export function decodeMessage(bytes: Uint8Array): EventMessage {
  if (bytes.length < PRELUDE + TRAILER) bad("message shorter than its prelude");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const total = view.getUint32(0);
  const headersLength = view.getUint32(4);
  if (view.getUint32(8) !== crc32(bytes.subarray(0, 8))) bad("prelude CRC mismatch");
  if (total !== bytes.length) bad(`length ${total} but ${bytes.length} bytes`);
  if (PRELUDE + headersLength + TRAILER > total) bad("headers longer than the message");
  if (view.getUint32(total - TRAILER) !== crc32(bytes.subarray(0, total - TRAILER))) {
    bad("message CRC mismatch");
  }
  const headers = decodeHeaders(bytes.subarray(PRELUDE, PRELUDE + headersLength));
  const payload = bytes.slice(PRELUDE + headersLength, total - TRAILER);
  return { headers, payload };
}

function decodeHeaders(bytes: Uint8Array): EventHeaders {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: EventHeaders = {};
  let i = 0;
  const need = (n: number) => {
    if (i + n > bytes.length) bad("header runs past the headers section");
  };
  while (i < bytes.length) {
    need(1);
    const nameLength = bytes[i++];
    need(nameLength + 1);
    const name = text(bytes.subarray(i, i + nameLength));
    i += nameLength;
    const type = bytes[i++];
    let value: EventHeaderValue;
    switch (type) {
      case 0:
      case 1:
        value = { type: "boolean", value: type === 0 };
        break;
      case 2:
        need(1);
        value = { type: "byte", value: view.getInt8(i) };
        i += 1;
        break;
      case 3:
        need(2);
        value = { type: "short", value: view.getInt16(i) };
        i += 2;
        break;
      case 4:
        need(4);
        value = { type: "integer", value: view.getInt32(i) };
        i += 4;
        break;
      case 5:
      case 8:
        need(8);
        value = { type: type === 5 ? "long" : "timestamp", value: view.getBigInt64(i) };
        i += 8;
        break;
      case 6:
      case 7: {
        need(2);
        const n = view.getUint16(i);
        need(2 + n);
        const raw = bytes.slice(i + 2, i + 2 + n);
        value = type === 6 ? { type: "binary", value: raw } : { type: "string", value: text(raw) };
        i += 2 + n;
        break;
      }
      case 9:
        need(16);
        value = { type: "uuid", value: bytes.slice(i, i + 16) };
        i += 16;
        break;
      default:
        bad(`unknown header type ${type}`);
    }
    out[name] = value;
  }
  return out;
}

/**
 * Splits a byte stream into messages: feed chunks as they arrive, get the whole messages they
 * complete. A corrupt message throws (the stream cannot be resynchronized after one).
 */
export class EventStreamDecoder {
  #buf: Uint8Array = new Uint8Array(0);

  /** Add `chunk`; return the messages it completed, in order. */
  push(chunk: Uint8Array): EventMessage[] {
    this.#buf = this.#buf.length === 0 ? chunk.slice() : concat([this.#buf, chunk]);
    const out: EventMessage[] = [];
    while (this.#buf.length >= PRELUDE) {
      const total = new DataView(this.#buf.buffer, this.#buf.byteOffset).getUint32(0);
      if (total < PRELUDE + TRAILER || total > MAX_MESSAGE_BYTES) {
        bad(`message length ${total} out of range`);
      }
      if (this.#buf.length < total) break;
      out.push(decodeMessage(this.#buf.subarray(0, total)));
      this.#buf = this.#buf.subarray(total);
    }
    return out;
  }

  /** Bytes of an unfinished message still held. */
  get pending(): number {
    return this.#buf.length;
  }
}

/**
 * Messages of an HTTP response body. Stops (cancelling the body) when the consumer breaks out
 * or `signal` aborts; a body that breaks off (a dropped connection) or ends inside a message is
 * a `closed` FlowcatError whose message starts with `label` (the provider's name).
 */
export async function* readEventStream(
  body: ReadableStream<Uint8Array>,
  signal?: AbortSignal,
  label = "event stream",
): AsyncGenerator<EventMessage> {
  const reader = body.getReader();
  const onAbort = () => reader.cancel().catch(() => {});
  signal?.addEventListener("abort", onAbort, { once: true });
  const decoder = new EventStreamDecoder();
  try {
    while (true) {
      if (signal?.aborted) return;
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (err) {
        if (signal?.aborted) return;
        throw new FlowcatError("closed", `${label}: stream broke: ${networkCause(err)}`, {
          cause: err,
        });
      }
      const { value, done } = chunk;
      if (done) break;
      for (const m of decoder.push(value)) yield m;
    }
    if (signal?.aborted) return;
    if (decoder.pending > 0) {
      throw new FlowcatError("closed", `${label}: stream ended inside a message`);
    }
  } finally {
    signal?.removeEventListener("abort", onAbort);
    await reader.cancel().catch(() => {});
  }
}

function text(bytes: Uint8Array): string {
  try {
    return dec.decode(bytes);
  } catch {
    return bad("header is not UTF-8");
  }
}

function concat(parts: Uint8Array[]): Uint8Array {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

function bad(why: string): never {
  throw new FlowcatError("protocol", `event stream: ${why}`);
}
