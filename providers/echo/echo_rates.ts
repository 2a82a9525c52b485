/**
 * The echo model's rates and the one conversion it makes between them: which rates it takes on
 * a leg, the `rates` option, and its voice from input rate to output rate (nothing at all when
 * the two are the same, the case on a telephone leg).
 * @module
 */

import { Resampler } from "../../core/audio/resample.ts";
import { concatInt16, sine } from "../../core/audio/pcm.ts";
import { FlowcatError } from "../../core/errors.ts";
import type { AudioFrame } from "../../core/frames.ts";
import type { RealtimeAudioRates } from "../../core/seams.ts";

/** Rate the echo takes when not told the leg's, as the hosted models. */
export const ECHO_INPUT_RATE = 16000;
/** Rate of the echo's voice when not told the leg's, as the hosted models. */
export const ECHO_OUTPUT_RATE = 24000;
/** The rates the echo works at as they are, Hz. */
const MIN_RATE = 8000;
const MAX_RATE = 48000;

function inRange(r: number): boolean {
  return Number.isInteger(r) && r >= MIN_RATE && r <= MAX_RATE;
}

/** `fixed`, when its rates are both whole Hz from 8 to 48 kHz; a config error otherwise. */
export function checkEchoRates(fixed: RealtimeAudioRates): RealtimeAudioRates {
  if (!inRange(fixed.input) || !inRange(fixed.output)) {
    throw new FlowcatError(
      "config",
      `echo: rates must be whole Hz from ${MIN_RATE} to ${MAX_RATE} (got ${fixed.input} in, ` +
        `${fixed.output} out)`,
    );
  }
  return fixed;
}

/**
 * The rates on a leg of `legRate` Hz: `fixed` when given, else the leg's own both ways (8-48
 * kHz), else 16 kHz in and 24 kHz out.
 */
export function echoRatesOn(legRate: number, fixed?: RealtimeAudioRates): RealtimeAudioRates {
  // Not a leg rate (0): the hosted models' rates.
  if (fixed !== undefined) return fixed;
  return inRange(legRate)
    ? { input: legRate, output: legRate }
    : { input: ECHO_INPUT_RATE, output: ECHO_OUTPUT_RATE };
}

/**
 * The `rates` option of a config: `"leg"` (or left out) takes the leg's own rate (undefined
 * here), `"IN/OUT"` in Hz fixes them (`"16000/24000"`: a hosted model's resampling chain).
 *
 * @example
 * ```ts
 * echoRatesOption("16000/24000"); // { input: 16000, output: 24000 }
 * ```
 */
export function echoRatesOption(value: unknown): RealtimeAudioRates | undefined {
  if (value === undefined || value === "leg") return undefined;
  const m = typeof value === "string" ? /^(\d+)\/(\d+)$/.exec(value) : null;
  if (m === null || !inRange(Number(m[1])) || !inRange(Number(m[2]))) {
    throw new FlowcatError(
      "config",
      `echo: options.rates must be "leg" or "IN/OUT" in Hz from ${MIN_RATE} to ${MAX_RATE}, ` +
        `such as "16000/24000"`,
    );
  }
  return { input: Number(m[1]), output: Number(m[2]) };
}

/**
 * The echo's voice from its input rate to its output rate, streaming. The same rate: the samples
 * as they are. 16 -> 24 kHz in frame mode: linear interpolation (a loopback for load tests needs
 * no more, at a small fraction of a filter's cost; the echo's resampling is not Flowcat's).
 * Otherwise the cheaper centered filter, made on first use.
 */
export class EchoVoiceRate {
  readonly #in: number;
  readonly #out: number;
  readonly #interpolate: boolean;
  #down: Resampler | undefined;
  /** Interpolation: the last input sample, so it runs on across frames. */
  #last = 0;

  /** From `rates.input` to `rates.output`; `frameMode`: interpolate 16 -> 24 kHz. */
  constructor(rates: RealtimeAudioRates, frameMode: boolean) {
    this.#in = rates.input;
    this.#out = rates.output;
    this.#interpolate = frameMode && this.#in === ECHO_INPUT_RATE &&
      this.#out === ECHO_OUTPUT_RATE;
  }

  /** `pcm` at the output rate (`pcm` itself when the rates are the same). */
  convert(pcm: Int16Array): Int16Array {
    if (this.#in === this.#out) return pcm;
    if (this.#interpolate) return this.#interpolated(pcm);
    this.#down ??= new Resampler(this.#in, this.#out, { transition: "centered" });
    return this.#down.process(pcm);
  }

  /** 16 -> 24 kHz, one sample behind (it needs the next one). Two samples in, three out. */
  #interpolated(pcm: Int16Array): Int16Array {
    const out = new Int16Array((pcm.length * 3) >> 1);
    let prev = this.#last;
    let j = 0;
    for (let i = 0; i + 1 < pcm.length; i += 2) {
      const a = pcm[i];
      const b = pcm[i + 1];
      out[j++] = prev + ((a - prev) * 2) / 3; // positions 2/3 apart, from the held sample on
      out[j++] = a + (b - a) / 3;
      out[j++] = b;
      prev = b;
    }
    this.#last = prev;
    return out;
  }
}

/** What the local voice said (a chime when it said nothing), at `rate`. */
export function spokenAt(audio: AudioFrame | undefined, rate: number): Int16Array {
  if (audio === undefined) return chime(rate);
  if (audio.sampleRate === rate) return audio.pcm;
  return new Resampler(audio.sampleRate, rate).process(audio.pcm);
}

/** Two short rising tones (0.4 s) at `rate`: the greeting when no TTS is available. */
function chime(rate: number): Int16Array {
  const samples = Math.round(rate / 5);
  const a = sine({ freq: 660, sampleRate: rate, samples, amplitude: 6000 });
  const b = sine({ freq: 880, sampleRate: rate, samples, amplitude: 6000 });
  return concatInt16([a, b]);
}
