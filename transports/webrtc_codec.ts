/**
 * The WebRTC leg's audio codecs: Opus (48 kHz, wideband speech) first, then PCMU and PCMA
 * (G.711, 8 kHz) as fallbacks. This module says what the answer lists for werift, whether an
 * offer has any of them, and makes the per-call {@link MediaCodec} the session and the pacer
 * share: decode a payload or conceal a lost one, encode one 20 ms frame.
 *
 * Opus runs in WebAssembly (core/audio/opus.ts), loaded once per process when the first call
 * negotiates it; G.711 is table lookups.
 * @module
 */

import { RTCRtpCodecParameters } from "npm:werift@0.25.2";
import { alawDecode, alawEncode, ulawDecode, ulawEncode } from "../core/audio/g711.ts";
import { loadOpus, OPUS_FRAME, OPUS_RATE, OpusCodec } from "../core/audio/opus.ts";
import { FlowcatError } from "../core/errors.ts";

/** Audio codecs the WebRTC leg speaks. */
export type WebRtcCodec = "opus" | "pcmu" | "pcma";

/** Every codec, in the default order of preference. */
export const DEFAULT_WEBRTC_CODECS: readonly WebRtcCodec[] = Object.freeze([
  "opus",
  "pcmu",
  "pcma",
]);

/** How each codec appears in SDP. */
const SDP: Readonly<
  Record<WebRtcCodec, { mime: string; rate: number; channels?: number; pt: number }>
> = {
  // RFC 7587: always opus/48000/2 in SDP, whatever the content; 111 is what browsers use.
  opus: { mime: "audio/opus", rate: OPUS_RATE, channels: 2, pt: 111 },
  pcmu: { mime: "audio/PCMU", rate: 8000, pt: 0 },
  pcma: { mime: "audio/PCMA", rate: 8000, pt: 8 },
};

/**
 * The codec list an option names, checked: known names, no repeats, at least one. Undefined
 * gives {@link DEFAULT_WEBRTC_CODECS}. Throws `FlowcatError("config")` otherwise.
 */
export function checkWebRtcCodecs(codecs: readonly string[] | undefined): readonly WebRtcCodec[] {
  if (codecs === undefined) return DEFAULT_WEBRTC_CODECS;
  const known = Object.keys(SDP);
  for (const c of codecs) {
    if (!known.includes(c)) {
      throw new FlowcatError(
        "config",
        `webrtc.codecs: unknown codec ${JSON.stringify(c)} (use ${known.join(", ")})`,
      );
    }
  }
  if (codecs.length === 0) throw new FlowcatError("config", "webrtc.codecs: name at least one");
  if (new Set(codecs).size !== codecs.length) {
    throw new FlowcatError("config", "webrtc.codecs: a codec is named twice");
  }
  return codecs as readonly WebRtcCodec[];
}

/** werift's codec parameters for `codecs`, in that order (the answer keeps our order). */
export function rtpCodecParameters(codecs: readonly WebRtcCodec[]): RTCRtpCodecParameters[] {
  return codecs.map((c) => {
    const s = SDP[c];
    return new RTCRtpCodecParameters({
      mimeType: s.mime,
      clockRate: s.rate,
      channels: s.channels,
      payloadType: s.pt,
    });
  });
}

/** Which codec a negotiated werift codec is; undefined for one we do not speak. */
export function codecOfMime(mimeType: string, clockRate: number): WebRtcCodec | undefined {
  const mime = mimeType.toLowerCase();
  for (const [name, s] of Object.entries(SDP)) {
    if (s.mime.toLowerCase() === mime && s.rate === clockRate) return name as WebRtcCodec;
  }
  return undefined;
}

/**
 * The codecs of `codecs` that the first audio section of an SDP offer lists: by `a=rtpmap`, or
 * by static payload type (0 PCMU, 8 PCMA) without one. Empty when there is no audio section.
 */
