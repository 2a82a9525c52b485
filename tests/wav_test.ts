import assert from "node:assert/strict";
import { decodeWav, encodeWav, WAV_HEADER_BYTES, wavHeader } from "../core/audio/wav.ts";
import { noise } from "../core/audio/pcm.ts";
import { FlowcatError } from "../core/errors.ts";

const enc = new TextEncoder();

/** Build a RIFF file from raw chunks, padding odd bodies as the format requires. */
function riff(chunks: [string, Uint8Array][], form = "WAVE"): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const [id, body] of chunks) {
    const head = new Uint8Array(8);
    head.set(enc.encode(id));
    new DataView(head.buffer).setUint32(4, body.length, true);
    parts.push(head, body);
    if (body.length & 1) parts.push(new Uint8Array(1));
  }
  const size = parts.reduce((n, p) => n + p.length, 4);
  const out = new Uint8Array(8 + size);
  out.set(enc.encode("RIFF"));
  new DataView(out.buffer).setUint32(4, size, true);
  out.set(enc.encode(form), 8);
  let o = 12;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

function fmtChunk(o: { format?: number; channels?: number; rate?: number; bits?: number } = {}) {
  const ch = o.channels ?? 1;
  const rate = o.rate ?? 8000;
  const bits = o.bits ?? 16;
  const b = new Uint8Array(16);
  const v = new DataView(b.buffer);
  v.setUint16(0, o.format ?? 1, true);
  v.setUint16(2, ch, true);
  v.setUint32(4, rate, true);
  v.setUint32(8, (rate * ch * bits) / 8, true);
  v.setUint16(12, (ch * bits) / 8, true);
  v.setUint16(14, bits, true);
  return b;
}

function extensibleFmt(subFormat: number): Uint8Array {
  const b = new Uint8Array(40);
  b.set(fmtChunk({ format: 0xfffe }));
  const v = new DataView(b.buffer);
  v.setUint16(16, 22, true); // cbSize
  v.setUint16(18, 16, true); // valid bits
  v.setUint32(20, 4, true); // channel mask: front centre
  v.setUint16(24, subFormat, true);
  b.set([0, 0, 0, 0, 0x10, 0, 0x80, 0, 0, 0xaa, 0, 0x38, 0x9b, 0x71], 26);
  return b;
}

function pcmBytes(pcm: Int16Array): Uint8Array {
  return new Uint8Array(pcm.buffer.slice(pcm.byteOffset, pcm.byteOffset + pcm.byteLength));
}

function rejects(bytes: Uint8Array, pattern: RegExp): void {
  assert.throws(
    () => decodeWav(bytes),
    (e: unknown) => e instanceof FlowcatError && e.kind === "protocol" && pattern.test(e.message),
  );
}

Deno.test("wav: header fields follow the canonical 44-byte layout", () => {
  const pcm = new Int16Array([1, -2, 3, 32767, -32768]);
  const bytes = encodeWav(pcm, 16000);
  assert.equal(bytes.length, WAV_HEADER_BYTES + 10);
  const v = new DataView(bytes.buffer);
  const ascii = (at: number) => new TextDecoder().decode(bytes.subarray(at, at + 4));
  assert.equal(ascii(0), "RIFF");
  assert.equal(v.getUint32(4, true), 36 + 10);
  assert.equal(ascii(8), "WAVE");
  assert.equal(ascii(12), "fmt ");
  assert.equal(v.getUint32(16, true), 16);
  assert.equal(v.getUint16(20, true), 1);
  assert.equal(v.getUint16(22, true), 1);
  assert.equal(v.getUint32(24, true), 16000);
  assert.equal(v.getUint32(28, true), 32000);
  assert.equal(v.getUint16(32, true), 2);
  assert.equal(v.getUint16(34, true), 16);
  assert.equal(ascii(36), "data");
  assert.equal(v.getUint32(40, true), 10);
  assert.equal(v.getInt16(44 + 6, true), 32767);
  assert.equal(v.getInt16(44 + 8, true), -32768);
  assert.deepEqual(wavHeader(10, 16000), bytes.subarray(0, 44));
});

Deno.test("wav: write then read round-trips samples, rate and channels", () => {
  const pcm = noise(8001, 30000, 3);
  const back = decodeWav(encodeWav(pcm, 24000));
  assert.deepEqual(back.pcm, pcm);
  assert.equal(back.sampleRate, 24000);
  assert.equal(back.numChannels, 1);
  const stereo = decodeWav(encodeWav(new Int16Array([1, 2, 3, 4]), 8000, 2));
  assert.equal(stereo.numChannels, 2);
  assert.deepEqual([...stereo.pcm], [1, 2, 3, 4]);
  assert.equal(decodeWav(encodeWav(new Int16Array(0), 8000)).pcm.length, 0);
});

