/**
 * The generic (Flowcat-native) media-stream framing, used by `demo ws-echo` and by peers that
 * are not a carrier:
 *
 * - text `{"event":"start","call_id":"...","sample_rate":16000}`: stream start (rate optional);
 * - binary: PCM16 little-endian mono at the stream's rate: audio;
 * - text `{"event":"dtmf","digit":"5"}`: a keypad press;
 * - text `{"event":"stop"}`: stream end.
 *
 * Out: binary PCM16 audio; `{"event":"clear"}` on barge-in; `{"event":"mark","name":...}`.
 *
 * Permissions: none (pure).
 *
 * @example
 * ```ts
 * import { GenericSerializer } from "@flowcat/flowcat/telephony/generic";
 * const ser = new GenericSerializer();
 * ser.onMessage({ type: "text", data: '{"event":"start","call_id":"c1","sample_rate":8000}' });
 * const got = ser.onMessage({ type: "binary", data: new Uint8Array(320) }); // 160 samples
 * ```
 * @module
 */

import type { AudioFrame, KeypadEntry } from "../core/frames.ts";
import type { MediaSerializer, SerIn, WsIn, WsOut } from "../core/seams.ts";

const KEYS = new Set("0123456789*#ABCD");

/** Default rate of the generic stream when the start message does not give one. */
export const GENERIC_DEFAULT_RATE = 16000;

/** PCM16 little-endian bytes to samples, copying only when the bytes are misaligned. */
export function pcm16FromBytes(bytes: Uint8Array): Int16Array {
  const n = bytes.byteLength >> 1;
  if ((bytes.byteOffset & 1) === 0) return new Int16Array(bytes.buffer, bytes.byteOffset, n);
  return new Int16Array(bytes.slice(0, n * 2).buffer);
}

/** Samples to PCM16 little-endian bytes (a view, no copy). */
export function pcm16ToBytes(pcm: Int16Array): Uint8Array {
  return new Uint8Array(pcm.buffer, pcm.byteOffset, pcm.byteLength);
}

/** Serializer for the generic framing. */
export class GenericSerializer implements MediaSerializer {
  #rate: number;

  /** `rate` is used until a start message names another. */
  constructor(rate = GENERIC_DEFAULT_RATE) {
    this.#rate = rate;
  }

  /** Decode one inbound message. */
  onMessage(msg: WsIn): SerIn {
    if (msg.type === "close") return { type: "stop" };
    if (msg.type === "binary") {
      if (msg.data.byteLength % 2 !== 0) {
        return { type: "ignore", reason: "odd-length PCM16 message" };
      }
      return {
        type: "audio",
        audio: { pcm: pcm16FromBytes(msg.data), sampleRate: this.#rate, numChannels: 1 },
      };
    }
    let m: unknown;
    try {
      m = JSON.parse(msg.data);
    } catch {
      return { type: "ignore", reason: "text message is not JSON" };
    }
    if (typeof m !== "object" || m === null) {
      return { type: "ignore", reason: "message is not a JSON object" };
    }
    const o = m as Record<string, unknown>;
    switch (o.event) {
      case "start": {
        if (typeof o.call_id !== "string" || o.call_id === "") {
          return { type: "ignore", reason: "start without call_id" };
        }
        const rate = o.sample_rate;
        if (rate !== undefined) {
          if (typeof rate !== "number" || !Number.isInteger(rate) || rate < 8000 || rate > 48000) {
            return { type: "ignore", reason: "start with an unsupported sample_rate" };
          }
          this.#rate = rate;
        }
        return { type: "start", callId: o.call_id };
      }
      case "stop":
        return { type: "stop" };
      case "dtmf":
        return typeof o.digit === "string" && KEYS.has(o.digit) && o.digit.length === 1
          ? { type: "dtmf", key: o.digit as KeypadEntry }
          : { type: "ignore", reason: "dtmf without a valid digit" };
      case "mark":
        return typeof o.name === "string"
          ? { type: "mark", name: o.name }
          : { type: "ignore", reason: "mark without name" };
      default:
        return { type: "ignore", reason: `unknown event ${JSON.stringify(o.event ?? null)}` };
    }
  }

  /** PCM16 at the stream rate, as one binary message. */
  encodeAudio(audio: AudioFrame): WsOut {
    return pcm16ToBytes(audio.pcm);
  }

  /** The clear message. */
  encodeClear(): WsOut {
    return JSON.stringify({ event: "clear" });
  }

  /** A mark message. */
  encodeMark(name: string): WsOut {
    return JSON.stringify({ event: "mark", name });
  }

  /** The stream's rate. */
  carrierRate(): number {
    return this.#rate;
  }
}
