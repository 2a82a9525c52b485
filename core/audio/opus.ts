/**
 * Opus (RFC 6716) at 48 kHz mono for the WebRTC leg: encode 20 ms frames, decode packets, and
 * conceal lost ones, through libopus 1.4 compiled to WebAssembly by the npm package
 * `opusscript` (MIT wrapper, BSD-3-Clause libopus).
 *
 * The package's own `index.js` wrapper is not used: it addresses its scratch buffers at twice
 * the pointers it allocated (a `HEAPU16.subarray(ptr)` used as a byte address), so it reads and
 * writes wasm memory it does not own, and PLC through it would conceal 120 ms at once (it asks
 * libopus for up to 5760 samples). This file drives the package's emscripten class
 * `OpusScriptHandler` (one libopus encoder and decoder) itself, through buffers it allocated: one
 * set per process, shared by every codec, since all calls are synchronous. That class takes and
 * gives 16-bit samples as one byte per 16-bit word, hence the byte splitting below. Its wasm file is copied into ./opus_wasm.ts (`deno task wasm`), so loading
 * reads no file and needs no permission; only the package's JavaScript glue is imported.
 *
 * One {@link OpusCodec} is one stream each way: the encoder is VoIP-tuned (32 kbit/s, in-band
 * FEC for an expected 10 % loss, complexity 5), the decoder decodes any Opus packet (mono or
 * stereo, any bandwidth) to 48 kHz mono. A lost packet is concealed by libopus' PLC: the
 * decoder is handed the last packet's table-of-contents byte alone, which (RFC 6716 section
 * 3.2.1, a DTX frame) makes it synthesise exactly one such packet's duration. Decoding the next
 * packet's in-band FEC instead is not possible: the package's class always decodes with FEC off.
 *
 * @example
 * ```ts
 * import { OpusCodec, OPUS_FRAME } from "@flowcat/flowcat/audio/opus";
 * const codec = await OpusCodec.create();
 * const packet = codec.encode(new Int16Array(OPUS_FRAME)); // 20 ms at 48 kHz
 * const pcm = codec.decode(packet); // Int16Array(960)
 * const plc = codec.conceal(); // for a packet that never came
 * codec.close();
 * ```
 * @module
 */

import { FlowcatError } from "../errors.ts";

/** The only rate this codec runs at (Opus' RTP clock rate, RFC 7587). */
export const OPUS_RATE = 48000;
/** Samples in a 20 ms frame at 48 kHz. */
export const OPUS_FRAME = 960;
/** Longest Opus packet in bytes (three frames of 1275, as libopus allows). */
export const OPUS_MAX_PACKET = 3828;
/** Most samples one packet decodes to (120 ms at 48 kHz). */
const MAX_DECODE_SAMPLES = 5760;
/** Frame sizes Opus can encode at 48 kHz (2.5 to 60 ms). */
const ENCODE_FRAMES: readonly number[] = [120, 240, 480, 960, 1920, 2880];
const MAX_ENCODE_SAMPLES = 2880;

/** libopus constants (opus_defines.h). */
const OPUS_APPLICATION_VOIP = 2048;
const OPUS_SET_BITRATE = 4002;
const OPUS_SET_COMPLEXITY = 4010;
const OPUS_SET_INBAND_FEC = 4012;
const OPUS_SET_PACKET_LOSS_PERC = 4014;
const OPUS_SET_SIGNAL = 4024;
const OPUS_SIGNAL_VOICE = 3001;

/** One libopus encoder + decoder pair (opusscript's emscripten class). */
export interface OpusHandlerLike {
  /**
   * Encode `frameSize` samples. The input at `pcmPtr` holds each sample as two 16-bit words,
   * low byte then high byte; `bytes` is the sample count times two. Returns the packet length
   * written at `outPtr`, or a negative libopus error.
   */
  _encode(pcmPtr: number, bytes: number, outPtr: number, frameSize: number): number;
  /**
   * Decode `bytes` bytes at `dataPtr`; writes each sample as two 16-bit words (low byte, high
   * byte) at `pcmPtr`. Returns the samples per channel, or a negative libopus error.
   */
  _decode(dataPtr: number, bytes: number, pcmPtr: number): number;
  /** `opus_encoder_ctl(enc, ctl, arg)`. */
  _encoder_ctl(ctl: number, arg: number): number;
  /** `opus_decoder_ctl(dec, ctl, arg)`. */
  _decoder_ctl(ctl: number, arg: number): number;
  /** Run the destructor (frees the encoder and decoder) and release the handle. */
  delete(): void;
}

/** The part of opusscript's emscripten module (build/opusscript_native_wasm.js) used here. */
export interface OpusModuleLike {
  /** The wasm heap as int16; re-read after allocations (it is replaced when memory grows). */
  readonly HEAP16: Int16Array;
  /** The wasm heap as bytes; re-read after allocations. */
  readonly HEAPU8: Uint8Array;
  /** Allocate `bytes` on the wasm heap; returns the pointer. */
  _malloc(bytes: number): number;
  /** Free memory from `_malloc`. */
  _free(ptr: number): void;
  /** Make an encoder and decoder at `rate` with `channels`, for `application`. */
  OpusScriptHandler: new (rate: number, channels: number, application: number) => OpusHandlerLike;
}

