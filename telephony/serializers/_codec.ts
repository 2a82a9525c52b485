/**
 * Carrier audio payloads: base64 or binary frames of mu-law, A-law or 16-bit little-endian PCM,
 * to and from `Int16Array`, with one reusable scratch buffer per call.
 *
 * @example
 * ```ts
 * import { PayloadCodec } from "./_codec.ts";
 * const codec = new PayloadCodec("pcmu", 8000);
 * const pcm = codec.decodeBase64("/////w=="); // Int16Array [0, 0, 0, 0]
 * codec.encodeBase64(pcm!); // "/////w=="
 * ```
 * @module
 */

import {
  alawDecode as aLawDecode,
  alawEncode as aLawEncode,
  ulawDecode as muLawDecode,
  ulawEncode as muLawEncode,
} from "../../core/audio/g711.ts";

/** Wire encoding of carrier audio. `l16` is signed 16-bit little-endian PCM. */
export type Encoding = "pcmu" | "pcma" | "l16";

const ENCODING_NAMES: Record<string, Encoding> = {
  "audio/x-mulaw": "pcmu",
  "audio/mulaw": "pcmu",
  "audio/pcmu": "pcmu",
  "pcmu": "pcmu",
  "mulaw": "pcmu",
  "ulaw": "pcmu",
  "audio/x-alaw": "pcma",
  "audio/pcma": "pcma",
  "pcma": "pcma",
  "alaw": "pcma",
  "audio/x-l16": "l16",
  "audio/l16": "l16",
  "l16": "l16",
  "audio/x-raw": "l16",
  "pcm": "l16",
  "audio/pcm": "l16",
};

/**
 * The {@link Encoding} a carrier names (`"audio/x-mulaw"`, `"PCMU"`, `"audio/l16;rate=16000"`),
 * ignoring case and `;` parameters; `undefined` for codecs we do not decode (G722, OPUS, ...).
 */
export function encodingFromName(name: string): Encoding | undefined {
  const base = name.split(";", 1)[0].trim().toLowerCase();
  return ENCODING_NAMES[base];
}

/** The `rate=` parameter of a content type such as `audio/l16;rate=16000`. */
export function rateFromContentType(contentType: string): number | undefined {
  const m = /;\s*rate=(\d+)/i.exec(contentType);
  return m ? Number(m[1]) : undefined;
}

// Typed arrays use host byte order; the wire is little-endian. Every supported Deno target is
// little-endian, but a big-endian host still gets correct audio through a swap.
const HOST_LE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

function swap16(pcm: Int16Array): Int16Array {
  for (let i = 0; i < pcm.length; i++) {
    const v = pcm[i];
    pcm[i] = ((v & 0xff) << 8) | ((v >> 8) & 0xff);
  }
  return pcm;
}

/** Little-endian bytes of `pcm`: a view when the host is little-endian, else a swapped copy. */
function l16Bytes(pcm: Int16Array): Uint8Array {
  const view = HOST_LE ? pcm : swap16(pcm.slice());
  return new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
}

/** PCM over little-endian bytes that the caller hands over (aliased when aligned). */
function l16FromOwnedBytes(bytes: Uint8Array): Int16Array | undefined {
  if (bytes.length % 2 !== 0) return undefined;
  const aligned = bytes.byteOffset % 2 === 0 ? bytes : bytes.slice();
  const pcm = new Int16Array(aligned.buffer, aligned.byteOffset, aligned.length / 2);
  return HOST_LE ? pcm : swap16(pcm);
}

/**
 * G.711 bytes between base64 and PCM, shared by every codec of the isolate: each use is
 * synchronous and done before it returns, and an idle call then holds no buffer of its own.
 */
let scratch = new Uint8Array(320);
/** The last view of `scratch` handed out: a frame of the same length reuses it. */
let scratchView = scratch.subarray(0, 160);

