/**
 * Pieces the streaming text-to-speech clients share: PCM bytes to whole samples across chunk
 * boundaries, the usage metrics frame, the positive-number option check, the key and rate check
 * of cloud clients and the members every streaming client shares.
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import { type Frame, makeFrame, type StartParams } from "../../core/frames.ts";
import type { TtsService } from "../../core/seams.ts";
import type { ServiceOptions } from "../service_options.ts";
import { bytesToInt16 } from "../../core/audio/pcm.ts";

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

/**
 * The key and the output rate a cloud client's constructor checks first: a missing key, or a
 * rate (`options.sample_rate`) the provider does not offer, is a config error naming it.
 */
export function keyAndRate(
  opts: ServiceOptions,
  rates: readonly number[],
  fallback: number,
): { apiKey: string; rate: number } {
  const name = opts.provider;
  if (!opts.apiKey) throw new FlowcatError("config", `${name}: apiKey is required`);
  const o = opts.options ?? {};
  const rate = o.sample_rate ?? o.sampleRate ?? fallback;
  if (typeof rate !== "number" || !rates.includes(rate)) {
    throw new FlowcatError("config", `${name}: sample rate must be one of ${rates.join(", ")}`);
  }
  return { apiKey: opts.apiKey, rate };
}

/** The TtsService members streaming clients share: name, rate, and no-op start and stop. */
export abstract class StreamingTts implements TtsService {
  readonly #name: string;
  readonly #rate: number;

  /** A service named `name` whose audio comes at `rate`. */
  protected constructor(name: string, rate: number) {
    this.#name = name;
    this.#rate = rate;
  }

  /** Provider name (as configured). */
  name(): string {
    return this.#name;
  }

  /** Rate of the audio {@link runTts} yields. */
  sampleRate(): number {
    return this.#rate;
  }

  /** Nothing to open: connections are made by the utterances. */
  start(_params: StartParams): Promise<void> {
    return Promise.resolve();
  }

  /** Nothing to close by default. Idempotent. */
  stop(): Promise<void> {
    return Promise.resolve();
  }

  /** TtsStarted, TtsAudio..., a `tts_usage` Metrics frame, TtsStopped. */
  abstract runTts(text: string, signal?: AbortSignal): AsyncGenerator<Frame>;
}