/**
 * Decompress and return the Opus WebAssembly carried by ./opus_wasm.ts (imported here, on first
 * use, so that a program that imports this module but never makes a codec does not parse it).
 */
export async function opusWasmBytes(): Promise<Uint8Array<ArrayBuffer>> {
  const { OPUS_WASM_GZIP_BASE64 } = await import("./opus_wasm.ts");
  const gz = Uint8Array.fromBase64(OPUS_WASM_GZIP_BASE64);
  const stream = new Blob([gz]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

let shared: Promise<OpusModuleLike> | undefined;

/** Load the Opus wasm once per process (later calls share it). */
export function loadOpus(): Promise<OpusModuleLike> {
  shared ??= (async () => {
    try {
      // A literal specifier, so that deno sees (and locks) the dependency.
      const glue = await import("npm:opusscript@0.1.1/build/opusscript_native_wasm.js");
      const factory = glue.default as (
        init: { wasmBinary: Uint8Array },
      ) => OpusModuleLike & { ready: Promise<unknown> };
      const module = factory({ wasmBinary: await opusWasmBytes() });
      await module.ready;
      return module;
    } catch (err) {
      shared = undefined;
      throw new FlowcatError("config", `opus: cannot load opusscript: ${String(err)}`, {
        cause: err,
      });
    }
  })();
  return shared;
}

/** Buffers every codec of one module shares (calls never interleave: all are synchronous). */
interface Scratch {
  /** Encoder input: 2 words per sample, and the handler reads twice that far. */
  pcmIn: number;
  /** Encoder output packet. */
  packetOut: number;
  /** Decoder input packet. */
  packetIn: number;
  /** Decoder output: 2 words per sample. */
  pcmOut: number;
}

const scratches = new WeakMap<OpusModuleLike, Scratch>();

function scratchOf(m: OpusModuleLike): Scratch {
  let s = scratches.get(m);
  if (s === undefined) {
    s = {
      pcmIn: m._malloc(MAX_ENCODE_SAMPLES * 8),
      packetOut: m._malloc(OPUS_MAX_PACKET),
      packetIn: m._malloc(OPUS_MAX_PACKET),
      pcmOut: m._malloc(MAX_DECODE_SAMPLES * 4),
    };
    if (!s.pcmIn || !s.packetOut || !s.packetIn || !s.pcmOut) {
      throw new FlowcatError("other", "opus: out of wasm memory");
    }
    scratches.set(m, s);
  }
  return s;
}

/** Options of an {@link OpusCodec}. */
export interface OpusCodecOptions {
  /** Encoder bitrate in bit/s; default 32000 (wideband speech with room for FEC). */
  bitrate?: number;
  /** In-band forward error correction in what we send; default true. */
  fec?: boolean;
  /** Packet loss the encoder plans its FEC for, percent; default 10. */
  expectedLossPercent?: number;
  /** Encoder complexity 0 to 10; default 5 (about half the CPU of 10, little audible loss). */
  complexity?: number;
  /** A loaded module to use instead of the default (see {@link loadOpus}). */
  module?: OpusModuleLike;
}

/** Samples per frame of an Opus TOC byte's configuration at 48 kHz (RFC 6716 section 3.1). */
function frameSamplesOf(toc: number): number {
  const config = toc >> 3;
  if (config < 12) return [480, 960, 1920, 2880][config & 3]; // SILK: 10, 20, 40, 60 ms
  if (config < 16) return (config & 1) === 0 ? 480 : 960; // hybrid: 10, 20 ms
  return [120, 240, 480, 960][config & 3]; // CELT: 2.5, 5, 10, 20 ms
}

/** Frames in a packet (RFC 6716 section 3.2); 0 when malformed. */
function framesOf(packet: Uint8Array): number {
  const code = packet[0] & 3;
  if (code === 0) return 1;
  if (code !== 3) return 2;
  return packet.length > 1 ? packet[1] & 0x3f : 0;
}

/**
 * One Opus stream each way at 48 kHz mono: {@link encode} 20 ms frames, {@link decode} packets,
 * {@link conceal} lost packets. Holds wasm memory (about 85 KB): call {@link close} when done.
 */
export class OpusCodec {
  readonly #m: OpusModuleLike;
  readonly #s: Scratch;
  #h: OpusHandlerLike | undefined;
  /** The concealment packet (the last packet's TOC byte, code 0) and how often to decode it. */
  readonly #plc = new Uint8Array(1);
  #plcRepeat = 0;
  #plcSamples = OPUS_FRAME;

  /** Make a codec on a loaded module (see {@link OpusCodec.create}). */
  constructor(module: OpusModuleLike, opts: OpusCodecOptions = {}) {
    this.#m = module;
    this.#s = scratchOf(module);
    const h = new module.OpusScriptHandler(OPUS_RATE, 1, OPUS_APPLICATION_VOIP);
    this.#h = h;
    const ctl = (id: number, value: number, what: string) => {
      const rc = h._encoder_ctl(id, value);
      if (rc < 0) {
        this.close();
        throw new FlowcatError("config", `opus: ${what} ${value} refused (libopus error ${rc})`);
      }
    };
    ctl(OPUS_SET_BITRATE, opts.bitrate ?? 32000, "bitrate");
    ctl(OPUS_SET_COMPLEXITY, opts.complexity ?? 5, "complexity");
    ctl(OPUS_SET_INBAND_FEC, opts.fec === false ? 0 : 1, "inband FEC");
    ctl(OPUS_SET_PACKET_LOSS_PERC, opts.expectedLossPercent ?? 10, "expected loss");
    ctl(OPUS_SET_SIGNAL, OPUS_SIGNAL_VOICE, "signal");
  }

  /** Load the module (default build unless one is given) and make a codec. */
  static async create(opts: OpusCodecOptions = {}): Promise<OpusCodec> {
    return new OpusCodec(opts.module ?? await loadOpus(), opts);
  }

  /** True once {@link close} has run. */
  get closed(): boolean {
    return this.#h === undefined;
  }

  #handler(): OpusHandlerLike {
    if (this.#h === undefined) throw new FlowcatError("closed", "opus: codec closed");
    return this.#h;
  }

  /**
   * Encode one frame of 48 kHz mono PCM (960 samples for 20 ms; 120, 240, 480, 1920 and 2880
   * work too) into an Opus packet (a new array).
   */
  encode(pcm: Int16Array): Uint8Array {
    const h = this.#handler();
    const n = pcm.length;
    if (!ENCODE_FRAMES.includes(n)) {
      throw new FlowcatError("other", `opus: cannot encode a frame of ${n} samples at 48 kHz`);
    }
    const m = this.#m;
    const heap = m.HEAP16;
    let w = this.#s.pcmIn >> 1;
    for (let i = 0; i < n; i++, w += 2) {
      const s = pcm[i];
      heap[w] = s & 0xff;
      heap[w + 1] = (s >> 8) & 0xff;
    }
    const len = h._encode(this.#s.pcmIn, n * 2, this.#s.packetOut, n);
    if (len < 0) throw new FlowcatError("other", `opus: encode failed (libopus error ${len})`);
    return m.HEAPU8.slice(this.#s.packetOut, this.#s.packetOut + len);
  }

  /**
   * Decode one packet to 48 kHz mono (a stereo stream is downmixed; 960 samples for a 20 ms
   * packet). An empty payload is concealed like a lost packet. Throws a FlowcatError
   * (`protocol`) for a malformed packet: conceal it instead.
   */
  decode(payload: Uint8Array): Int16Array {
    if (payload.length === 0) return this.conceal();
    if (payload.length > OPUS_MAX_PACKET) {
      throw new FlowcatError("protocol", `opus: packet of ${payload.length} bytes is too long`);
    }
    this.#handler();
    const n = this.#run(payload);
    const frames = framesOf(payload);
    if (frames > 0) {
      this.#plc[0] = payload[0] & 0xfc;
      this.#plcRepeat = frames;
      this.#plcSamples = frames * frameSamplesOf(payload[0]);
    }
    return this.#read(n);
  }

  /**
   * Samples for a packet that never came: libopus' packet-loss concealment for as long as the
   * last decoded packet lasted (960 samples for 20 ms packets; silence before any packet).
   * Repeated calls fade towards silence, as libopus does.
   */
  conceal(): Int16Array {
    this.#handler();
    if (this.#plcRepeat === 0) return new Int16Array(this.#plcSamples);
    const out = new Int16Array(this.#plcSamples);
    let o = 0;
    for (let i = 0; i < this.#plcRepeat && o < out.length; i++) {
      const n = this.#run(this.#plc);
      const part = this.#read(Math.min(n, out.length - o));
      out.set(part, o);
      o += part.length;
    }
    return out;
  }

  /** Decode `packet` into the shared output buffer; returns the samples written. */
  #run(packet: Uint8Array): number {
    const m = this.#m;
    m.HEAPU8.set(packet, this.#s.packetIn);
    const n = this.#h!._decode(this.#s.packetIn, packet.length, this.#s.pcmOut);
    if (n < 0) throw new FlowcatError("protocol", `opus: bad packet (libopus error ${n})`);
    return n;
  }

  /** The first `n` decoded samples, joined from the handler's byte-per-word layout. */
  #read(n: number): Int16Array {
    const heap = this.#m.HEAP16;
    const out = new Int16Array(n);
    let r = this.#s.pcmOut >> 1;
    for (let i = 0; i < n; i++, r += 2) {
      out[i] = ((heap[r + 1] << 8) | (heap[r] & 0xff)) << 16 >> 16;
    }
    return out;
  }

  /** Free the encoder and decoder; the codec cannot be used afterwards. Idempotent. */
  close(): void {
    const h = this.#h;
    this.#h = undefined;
    h?.delete();
  }
}
