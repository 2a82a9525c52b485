/**
 * WebRTC leg benchmark (`deno task bench --only webrtc`): what one browser call's media costs per
 * 20 ms frame, both ways, with Opus and with the G.711 fallback.
 *
 * - Opus alone: decode of one 20 ms packet, encode of one 20 ms frame (48 kHz mono, the leg's
 *   settings: 32 kbit/s, FEC, complexity 5), and both together.
 * - The whole leg, per call frame: inbound = jitter buffer push + pull, decode, resample to the
 *   pipeline's 16 kHz (TransportInput's resampler); outbound = resample the TTS's 24 kHz to the
 *   codec's rate (the session's resampler), encode, RTP packetize. The timer, werift's SRTP and
 *   UDP are not included.
 *
 * Each frame is timed on its own (`performance.now()`), so the percentiles are per frame. The
 * signal is voice-like: a glottal pulse train (100-180 Hz, harmonics to 7 kHz) under a syllable
 * envelope, with some noise, so the encoder switches modes as it would on speech.
 *
 * Run alone: `deno run --allow-read=. bench/webrtc.ts` (prints JSON), or call
 * {@link runWebRtcBench} from bench/main.ts.
 * @module
 */

import { ulawDecode, ulawEncode } from "../core/audio/g711.ts";
import { JitterBuffer, LOST } from "../core/audio/jitter_buffer.ts";
import { loadOpus, OPUS_FRAME, OPUS_RATE, OpusCodec } from "../core/audio/opus.ts";
import { Resampler, transitionFor } from "../core/audio/resample.ts";
import { RtpSender } from "../core/rtp.ts";
import { percentile } from "./core.ts";

/** p50 / p90 / p99 of `xs` (ms), rounded to 4 significant digits. */
function p(xs: readonly number[]): { p50: number; p90: number; p99: number; runs: number } {
  const r = (x: number) => Number(x.toPrecision(4));
  return {
    p50: r(percentile(xs, 50)),
    p90: r(percentile(xs, 90)),
    p99: r(percentile(xs, 99)),
    runs: xs.length,
  };
}

/** `seconds` of a voice-like signal at `rate`. */
export function voiceLike(rate: number, seconds: number): Int16Array {
  const n = Math.round(rate * seconds);
  const out = new Int16Array(n);
  let phase = 0;
  let seed = 12345;
  for (let i = 0; i < n; i++) {
    const t = i / rate;
    const f0 = 140 + 40 * Math.sin(2 * Math.PI * 0.7 * t);
    phase += f0 / rate;
    let v = 0;
    for (let h = 1; h * f0 < Math.min(7000, rate / 2 - 200); h++) {
      v += Math.sin(2 * Math.PI * h * phase) / h;
    }
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    const noise = seed / 0x7fffffff - 0.5;
    const syllable = Math.max(0, Math.sin(2 * Math.PI * 3 * t)); // pauses between "syllables"
    out[i] = Math.round(syllable * (3500 * v + 1500 * noise));
  }
  return out;
}

/** The codec side of one leg, as the session drives it. */
interface LegCodec {
  rate: number;
  frame: number;
  decode(payload: Uint8Array): Int16Array;
  conceal(): Int16Array;
  encode(pcm: Int16Array): Uint8Array;
}

/**
 * Time `frames` call frames of one leg: the browser's packets (`inbound`, made beforehand)
 * through the jitter buffer, decoder and the 16 kHz resampler; the bot's 24 kHz audio through
 * the resampler to the codec's rate, the encoder and the RTP packetizer.
 */
function timeLeg(codec: LegCodec, inbound: Uint8Array[], tts24k: Int16Array, frames: number) {
  const jb = new JitterBuffer<Uint8Array>({ clockRate: codec.rate });
  const toPipeline = new Resampler(codec.rate, 16000, {
    transition: transitionFor(codec.rate, 16000),
  });
  const toCodec = new Resampler(24000, codec.rate, {
    transition: transitionFor(24000, codec.rate),
  });
  const rtp = new RtpSender({ payloadType: 111 });
  const frame = new Int16Array(codec.frame);
  const inMs: number[] = [];
  const outMs: number[] = [];
  const total: number[] = [];
  let sink = 0;
  const warm = 100;
  for (let i = 0; i < frames + warm; i++) {
    const k = i % inbound.length;
    const t0 = performance.now();
    jb.push(i & 0xffff, (i * codec.frame) >>> 0, inbound[k], i * 20);
    const next = jb.pull();
    const pcm = next === LOST || next === undefined ? codec.conceal() : codec.decode(next);
    sink += toPipeline.process(pcm).length;
    const t1 = performance.now();
    const o = (i * 480) % (tts24k.length - 480);
    const up = toCodec.process(tts24k.subarray(o, o + 480));
    frame.set(up.subarray(0, codec.frame));
    sink += rtp.audio(codec.encode(frame), codec.frame).length;
    const t2 = performance.now();
    if (i < warm) continue;
    inMs.push(t1 - t0);
    outMs.push(t2 - t1);
    total.push(t2 - t0);
  }
  if (sink === 0) throw new Error("nothing came out");
  return {
    inbound_ms: p(inMs),
    outbound_ms: p(outMs),
    total_ms: p(total),
    cpu_percent_of_one_core_p50: Number(((percentile(total, 50) / 20) * 100).toPrecision(3)),
    calls_per_core_p50: Math.floor(20 / percentile(total, 50)),
  };
}