export function offeredCodecs(sdp: string, codecs: readonly WebRtcCodec[]): WebRtcCodec[] {
  const lines = sdp.split(/\r?\n/);
  const start = lines.findIndex((l) => l.startsWith("m=audio "));
  if (start < 0) return [];
  const pts = lines[start].trim().split(/\s+/).slice(3);
  const names = new Map<string, WebRtcCodec | undefined>([["0", "pcmu"], ["8", "pcma"]]);
  for (let i = start + 1; i < lines.length && !lines[i].startsWith("m="); i++) {
    const m = /^a=rtpmap:(\d+)\s+([^/\s]+)\/(\d+)/.exec(lines[i]);
    if (m) names.set(m[1], codecOfMime(`audio/${m[2]}`, Number(m[3])));
  }
  const found = new Set(pts.map((pt) => names.get(pt)));
  return codecs.filter((c) => found.has(c));
}

/** A human list: `Opus, PCMU or PCMA`. */
export function codecListText(codecs: readonly WebRtcCodec[]): string {
  const names = codecs.map((c) => (c === "opus" ? "Opus" : c.toUpperCase()));
  return names.length < 2 ? names.join("") : `${names.slice(0, -1).join(", ")} or ${names.at(-1)}`;
}

/**
 * One call's codec, both ways: PCM at {@link MediaCodec.clockRate} (mono) in and out, one
 * payload per {@link MediaCodec.frameSamples} samples.
 */
export interface MediaCodec {
  /** Which codec. */
  readonly name: WebRtcCodec;
  /** RTP clock rate, which is also the PCM rate in and out (48000 Opus, 8000 G.711). */
  readonly clockRate: number;
  /** Samples in one 20 ms packet (960 Opus, 160 G.711); the RTP timestamp step. */
  readonly frameSamples: number;
  /** Decode a payload; throws a FlowcatError for one it cannot (conceal it instead). */
  decode(payload: Uint8Array): Int16Array;
  /** A frame for a packet that never came. */
  conceal(): Int16Array;
  /** Encode exactly {@link frameSamples} samples; the result may be reused by the next call. */
  encode(frame: Int16Array): Uint8Array;
  /** Release what the codec holds (Opus: wasm memory); idempotent. */
  close(): void;
}

/** Concealed G.711 frames fade by half each; after this many they are silence. */
const G711_MAX_CONCEALED = 5;
/** G.711 samples per 20 ms. */
const G711_FRAME = 160;

/** PCMU or PCMA: table lookups; loss is concealed by a fading repeat of the last frame. */
class G711Codec implements MediaCodec {
  readonly name: "pcmu" | "pcma";
  readonly clockRate = 8000;
  readonly frameSamples = G711_FRAME;
  readonly #payload = new Uint8Array(G711_FRAME);
  #last: Int16Array | undefined;
  #concealed = 0;

  constructor(name: "pcmu" | "pcma") {
    this.name = name;
  }

  decode(payload: Uint8Array): Int16Array {
    const pcm = this.name === "pcmu" ? ulawDecode(payload) : alawDecode(payload);
    this.#last = pcm;
    this.#concealed = 0;
    return pcm;
  }

  conceal(): Int16Array {
    const prev = this.#last;
    const out = new Int16Array(prev?.length ?? G711_FRAME);
    if (prev !== undefined && ++this.#concealed <= G711_MAX_CONCEALED) {
      for (let i = 0; i < out.length; i++) out[i] = prev[i] >> 1;
    }
    this.#last = out;
    return out;
  }

  encode(frame: Int16Array): Uint8Array {
    return this.name === "pcmu"
      ? ulawEncode(frame, this.#payload)
      : alawEncode(frame, this.#payload);
  }

  close(): void {}
}

/** Opus through core/audio/opus.ts: 48 kHz mono, libopus' own concealment. */
class OpusMediaCodec implements MediaCodec {
  readonly name = "opus";
  readonly clockRate = OPUS_RATE;
  readonly frameSamples = OPUS_FRAME;
  readonly #codec: OpusCodec;

  constructor(codec: OpusCodec) {
    this.#codec = codec;
  }

  decode(payload: Uint8Array): Int16Array {
    return this.#codec.decode(payload);
  }

  conceal(): Int16Array {
    return this.#codec.conceal();
  }

  encode(frame: Int16Array): Uint8Array {
    return this.#codec.encode(frame);
  }

  close(): void {
    this.#codec.close();
  }
}

/** Make one call's codec (Opus loads its WebAssembly the first time, once per process). */
export async function openMediaCodec(name: WebRtcCodec): Promise<MediaCodec> {
  if (name === "opus") return new OpusMediaCodec(new OpusCodec(await loadOpus()));
  return new G711Codec(name);
}
