/**
 * Pieces the streaming text-to-speech clients share: PCM bytes to whole samples across chunk
 * boundaries, the usage metrics frame, and the positive-number option check.
 * @module
 */

import { FlowcatError } from "../core/errors.ts";
import { type Frame, makeFrame } from "../core/frames.ts";
import { bytesToInt16 } from "../core/audio/pcm.ts";

/** Bytes of 16-bit little-endian PCM to whole samples, carrying an odd byte to the next push. */
export class PcmAssembler {
  #carry: number | undefined;

  /** Samples completed by `bytes` (possibly none). */
  push(bytes: Uint8Array): Int16Array {
    let src = bytes;
    if (this.#carry !== undefined) {
      src = new Uint8Array(bytes.length + 1);
      src[0] = this.#carry;
      src.set(bytes, 1);
      this.#carry = undefined;
    }
    if (src.length % 2 === 1) this.#carry = src[src.length - 1];
    return bytesToInt16(src);
  }
}

/** The `tts_usage` Metrics frame for one synthesis. */
export function ttsUsageFrame(processor: string, model: string, characters: number): Frame {
  return makeFrame("Metrics", { data: [{ type: "tts_usage", processor, model, characters }] });
}

/** A finite positive number option, or undefined; anything else is a config error. */
export function positiveOption(
  provider: string,
  options: Record<string, unknown>,
  key: string,
  integer = false,
): number | undefined {
  const v = options[key];
  if (v === undefined) return undefined;
  if (
    typeof v !== "number" || !(v > 0) || !Number.isFinite(v) || (integer && !Number.isInteger(v))
  ) {
    throw new FlowcatError(
      "config",
      `${provider}: options.${key} must be a positive ${integer ? "integer" : "number"}`,
    );
  }
  return v;
}