Deno.test("wav: reader skips LIST, odd-sized and trailing chunks", () => {
  const pcm = new Int16Array([10, -20, 30]);
  const list = enc.encode("INFOISFT\x05\x00\x00\x00Lavf\x00");
  const bytes = riff([
    ["LIST", list],
    ["fmt ", fmtChunk({ rate: 16000 })],
    ["junk", new Uint8Array(3)], // odd size: one pad byte follows
    ["fact", new Uint8Array(4)],
    ["data", pcmBytes(pcm)],
    ["LIST", list],
  ]);
  const back = decodeWav(bytes);
  assert.deepEqual([...back.pcm], [10, -20, 30]);
  assert.equal(back.sampleRate, 16000);
});

Deno.test("wav: reader reads from an unaligned offset inside a larger buffer", () => {
  const file = encodeWav(new Int16Array([7, 8, 9]), 8000);
  const big = new Uint8Array(file.length + 1);
  big.set(file, 1);
  assert.deepEqual([...decodeWav(big.subarray(1)).pcm], [7, 8, 9]);
});

Deno.test("wav: extensible PCM is accepted, other sub-formats rejected", () => {
  const data = pcmBytes(new Int16Array([5, 6]));
  assert.deepEqual([...decodeWav(riff([["fmt ", extensibleFmt(1)], ["data", data]])).pcm], [5, 6]);
  rejects(riff([["fmt ", extensibleFmt(3)], ["data", data]]), /unsupported format 3/);
});

Deno.test("wav: streaming placeholder data sizes mean to the end of the file", () => {
  const bytes = encodeWav(new Int16Array([1, 2, 3]), 8000);
  new DataView(bytes.buffer).setUint32(40, 0xffffffff, true);
  new DataView(bytes.buffer).setUint32(4, 0xffffffff, true);
  assert.deepEqual([...decodeWav(bytes).pcm], [1, 2, 3]);
  // espeak-ng style placeholders, with an odd trailing byte cut off.
  const espeak = new Uint8Array(bytes.length + 1);
  espeak.set(bytes);
  new DataView(espeak.buffer).setUint32(40, 0x7ffff000, true);
  new DataView(espeak.buffer).setUint32(4, 0x7ffff024, true);
  assert.deepEqual([...decodeWav(espeak).pcm], [1, 2, 3]);
});

Deno.test("wav: non-PCM and malformed files are rejected with FlowcatError", () => {
  const data = pcmBytes(new Int16Array([1, 2]));
  rejects(new Uint8Array(0), /too short/);
  rejects(enc.encode("RIFX\x00\x00\x00\x00WAVE"), /RIFF signature/);
  rejects(riff([["fmt ", fmtChunk()], ["data", data]], "AVI "), /not WAVE/);
  rejects(riff([["fmt ", fmtChunk({ format: 3, bits: 32 })], ["data", data]]), /format 3/);
  rejects(riff([["fmt ", fmtChunk({ format: 7, bits: 8 })], ["data", data]]), /format 7/);
  rejects(riff([["fmt ", fmtChunk({ bits: 8 })], ["data", data]]), /8-bit/);
  rejects(riff([["fmt ", fmtChunk({ bits: 24 })], ["data", data]]), /24-bit/);
  rejects(riff([["data", data]]), /before fmt/);
  rejects(riff([["fmt ", fmtChunk()]]), /no data chunk/);
  rejects(riff([["LIST", new Uint8Array(4)]]), /no fmt chunk/);
  rejects(riff([["fmt ", new Uint8Array(12)], ["data", data]]), /fmt chunk of 12/);
  rejects(riff([["fmt ", fmtChunk()], ["fmt ", fmtChunk()], ["data", data]]), /two fmt/);
  rejects(riff([["fmt ", fmtChunk()], ["data", new Uint8Array(3)]]), /whole number/);
  rejects(riff([["fmt ", fmtChunk({ channels: 0 })], ["data", data]]), /zero channels/);
  const truncated = encodeWav(new Int16Array(100), 8000).subarray(0, 100);
  rejects(truncated, /truncated/);
  const badAlign = encodeWav(new Int16Array(4), 8000);
  new DataView(badAlign.buffer).setUint16(32, 4, true);
  rejects(badAlign, /block align/);
});

Deno.test("wav: writer refuses bad parameters", () => {
  assert.throws(() => encodeWav(new Int16Array(2), 0), FlowcatError);
  assert.throws(() => encodeWav(new Int16Array(2), 8000, 0), FlowcatError);
  assert.throws(() => wavHeader(0xffffffff, 8000), FlowcatError);
});
