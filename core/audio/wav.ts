/**
 * WAV (RIFF WAVE) writer and reader for 16-bit PCM.
 *
 * The writer emits the canonical 44-byte header. The reader walks the chunk list (so `LIST`,
 * `fact`, `cue ` and other chunks before or after `data` are skipped), accepts format 1 (PCM)
 * and WAVE_FORMAT_EXTENSIBLE with the PCM sub-format, and rejects anything else (float,
 * G.711, 8/24-bit, truncated or inconsistent files) with a {@link FlowcatError} of kind
 * `protocol`. A placeholder `data` size left by streaming writers (0xFFFFFFFF, or 2^31 or so
 * as espeak-ng writes) that runs past the end of the file means "to the end of the file".
 *
 * @example
 * ```ts
 * import { decodeWav, encodeWav } from "@flowcat/flowcat/audio";
 * const bytes = encodeWav(new Int16Array([0, 1, -1]), 16000);
 * const { pcm, sampleRate } = decodeWav(bytes); // Int16Array [0, 1, -1], 16000
 * ```
 * @module
 */

import { FlowcatError } from "../errors.ts";
import type { AudioFrame } from "../frames.ts";
import { bytesToInt16, int16ToBytes } from "./pcm.ts";

/** Size of the canonical WAV header written by {@link encodeWav}. */
export const WAV_HEADER_BYTES = 44;

const FORMAT_PCM = 1;
// Streaming writers leave a placeholder data size: 0xFFFFFFFF, or about 2^31 (espeak-ng writes
// 0x7FFFF000). A size that large running past the end of the file means "to the end".
const STREAMING_SIZE = 0x7fff0000;
const FORMAT_EXTENSIBLE = 0xfffe;
// Tail of KSDATAFORMAT_SUBTYPE_PCM after its first two bytes (01 00).
const PCM_GUID_TAIL = [0, 0, 0, 0, 0x10, 0, 0x80, 0, 0, 0xaa, 0, 0x38, 0x9b, 0x71];

function writeAscii(view: DataView, at: number, s: string): void {
  for (let i = 0; i < s.length; i++) view.setUint8(at + i, s.charCodeAt(i));
}

function readAscii(view: DataView, at: number): string {
  return String.fromCharCode(
    view.getUint8(at),
    view.getUint8(at + 1),
    view.getUint8(at + 2),
    view.getUint8(at + 3),
  );
}

/**
 * The 44-byte header of a 16-bit PCM WAV holding `dataBytes` bytes of samples. Useful for
 * streaming writers that patch sizes at the end.
 */
export function wavHeader(dataBytes: number, sampleRate: number, numChannels = 1): Uint8Array {
  if (!Number.isInteger(sampleRate) || sampleRate <= 0 || sampleRate > 0xffffffff) {
    throw new FlowcatError("config", `wav: bad sample rate ${sampleRate}`);
  }
  if (!Number.isInteger(numChannels) || numChannels < 1 || numChannels > 0xffff) {
    throw new FlowcatError("config", `wav: bad channel count ${numChannels}`);
  }
  if (dataBytes > 0xffffffff - 36) {
    throw new FlowcatError(
      "config",
      `wav: ${dataBytes} bytes of audio exceed the 4 GiB RIFF limit`,
    );
  }
  const out = new Uint8Array(WAV_HEADER_BYTES);
  const v = new DataView(out.buffer);
  writeAscii(v, 0, "RIFF");
  v.setUint32(4, 36 + dataBytes, true);
  writeAscii(v, 8, "WAVE");
  writeAscii(v, 12, "fmt ");
  v.setUint32(16, 16, true);
  v.setUint16(20, FORMAT_PCM, true);
  v.setUint16(22, numChannels, true);
  v.setUint32(24, sampleRate, true);
  v.setUint32(28, sampleRate * numChannels * 2, true);
  v.setUint16(32, numChannels * 2, true);
  v.setUint16(34, 16, true);
  writeAscii(v, 36, "data");
  v.setUint32(40, dataBytes, true);
  return out;
}

/**
 * Encode 16-bit PCM (interleaved when `numChannels` > 1) as a WAV file.
 *
 * @example
 * ```ts
 * import { encodeWav } from "@flowcat/flowcat/audio";
 * declare const pcm: Int16Array;
 * await Deno.writeFile("call.wav", encodeWav(pcm, 8000));
 * ```
 */
