/**
 * The sample rates a speech-to-speech call runs at, agreed between the leg and the model.
 *
 * The leg carries one rate (8 kHz on a carrier WebSocket or SIP, the codec's on WebRTC). The
 * model is asked once, before it connects, which rates it takes and speaks on such a leg
 * ({@link RealtimeLlm.audioRates}); a model that does not say gets 16 kHz in and speaks 24 kHz.
 * The pipeline's input rate is then the model's input rate and its output rate the model's
 * output rate. Everything between the input and the model (echo canceller, answering-machine
 * detector, recorder) works at any rate from 8 to 48 kHz, so it does not constrain the choice.
 *
 * A resampler exists only where two rates differ, made on the first frame that needs it: the
 * input's (leg -> model input), the output transport's (model output -> leg). So a call whose
 * model takes and speaks the leg's own rate builds none, and its audio is what the leg carried.
 * @module
 */

import { FlowcatError } from "./errors.ts";
import { DEFAULT_REALTIME_RATES, type RealtimeAudioRates, type RealtimeLlm } from "./seams.ts";

/** Lowest and highest rate a call's audio may run at, Hz. */
const MIN_RATE = 8000;
const MAX_RATE = 48000;

/**
 * The rates `model` takes and speaks on a leg at `legRate` Hz: its own answer, else
 * {@link DEFAULT_REALTIME_RATES}. A model that answers a rate outside 8-48 kHz is a bug in
 * its client, said as such.
 *
 * @example
 * ```ts
 * import { EchoRealtime } from "@flowcat/flowcat/realtime/echo";
 * import { s2sRates } from "@flowcat/flowcat";
 * s2sRates(new EchoRealtime(), 8000); // { input: 8000, output: 8000 }
 * ```
 */
export function s2sRates(model: RealtimeLlm, legRate: number): RealtimeAudioRates {
  const rates = model.audioRates?.(legRate) ?? DEFAULT_REALTIME_RATES;
  for (const r of [rates.input, rates.output]) {
    if (!Number.isInteger(r) || r < MIN_RATE || r > MAX_RATE) {
      throw new FlowcatError(
        "config",
        `realtime model: audio rates must be whole Hz from ${MIN_RATE} to ${MAX_RATE} ` +
          `(got ${rates.input} in, ${rates.output} out)`,
      );
    }
  }
  return { input: rates.input, output: rates.output };
}
