/**
 * Opus over opusscript's WebAssembly: the embedded bytes are the pinned package's, loading needs
 * no permission, audio survives a round trip (wideband included), stereo streams downmix,
 * lost packets are concealed for a packet's duration, and many codecs share one module safely.
 */

import assert from "node:assert/strict";
import {
  loadOpus,
  OPUS_FRAME,
  OPUS_RATE,
  OpusCodec,
  type OpusModuleLike,
  opusWasmBytes,
} from "../core/audio/opus.ts";
import { OPUS_WASM_PACKAGE, OPUS_WASM_SHA256 } from "../core/audio/opus_wasm.ts";
import { rms, sine } from "../core/audio/pcm.ts";
import { FlowcatError } from "../core/errors.ts";
import { opusPackage, readOpusWasm, sha256Hex } from "../tools/build_wasm.ts";
import { toneAmplitude } from "./_audio_helpers.ts";

/** Encode `pcm` frame by frame with `frame` samples a packet. */
function encodeAll(codec: OpusCodec, pcm: Int16Array, frame = OPUS_FRAME): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let i = 0; i + frame <= pcm.length; i += frame) {
    out.push(codec.encode(pcm.subarray(i, i + frame)));
  }
  return out;
}

/** Decode packets and join the PCM. */
function decodeAll(codec: OpusCodec, packets: Uint8Array[]): Int16Array {
  const parts = packets.map((p) => codec.decode(p));
  const out = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) out.set(p, o), o += p.length;
  return out;
}

/** `a` plus `b`, sample by sample. */
const mix = (a: Int16Array, b: Int16Array) => a.map((x, i) => x + b[i]);

Deno.test("opus: the embedded WebAssembly is the pinned npm package's (deno task wasm)", async () => {
  const pkg = await opusPackage();
  assert.equal(OPUS_WASM_PACKAGE, pkg);
  const fromNpm = await readOpusWasm(pkg);
  const embedded = await opusWasmBytes();
  assert.equal(await sha256Hex(fromNpm), OPUS_WASM_SHA256);
  assert.deepEqual(embedded, fromNpm);
  // WebAssembly, not the package's asm.js fallback.
  assert.deepEqual([...embedded.subarray(0, 4)], [0x00, 0x61, 0x73, 0x6d]);
});

