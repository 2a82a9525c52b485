import assert from "node:assert/strict";
import {
  alawDecode,
  alawEncode,
  alawToLinear,
  linearToAlaw,
  linearToUlaw,
  ulawDecode,
  ulawEncode,
  ulawToLinear,
} from "../core/audio/g711.ts";
import { FlowcatError } from "../core/errors.ts";

function fnv1a(bytes: Uint8Array): number {
  let h = 0x811c9dc5;
  for (const b of bytes) h = Math.imul(h ^ b, 0x01000193) >>> 0;
  return h >>> 0;
}

const ALL_INT16 = (() => {
  const a = new Int16Array(65536);
  for (let i = 0; i < 65536; i++) a[i] = i - 32768;
  return a;
})();
const ALL_CODES = Uint8Array.from({ length: 256 }, (_, i) => i);

// Reference hashes: FNV-1a over Python 3.11 audioop.lin2ulaw/lin2alaw of every int16 in
// ascending order, and over the little-endian bytes of ulaw2lin/alaw2lin of codes 0..255.
Deno.test("g711: mu-law encode of all 65536 inputs matches audioop", () => {
  assert.equal(fnv1a(ulawEncode(ALL_INT16)).toString(16), "f2471a71");
});

Deno.test("g711: A-law encode of all 65536 inputs matches audioop", () => {
  assert.equal(fnv1a(alawEncode(ALL_INT16)).toString(16), "826fe2c5");
});

Deno.test("g711: decode tables match audioop", () => {
  const u = ulawDecode(ALL_CODES);
  const a = alawDecode(ALL_CODES);
  assert.equal(fnv1a(new Uint8Array(u.buffer)).toString(16), "715d95a8");
  assert.equal(fnv1a(new Uint8Array(a.buffer)).toString(16), "12fb6645");
});

Deno.test("g711: mu-law decode equals ITU G.711 table 2a values (x4)", () => {
  for (let c = 0; c < 256; c++) {
    const inv = c ^ 0xff; // codes are transmitted inverted
    const seg = (inv >> 4) & 7;
    const step = inv & 15;
    // ITU decoder output in 14-bit units: (2*step + 33) * 2^seg - 33.
    const mag = ((2 * step + 33) * 2 ** seg - 33) * 4;
    assert.equal(ulawToLinear(c), (inv & 0x80 ? -mag : mag) + 0, `code ${c}`); // +0: no -0
  }
  assert.equal(ulawToLinear(0x80), 32124);
  assert.equal(ulawToLinear(0x00), -32124);
  assert.equal(ulawToLinear(0xff), 0);
  assert.equal(ulawToLinear(0x7f), 0);
});

Deno.test("g711: A-law decode equals ITU G.711 table 1a values (x8)", () => {
  for (let c = 0; c < 256; c++) {
    const a = c ^ 0x55; // even-bit inversion
    const seg = (a >> 4) & 7;
    const step = a & 15;
    // ITU decoder output in 12-bit units: segment 0: 2*step+1; else (2*step+33)*2^(seg-1).
    const mag = (seg === 0 ? 2 * step + 1 : (2 * step + 33) * 2 ** (seg - 1)) * 8;
    assert.equal(alawToLinear(c), a & 0x80 ? mag : -mag, `code ${c}`);
  }
  assert.equal(alawToLinear(0xaa), 32256);
  assert.equal(alawToLinear(0xd5), 8);
  assert.equal(alawToLinear(0x55), -8);
});

Deno.test("g711: every reconstruction level encodes back to its own code", () => {
  for (let c = 0; c < 256; c++) {
    if (c !== 0x7f) assert.equal(linearToUlaw(ulawToLinear(c)), c, `mu-law ${c}`);
    assert.equal(linearToAlaw(alawToLinear(c)), c, `A-law ${c}`);
  }
});

Deno.test("g711: quantisation error stays within half a step of the segment", () => {
  const u = ulawDecode(ulawEncode(ALL_INT16));
  const a = alawDecode(alawEncode(ALL_INT16));
  for (let i = 0; i < ALL_INT16.length; i++) {
    const s = ALL_INT16[i];
    const mag = Math.abs(s);
    if (mag <= 32000) {
      // mu-law step at magnitude m is about (m + 132) / 16; allow one step plus the pre-shift.
      assert.ok(Math.abs(u[i] - s) <= (mag + 132) / 16 + 4, `mu-law ${s} -> ${u[i]}`);
      assert.ok(Math.abs(a[i] - s) <= Math.max(16, mag / 16) + 8, `A-law ${s} -> ${a[i]}`);
    }
  }
});

Deno.test("g711: known sample vectors", () => {
  const pcm = new Int16Array([0, -1, 4, 100, -100, 1000, -1000, 12345, -12345, 32767, -32768]);
  assert.deepEqual(
    [...ulawEncode(pcm)],
    [0xff, 0x7e, 0xfe, 0xf2, 0x72, 0xce, 0x4e, 0x97, 0x17, 0x80, 0x00],
  );
  assert.deepEqual(
    [...alawEncode(pcm)],
    [0xd5, 0x55, 0xd5, 0xd3, 0x53, 0xfa, 0x7a, 0xbd, 0x3d, 0xaa, 0x2a],
  );
});

Deno.test("g711: out buffers are reused and partial views returned", () => {
  const pcm = new Int16Array([1000, -1000, 0]);
  const bytes = new Uint8Array(8).fill(7);
  const enc = ulawEncode(pcm, bytes);
  assert.equal(enc.buffer, bytes.buffer);
  assert.equal(enc.length, 3);
  assert.deepEqual([...bytes], [0xce, 0x4e, 0xff, 7, 7, 7, 7, 7]);
  const pcmOut = new Int16Array(3);
  assert.equal(alawDecode(alawEncode(pcm), pcmOut), pcmOut);
  assert.deepEqual([...pcmOut], [1008, -1008, 8]);
  assert.throws(() => ulawEncode(pcm, new Uint8Array(2)), FlowcatError);
  assert.throws(() => ulawDecode(new Uint8Array(4), new Int16Array(3)), FlowcatError);
});
