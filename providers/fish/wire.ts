/**
 * The MessagePack subset Fish Audio's live socket uses (msgpack.org spec): nil, booleans,
 * integers, floats, strings, binary, arrays and maps with string keys. Extension types are
 * refused. Written here rather than taken from a package so an air-gapped install carries no
 * extra dependency for a few dozen lines.
 * @module
 */

/** A value this codec carries. */
export type MsgValue =
  | null
  | boolean
  | number
  | string
  | Uint8Array
  | MsgValue[]
  | { [key: string]: MsgValue | undefined };

/** `value` as MessagePack bytes; `undefined` map entries are left out. */
export function packMsg(value: MsgValue): Uint8Array {
  const out: number[] = [];
  write(out, value);
  return Uint8Array.from(out);
}

function head(out: number[], small: number, smallMax: number, codes: number[], n: number): void {
  if (n <= smallMax && small >= 0) out.push(small + n);
  else if (n < 0x100 && codes[0] !== 0) out.push(codes[0], n);
  else if (n < 0x10000) out.push(codes[1], n >> 8, n & 0xff);
  else out.push(codes[2], n >>> 24, (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff);
}

function write(out: number[], v: MsgValue): void {
  if (v === null) out.push(0xc0);
  else if (typeof v === "boolean") out.push(v ? 0xc3 : 0xc2);
  else if (typeof v === "number") writeNumber(out, v);
  else if (typeof v === "string") {
    const bytes = new TextEncoder().encode(v);
    head(out, 0xa0, 31, [0xd9, 0xda, 0xdb], bytes.length);
    for (const b of bytes) out.push(b);
  } else if (v instanceof Uint8Array) {
    head(out, -1, -1, [0xc4, 0xc5, 0xc6], v.length);
    for (const b of v) out.push(b);
  } else if (Array.isArray(v)) {
    head(out, 0x90, 15, [0, 0xdc, 0xdd], v.length);
    for (const item of v) write(out, item);
  } else {
    const entries = Object.entries(v).filter(([, x]) => x !== undefined);
    head(out, 0x80, 15, [0, 0xde, 0xdf], entries.length);
    for (const [k, x] of entries) {
      write(out, k);
      write(out, x as MsgValue);
    }
  }
}

function writeNumber(out: number[], n: number): void {
  if (Number.isInteger(n) && n >= 0 && n < 0x80) out.push(n);
  else if (Number.isInteger(n) && n < 0 && n >= -32) out.push(n & 0xff);
  else if (Number.isInteger(n) && n >= 0 && n <= 0xffffffff) {
    if (n < 0x100) out.push(0xcc, n);
    else if (n < 0x10000) out.push(0xcd, n >> 8, n & 0xff);
    else out.push(0xce, n >>> 24, (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff);
  } else if (Number.isInteger(n) && n < 0 && n >= -0x80000000) {
    const b = new Uint8Array(4);
    new DataView(b.buffer).setInt32(0, n);
    out.push(0xd2, ...b);
  } else {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setFloat64(0, n);
    out.push(0xcb, ...b);
  }
}

/** The value in `bytes`; malformed or unsupported input throws a `RangeError`. */
export function unpackMsg(bytes: Uint8Array): MsgValue {
  const r = { pos: 0, view: new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), bytes };
  const v = read(r);
  if (r.pos !== bytes.length) throw new RangeError("msgpack: trailing bytes");
  return v;
}

type Reader = { pos: number; view: DataView; bytes: Uint8Array };

function take(r: Reader, n: number): number {
  const at = r.pos;
  if (at + n > r.bytes.length) throw new RangeError("msgpack: truncated");
  r.pos += n;
  return at;
}

function read(r: Reader): MsgValue {
  const b = r.view.getUint8(take(r, 1));
  if (b < 0x80) return b;
  if (b >= 0xe0) return b - 0x100;
  if (b >= 0xa0 && b <= 0xbf) return str(r, b - 0xa0);
  if (b >= 0x90 && b <= 0x9f) return arr(r, b - 0x90);
  if (b >= 0x80 && b <= 0x8f) return map(r, b - 0x80);
  const v = r.view;
  switch (b) {
    case 0xc0:
      return null;
    case 0xc2:
      return false;
    case 0xc3:
      return true;
    case 0xc4:
      return bin(r, v.getUint8(take(r, 1)));
    case 0xc5:
      return bin(r, v.getUint16(take(r, 2)));
    case 0xc6:
      return bin(r, v.getUint32(take(r, 4)));
    case 0xca:
      return v.getFloat32(take(r, 4));
    case 0xcb:
      return v.getFloat64(take(r, 8));
    case 0xcc:
      return v.getUint8(take(r, 1));
    case 0xcd:
      return v.getUint16(take(r, 2));
    case 0xce:
      return v.getUint32(take(r, 4));
    case 0xcf:
      return Number(v.getBigUint64(take(r, 8)));
    case 0xd0:
      return v.getInt8(take(r, 1));
    case 0xd1:
      return v.getInt16(take(r, 2));
    case 0xd2:
      return v.getInt32(take(r, 4));
    case 0xd3:
      return Number(v.getBigInt64(take(r, 8)));
    case 0xd9:
      return str(r, v.getUint8(take(r, 1)));
    case 0xda:
      return str(r, v.getUint16(take(r, 2)));
    case 0xdb:
      return str(r, v.getUint32(take(r, 4)));
    case 0xdc:
      return arr(r, v.getUint16(take(r, 2)));
    case 0xdd:
      return arr(r, v.getUint32(take(r, 4)));
    case 0xde:
      return map(r, v.getUint16(take(r, 2)));
    case 0xdf:
      return map(r, v.getUint32(take(r, 4)));
  }
  throw new RangeError(`msgpack: unsupported type 0x${b.toString(16)}`);
}

function str(r: Reader, n: number): string {
  const at = take(r, n);
  return new TextDecoder().decode(r.bytes.subarray(at, at + n));
}

function bin(r: Reader, n: number): Uint8Array {
  const at = take(r, n);
  return r.bytes.slice(at, at + n);
}

function arr(r: Reader, n: number): MsgValue[] {
  return Array.from({ length: n }, () => read(r));
}

function map(r: Reader, n: number): { [key: string]: MsgValue } {
  const out: { [key: string]: MsgValue } = {};
  for (let i = 0; i < n; i++) {
    const k = read(r);
    out[typeof k === "string" ? k : String(k)] = read(r);
  }
  return out;
}