/** The benchmark; `quick` times fewer frames. */
export async function runWebRtcBench(quick = false): Promise<Record<string, unknown>> {
  const frames = quick ? 500 : 3000;
  const t0 = performance.now();
  const module = await loadOpus();
  const loadMs = performance.now() - t0;

  // The browser's side: its encoder makes the packets the leg decodes.
  const voice48k = voiceLike(OPUS_RATE, 10);
  const browser = new OpusCodec(module);
  const packets: Uint8Array[] = [];
  for (let i = 0; i + OPUS_FRAME <= voice48k.length; i += OPUS_FRAME) {
    packets.push(browser.encode(voice48k.subarray(i, i + OPUS_FRAME)));
  }
  browser.close();
  const kbps = (packets.reduce((s, x) => s + x.length, 0) * 8) / 10 / 1000;

  // Opus alone, per 20 ms frame.
  const codec = new OpusCodec(module);
  const dec: number[] = [];
  const enc: number[] = [];
  const both: number[] = [];
  for (let i = 0; i < frames + 100; i++) {
    const k = i % packets.length;
    const s = performance.now();
    codec.decode(packets[k]);
    const m = performance.now();
    codec.encode(voice48k.subarray(k * OPUS_FRAME, (k + 1) * OPUS_FRAME));
    const e = performance.now();
    if (i < 100) continue;
    dec.push(m - s);
    enc.push(e - m);
    both.push(e - s);
  }
  const plc: number[] = [];
  for (let i = 0; i < 500; i++) {
    if (i % 5 === 0) codec.decode(packets[i % packets.length]);
    const s = performance.now();
    codec.conceal();
    plc.push(performance.now() - s);
  }

  const tts24k = voiceLike(24000, 10);
  const opusLeg = timeLeg(
    {
      rate: OPUS_RATE,
      frame: OPUS_FRAME,
      decode: (x) => codec.decode(x),
      conceal: () => codec.conceal(),
      encode: (x) => codec.encode(x),
    },
    packets,
    tts24k,
    frames,
  );
  codec.close();

  const voice8k = voiceLike(8000, 10);
  const ulaw: Uint8Array[] = [];
  for (let i = 0; i + 160 <= voice8k.length; i += 160) {
    ulaw.push(ulawEncode(voice8k.subarray(i, i + 160)));
  }
  const payload = new Uint8Array(160);
  const pcmuLeg = timeLeg(
    {
      rate: 8000,
      frame: 160,
      decode: (x) => ulawDecode(x),
      conceal: () => new Int16Array(160),
      encode: (x) => ulawEncode(x, payload),
    },
    ulaw,
    tts24k,
    frames,
  );

  // wasm memory one call's codec takes (encoder + decoder + libopus' own buffers).
  const probe = () => {
    const ptr = module._malloc(16);
    module._free(ptr);
    return ptr;
  };
  const before = probe();
  const many = Array.from({ length: 100 }, () => new OpusCodec(module));
  const perCodec = Math.round((probe() - before) / many.length);
  for (const c of many) c.close();

  return {
    frames_timed: frames,
    signal: "voice-like, 10 s, harmonics to 7 kHz, syllable envelope",
    opus: {
      load_ms: Number(loadMs.toPrecision(4)),
      settings: "48 kHz mono, VoIP, 32 kbit/s, in-band FEC (10 % loss), complexity 5",
      measured_kbit_per_s: Number(kbps.toPrecision(3)),
      wasm_bytes_per_call: perCodec,
      decode_20ms_ms: p(dec),
      encode_20ms_ms: p(enc),
      decode_plus_encode_ms: p(both),
      conceal_20ms_ms: p(plc),
      goal_decode_plus_encode_p50_under_ms: 1,
    },
    leg_per_call_frame: {
      what: "inbound: jitter push+pull, decode, resample to 16 kHz; " +
        "outbound: resample 24 kHz to the codec's rate, encode, RTP packetize",
      opus_48k: opusLeg,
      pcmu_8k: pcmuLeg,
    },
  };
}

if (import.meta.main) {
  console.log(JSON.stringify(await runWebRtcBench(Deno.args.includes("--quick")), null, 2));
}
