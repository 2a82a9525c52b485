/**
 * The protocol-buffers wire format, by hand, for the few messages the gRPC providers send and
 * read (protobuf.dev/programming-guides/encoding): varints (wire type 0), doubles (1), floats (5)
 * and length-delimited strings, bytes and sub-messages (2). Field numbers live with each provider's
 * wire module, next to the `.proto` file they come from. Proto3 rules: a field at its default
 * (0, false, "") is not written; unknown fields are skipped when read.
 *
 * @example
 * ```ts
 * import { ProtoWriter, readMessage } from "./protobuf.ts";
 * const bytes = new ProtoWriter().string(3, "en-US").int(2, 16000).finish();
 * readMessage(bytes).string(3); // "en-US"
 * ```
 * @module
 */

import { FlowcatError } from "../core/errors.ts";

const utf8 = new TextEncoder();
const utf8Decoder = new TextDecoder();

/** Builds one message, field by field, in the order written. */
export class ProtoWriter {
  readonly #parts: number[] = [];
  readonly #chunks: Uint8Array[] = [];

  #varint(v: number): void {
    // Negative int32 values are written as 10-byte two's complement, as protobuf does.
    let n = BigInt.asUintN(64, BigInt(Math.trunc(v)));
    while (n > 0x7fn) {
      this.#parts.push(Number(n & 0x7fn) | 0x80);
      n >>= 7n;
    }
    this.#parts.push(Number(n));
  }

  #flush(): void {
    if (this.#parts.length === 0) return;
    this.#chunks.push(Uint8Array.from(this.#parts));
    this.#parts.length = 0;
  }

  #key(no: number, wire: number): void {
    this.#varint(no * 8 + wire);
  }

  /** An int32/int64/enum field (skipped at 0). */
  int(no: number, value: number | undefined): this {
    if (!value) return this;
    this.#key(no, 0);
    this.#varint(value);
    return this;
  }

  /** A bool field (skipped when false). */
  bool(no: number, value: boolean | undefined): this {
    return value ? this.int(no, 1) : this;
  }

  /** A float field (skipped at 0). */
  float(no: number, value: number | undefined): this {
    if (!value) return this;
    this.#key(no, 5);
    const b = new Uint8Array(4);
    new DataView(b.buffer).setFloat32(0, value, true);
    this.#parts.push(...b);
    return this;
  }

  /** A double field (skipped at 0). */
  double(no: number, value: number | undefined): this {
    if (!value) return this;
    this.#key(no, 1);
    const b = new Uint8Array(8);
    new DataView(b.buffer).setFloat64(0, value, true);
    this.#parts.push(...b);
    return this;
  }

  /** A string field (skipped when empty). */
  string(no: number, value: string | undefined): this {
    return value ? this.bytes(no, utf8.encode(value)) : this;
  }

  /** A bytes field (written even when empty only if `always`). */
  bytes(no: number, value: Uint8Array | undefined, always = false): this {
    if (value === undefined || (value.length === 0 && !always)) return this;
    this.#key(no, 2);
    this.#varint(value.length);
    this.#flush();
    this.#chunks.push(value);
    return this;
  }

  /** A sub-message field (written even when empty: presence matters for messages). */
  message(no: number, value: ProtoWriter | undefined): this {
    return value === undefined ? this : this.bytes(no, value.finish(), true);
  }

  /** A `map<string, string>` field: one entry message (key 1, value 2) per pair. */
  map(no: number, value: Record<string, string> | undefined): this {
    for (const [k, v] of Object.entries(value ?? {})) {
      this.message(no, new ProtoWriter().string(1, k).string(2, v));
    }
    return this;
  }

  /** The encoded message. */
  finish(): Uint8Array {
    this.#flush();
    if (this.#chunks.length === 1) return this.#chunks[0];
    const out = new Uint8Array(this.#chunks.reduce((n, c) => n + c.length, 0));
    let at = 0;
    for (const c of this.#chunks) {
      out.set(c, at);
      at += c.length;
    }
    return out;
  }
}

/** One decoded field: a varint, a 32/64-bit value, or length-delimited bytes. */
type RawField = { wire: 0; value: bigint } | { wire: 1 | 5; value: DataView } | {
  wire: 2;
  value: Uint8Array;
};

/** A decoded message: look fields up by number, typed by the caller. */
export interface ProtoMessage {
  /** The last varint of field `no` as a number (0 when absent). */
  int(no: number): number;
  /** The last bool of field `no` (false when absent). */
  bool(no: number): boolean;
  /** The last float of field `no` (0 when absent). */
  float(no: number): number;
  /** The last string of field `no` ("" when absent). */
  string(no: number): string;
  /** The last bytes of field `no` (empty when absent). */
  bytes(no: number): Uint8Array;
  /** The last sub-message of field `no`, or undefined when absent. */
  message(no: number): ProtoMessage | undefined;
  /** Every occurrence of repeated sub-message field `no`, in order. */
  messages(no: number): ProtoMessage[];
  /** True when field `no` is present at least once. */
  has(no: number): boolean;
}

/** Decode `buf` as one message; a malformed one throws a `protocol` FlowcatError. */
export function readMessage(buf: Uint8Array): ProtoMessage {
  const fields = new Map<number, RawField[]>();
  let i = 0;
  const varint = (): bigint => {
    let v = 0n;
    let shift = 0n;
    for (;;) {
      const b = buf[i++];
      if (b === undefined) throw malformed("truncated varint");
      v |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return v;
      shift += 7n;
      if (shift > 63n) throw malformed("varint too long");
    }
  };
  const take = (n: number): Uint8Array => {
    if (i + n > buf.length) throw malformed("truncated field");
    const out = buf.subarray(i, i + n);
    i += n;
    return out;
  };
  while (i < buf.length) {
    const key = Number(varint());
    const no = key >>> 3;
    const wire = key & 7;
    let f: RawField;
    if (wire === 0) f = { wire, value: varint() };
    else if (wire === 2) f = { wire, value: take(Number(varint())) };
    else if (wire === 1 || wire === 5) {
      const b = take(wire === 1 ? 8 : 4);
      f = { wire, value: new DataView(b.buffer, b.byteOffset, b.length) };
    } else throw malformed(`wire type ${wire}`);
    const list = fields.get(no);
    if (list) list.push(f);
    else fields.set(no, [f]);
  }
  const last = (no: number, wire: number): RawField | undefined =>
    fields.get(no)?.findLast((f) => f.wire === wire);
  return {
    int(no) {
      const f = last(no, 0);
      return f ? Number(BigInt.asIntN(64, f.value as bigint)) : 0;
    },
    bool(no) {
      const f = last(no, 0);
      return f !== undefined && f.value !== 0n;
    },
    float(no) {
      const f = last(no, 5);
      return f ? (f.value as DataView).getFloat32(0, true) : 0;
    },
    string(no) {
      const f = last(no, 2);
      return f ? utf8Decoder.decode(f.value as Uint8Array) : "";
    },
    bytes(no) {
      const f = last(no, 2);
      return f ? f.value as Uint8Array : new Uint8Array(0);
    },
    message(no) {
      const f = last(no, 2);
      return f ? readMessage(f.value as Uint8Array) : undefined;
    },
    messages(no) {
      return (fields.get(no) ?? []).filter((f) => f.wire === 2).map((f) =>
        readMessage(f.value as Uint8Array)
      );
    },
    has(no) {
      return fields.has(no);
    },
  };
}

function malformed(what: string): FlowcatError {
  return new FlowcatError("protocol", `malformed protobuf message (${what})`);
}