export function encodeWav(pcm: Int16Array, sampleRate: number, numChannels = 1): Uint8Array {
  const dataBytes = pcm.length * 2;
  const out = new Uint8Array(WAV_HEADER_BYTES + dataBytes);
  out.set(wavHeader(dataBytes, sampleRate, numChannels));
  int16ToBytes(pcm, out.subarray(WAV_HEADER_BYTES));
  return out;
}

/** Encode an {@link AudioFrame} as a WAV file. */
export function audioFrameToWav(audio: AudioFrame): Uint8Array {
  return encodeWav(audio.pcm, audio.sampleRate, audio.numChannels);
}

function bad(msg: string): FlowcatError {
  return new FlowcatError("protocol", `wav: ${msg}`);
}

interface Fmt {
  sampleRate: number;
  numChannels: number;
}

function parseFmt(v: DataView, at: number, size: number): Fmt {
  if (size < 16) throw bad(`fmt chunk of ${size} bytes (need 16)`);
  let format = v.getUint16(at, true);
  const numChannels = v.getUint16(at + 2, true);
  const sampleRate = v.getUint32(at + 4, true);
  const byteRate = v.getUint32(at + 8, true);
  const blockAlign = v.getUint16(at + 12, true);
  const bits = v.getUint16(at + 14, true);
  if (format === FORMAT_EXTENSIBLE) {
    if (size < 40) throw bad(`extensible fmt chunk of ${size} bytes (need 40)`);
    const sub = v.getUint16(at + 24, true);
    const tailOk = PCM_GUID_TAIL.every((b, i) => v.getUint8(at + 26 + i) === b);
    format = tailOk ? sub : -1;
  }
  if (format !== FORMAT_PCM) {
    throw bad(`unsupported format ${format === -1 ? "(unknown sub-format)" : format}; only PCM`);
  }
  if (bits !== 16) throw bad(`${bits}-bit samples unsupported; only 16-bit`);
  if (numChannels < 1) throw bad("zero channels");
  if (sampleRate < 1) throw bad("zero sample rate");
  if (blockAlign !== numChannels * 2) throw bad(`block align ${blockAlign} != ${numChannels * 2}`);
  if (byteRate !== sampleRate * blockAlign) throw bad(`byte rate ${byteRate} inconsistent`);
  return { sampleRate, numChannels };
}

/**
 * Decode a 16-bit PCM WAV file. Throws a {@link FlowcatError} (`protocol`) on anything else.
 * The samples are copied (aligned, independent of `bytes`).
 */
export function decodeWav(bytes: Uint8Array): AudioFrame {
  if (bytes.length < 12) throw bad(`${bytes.length} bytes is too short for a RIFF header`);
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (readAscii(v, 0) !== "RIFF") throw bad("missing RIFF signature");
  if (readAscii(v, 8) !== "WAVE") throw bad("RIFF form is not WAVE");
  // Trust the file length over a RIFF size that streaming writers may leave wrong.
  const end = bytes.length;
  let at = 12;
  let fmt: Fmt | undefined;
  while (at + 8 <= end) {
    const id = readAscii(v, at);
    let size = v.getUint32(at + 4, true);
    const body = at + 8;
    if (id === "data") {
      if (!fmt) throw bad("data chunk before fmt chunk");
      const frame = fmt.numChannels * 2;
      if (size >= STREAMING_SIZE && body + size > end) {
        size = end - body - ((end - body) % frame);
      }
      if (body + size > end) throw bad(`data chunk of ${size} bytes truncated at ${end - body}`);
      if (size % frame !== 0) throw bad(`data size ${size} is not a whole number of frames`);
      const pcm = bytesToInt16(bytes.subarray(body, body + size));
      return { pcm, sampleRate: fmt.sampleRate, numChannels: fmt.numChannels };
    }
    if (body + size > end) throw bad(`${JSON.stringify(id)} chunk of ${size} bytes truncated`);
    if (id === "fmt ") {
      if (fmt) throw bad("two fmt chunks");
      fmt = parseFmt(v, body, size);
    }
    at = body + size + (size & 1);
  }
  throw bad(fmt ? "no data chunk" : "no fmt chunk");
}