/** The first `n` bytes of the isolate's scratch, as a view reused while `n` stays the same. */
function scratchBytes(n: number): Uint8Array {
  if (scratchView.length !== n || scratchView.buffer !== scratch.buffer) {
    scratchView = scratch.subarray(0, n);
  }
  return scratchView;
}

/**
 * Lent PCM: G.711 decoded for a consumer that uses it before the next decode in the isolate
 * (see {@link PayloadCodec.decodeBase64}'s `lend`). One per isolate, like `scratch`.
 */
let lentPcm = new Int16Array(160);

/** The isolate's lent PCM, `n` samples long (the whole buffer when it is exactly that long). */
function lendPcm(n: number): Int16Array {
  if (lentPcm.length < n) lentPcm = new Int16Array(Math.max(n, lentPcm.length * 2));
  return n === lentPcm.length ? lentPcm : lentPcm.subarray(0, n);
}

/** Converts a carrier's audio payloads to and from PCM, reusing the isolate's scratch bytes. */
export class PayloadCodec {
  /** Wire encoding. */
  readonly encoding: Encoding;
  /** Samples per second on the wire. */
  readonly rate: number;

  /** A codec for `encoding` at `rate` Hz. */
  constructor(encoding: Encoding, rate: number) {
    this.encoding = encoding;
    this.rate = rate;
  }

  #ensure(n: number): Uint8Array {
    if (scratch.length < n) scratch = new Uint8Array(Math.max(n, scratch.length * 2));
    return scratch;
  }

  /**
   * Decode a base64 payload to PCM; `undefined` when it is not valid base64 audio. The PCM is
   * fresh, unless `lend` is set: then G.711 audio is decoded into the isolate's lent buffer, valid
   * only until the next lent decode anywhere in the isolate (the caller consumes it synchronously
   * or copies it). L16 is always fresh (it aliases the decoded bytes).
   */
  decodeBase64(b64: string, lend = false): Int16Array | undefined {
    try {
      if (this.encoding === "l16") return l16FromOwnedBytes(Uint8Array.fromBase64(b64));
      // G.711: decode the base64 into the scratch bytes, then table-decode into PCM.
      const scratch = this.#ensure(Math.ceil(b64.length / 4) * 3);
      const { read, written } = scratch.setFromBase64(b64);
      if (read !== b64.length) return undefined;
      return this.#g711Decode(scratchBytes(written), lend);
    } catch {
      return undefined;
    }
  }

  /**
   * Decode a binary audio frame. L16 PCM aliases `bytes` when it is 2-byte aligned (the frame is
   * the transport's to give away); `undefined` for an odd-length L16 frame. `lend` as for
   * {@link PayloadCodec.decodeBase64}.
   */
  decodeBytes(bytes: Uint8Array, lend = false): Int16Array | undefined {
    return this.encoding === "l16" ? l16FromOwnedBytes(bytes) : this.#g711Decode(bytes, lend);
  }

  /** Encode PCM at {@link PayloadCodec.rate} as a base64 payload. */
  encodeBase64(pcm: Int16Array): string {
    if (this.encoding === "l16") return l16Bytes(pcm).toBase64();
    this.#ensure(pcm.length);
    return this.#g711Encode(pcm, scratchBytes(pcm.length)).toBase64();
  }

  /** Encode PCM as a binary frame the socket may keep (L16 is a view over `pcm`, never reused). */
  encodeBytes(pcm: Int16Array): Uint8Array {
    return this.encoding === "l16" ? l16Bytes(pcm) : this.#g711Encode(pcm);
  }

  #g711Decode(bytes: Uint8Array, lend: boolean): Int16Array {
    const out = lend ? lendPcm(bytes.length) : undefined;
    return this.encoding === "pcmu" ? muLawDecode(bytes, out) : aLawDecode(bytes, out);
  }

  #g711Encode(pcm: Int16Array, out?: Uint8Array): Uint8Array {
    return this.encoding === "pcmu" ? muLawEncode(pcm, out) : aLawEncode(pcm, out);
  }
}