Deno.test("opus: loads and runs with no permission at all (no file read)", async () => {
  await Deno.mkdir(".tmp", { recursive: true });
  const script = await Deno.makeTempFile({ dir: ".tmp", prefix: "opus-perm-", suffix: ".ts" });
  try {
    await Deno.writeTextFile(
      script,
      `import { OpusCodec } from "${new URL("../core/audio/opus.ts", import.meta.url)}";\n` +
        "const c = await OpusCodec.create();\n" +
        "const pcm = c.decode(c.encode(new Int16Array(960)));\n" +
        "c.close();\nconsole.log(pcm.length);\n",
    );
    const out = await new Deno.Command("deno", {
      args: ["run", "--no-prompt", script],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const err = new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 0, err);
    assert.equal(new TextDecoder().decode(out.stdout).trim(), "960");
  } finally {
    await Deno.remove(script);
  }
});

Deno.test("opus: a round trip keeps speech-band and wideband tones, 960 samples a packet", async () => {
  const codec = await OpusCodec.create();
  try {
    const n = OPUS_RATE;
    const pcm = mix(
      sine({ freq: 300, sampleRate: OPUS_RATE, samples: n, amplitude: 6000 }),
      sine({ freq: 6000, sampleRate: OPUS_RATE, samples: n, amplitude: 4000 }),
    );
    const packets = encodeAll(codec, pcm);
    assert.equal(packets.length, 50);
    // About 32 kbit/s: 80 bytes a packet on average.
    const bytes = packets.reduce((s, p) => s + p.length, 0);
    assert.ok(bytes > 50 * 40 && bytes < 50 * 140, `${bytes} bytes a second`);
    const out = decodeAll(codec, packets);
    assert.equal(out.length, n);
    const body = out.subarray(4800); // past the codec's start-up
    const at300 = toneAmplitude(body, 300, OPUS_RATE);
    const at6k = toneAmplitude(body, 6000, OPUS_RATE);
    assert.ok(at300 > 5000 && at300 < 7000, `300 Hz: ${at300}`);
    assert.ok(at6k > 3000 && at6k < 5000, `6 kHz: ${at6k}`);
    assert.ok(toneAmplitude(body, 1000, OPUS_RATE) < 300, "nothing added at 1 kHz");
  } finally {
    codec.close();
  }
});

Deno.test("opus: the bitrate option is applied", async () => {
  const speech = mix(
    sine({ freq: 210, sampleRate: OPUS_RATE, samples: OPUS_RATE, amplitude: 6000 }),
    sine({ freq: 2500, sampleRate: OPUS_RATE, samples: OPUS_RATE, amplitude: 3000 }),
  );
  const size = async (bitrate: number) => {
    const c = await OpusCodec.create({ bitrate, fec: false });
    try {
      return encodeAll(c, speech).reduce((s, p) => s + p.length, 0);
    } finally {
      c.close();
    }
  };
  const low = await size(12000);
  const high = await size(64000);
  assert.ok(high > low * 3, `12 kbit/s: ${low} bytes, 64 kbit/s: ${high} bytes`);
  await assert.rejects(
    OpusCodec.create({ complexity: 42 }),
    (e) => e instanceof FlowcatError && e.kind === "config" && /complexity/.test(e.message),
  );
});

Deno.test("opus: a stereo stream decodes to mono", async () => {
  const module = await loadOpus();
  const stereo = new module.OpusScriptHandler(OPUS_RATE, 2, 2049);
  const codec = new OpusCodec(module);
  const pcmPtr = module._malloc(OPUS_FRAME * 2 * 8);
  const outPtr = module._malloc(4000);
  try {
    const left = sine({ freq: 440, sampleRate: OPUS_RATE, samples: OPUS_RATE, amplitude: 8000 });
    const right = sine({ freq: 1500, sampleRate: OPUS_RATE, samples: OPUS_RATE, amplitude: 8000 });
    const packets: Uint8Array[] = [];
    for (let f = 0; f < 50; f++) {
      // The handler's layout: interleaved samples, each as two 16-bit words (low, high byte).
      const heap = module.HEAP16;
      for (let i = 0; i < OPUS_FRAME; i++) {
        for (const [c, s] of [[0, left[f * OPUS_FRAME + i]], [1, right[f * OPUS_FRAME + i]]]) {
          const w = (pcmPtr >> 1) + 2 * (2 * i + c);
          heap[w] = s & 0xff;
          heap[w + 1] = (s >> 8) & 0xff;
        }
      }
      const len = stereo._encode(pcmPtr, OPUS_FRAME * 4, outPtr, OPUS_FRAME);
      assert.ok(len > 0);
      packets.push(module.HEAPU8.slice(outPtr, outPtr + len));
    }
    assert.ok(packets.every((p) => (p[0] & 0x04) !== 0), "stereo packets");
    const mono = decodeAll(codec, packets).subarray(4800);
    assert.equal(mono.length, OPUS_RATE - 4800);
    // The downmix carries both channels at half their level.
    for (const f of [440, 1500]) {
      const a = toneAmplitude(mono, f, OPUS_RATE);
      assert.ok(a > 2500 && a < 5500, `${f} Hz in the downmix: ${a}`);
    }
  } finally {
    module._free(pcmPtr);
    module._free(outPtr);
    stereo.delete();
    codec.close();
  }
});

Deno.test("opus: a lost packet is concealed for a packet's duration, fading if loss goes on", async () => {
  const codec = await OpusCodec.create();
  try {
    assert.deepEqual(codec.conceal(), new Int16Array(OPUS_FRAME), "silence before any packet");
    const tone = sine({ freq: 440, sampleRate: OPUS_RATE, samples: OPUS_RATE, amplitude: 8000 });
    decodeAll(codec, encodeAll(codec, tone));
    const first = codec.conceal();
    assert.equal(first.length, OPUS_FRAME);
    const at440 = toneAmplitude(first, 440, OPUS_RATE);
    assert.ok(at440 > 1000, `the tone goes on through the gap: ${at440}`);
    let last = first;
    for (let i = 0; i < 15; i++) last = codec.conceal();
    assert.ok(rms(last) < rms(first) / 2, `fades: ${rms(first)} then ${rms(last)}`);
    // An empty payload is a lost packet too; decoding goes on afterwards.
    assert.equal(codec.decode(new Uint8Array(0)).length, OPUS_FRAME);
    assert.equal(codec.decode(codec.encode(tone.subarray(0, OPUS_FRAME))).length, OPUS_FRAME);

    // After 40 ms packets, a concealed packet lasts 40 ms.
    const long = encodeAll(codec, tone, 1920);
    decodeAll(codec, long);
    assert.equal(codec.conceal().length, 1920);
  } finally {
    codec.close();
  }
});

Deno.test("opus: bad input is refused with FlowcatError; a closed codec says so", async () => {
  const codec = await OpusCodec.create();
  assert.throws(
    () => codec.encode(new Int16Array(1000)),
    (e) => e instanceof FlowcatError && /1000 samples/.test(e.message),
  );
  assert.throws(
    () => codec.decode(new Uint8Array(5000)),
    (e) => e instanceof FlowcatError && e.kind === "protocol",
  );
  // Code 3 (arbitrary frame count) announcing 0 frames: malformed.
  assert.throws(
    () => codec.decode(new Uint8Array([0x4b, 0x00])),
    (e) => e instanceof FlowcatError && e.kind === "protocol",
  );
  codec.close();
  codec.close();
  assert.equal(codec.closed, true);
  assert.throws(
    () => codec.decode(new Uint8Array([0x48])),
    (e) => e instanceof FlowcatError && e.kind === "closed",
  );
});

Deno.test("opus: many codecs share one module without disturbing each other; close frees", async () => {
  const module: OpusModuleLike = await loadOpus();
  const freqs = Array.from({ length: 24 }, (_, i) => 200 + i * 150);
  const codecs = freqs.map(() => new OpusCodec(module));
  try {
    const tones = freqs.map((f) =>
      sine({ freq: f, sampleRate: OPUS_RATE, samples: OPUS_RATE / 2, amplitude: 8000 })
    );
    const heard = freqs.map(() => [] as Int16Array[]);
    // Interleaved: frame k of every stream before frame k + 1 of any.
    for (let k = 0; k < 25; k++) {
      codecs.forEach((c, i) => {
        const packet = c.encode(tones[i].subarray(k * OPUS_FRAME, (k + 1) * OPUS_FRAME));
        heard[i].push(c.decode(packet));
      });
    }
    heard.forEach((parts, i) => {
      const pcm = new Int16Array(parts.length * OPUS_FRAME);
      parts.forEach((p, k) => pcm.set(p, k * OPUS_FRAME));
      const body = pcm.subarray(4800);
      const own = toneAmplitude(body, freqs[i], OPUS_RATE);
      const other = toneAmplitude(body, freqs[(i + 1) % freqs.length], OPUS_RATE);
      assert.ok(own > 5000 && other < 300, `stream ${i}: own ${own}, neighbour's ${other}`);
    });
  } finally {
    for (const c of codecs) c.close();
  }
  // Codecs made and closed again and again reuse the same wasm memory.
  const before = module.HEAPU8.length;
  for (let i = 0; i < 300; i++) new OpusCodec(module).close();
  assert.equal(module.HEAPU8.length, before);
});
