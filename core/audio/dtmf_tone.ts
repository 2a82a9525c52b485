/**
 * DTMF tone generator: 16-bit PCM for a list of keys, each a two-tone burst followed by a gap.
 *
 * @example
 * ```ts
 * import { dtmfTones } from "@flowcat/flowcat/audio";
 * const pcm = dtmfTones("123#", { sampleRate: 8000, toneMs: 80, gapMs: 60 });
 * pcm.length; // 4 * (640 + 480)
 * ```
 * @module
 */

import { FlowcatError } from "../errors.ts";
import type { KeypadEntry } from "../frames.ts";
import { DTMF_FREQS, parseDtmfKeys } from "./dtmf_keys.ts";

/** Options of {@link dtmfTones}. */
export interface DtmfToneOptions {
  /** Samples per second (default 8000). */
  sampleRate?: number;
  /** Tone length per key in ms (default 100). */
  toneMs?: number;
  /** Silence after each key in ms (default 100). */
  gapMs?: number;
  /** Silence before the first key in ms (default 0). */
  leadMs?: number;
  /** Peak amplitude of the low (row) tone in sample units (default 8000, about -12 dBFS). */
  amplitude?: number;
  /** Level of the high tone relative to the low one, in dB (default 0; real phones use ~+2). */
  twistDb?: number;
}

/**
 * PCM for `keys` (a string such as `"12#"` or a key list): per key `toneMs` of
 * `A·sin(2π f_low t) + A·10^(twistDb/20)·sin(2π f_high t)`, then `gapMs` of silence.
 * Invalid keys throw a {@link FlowcatError} (`config`).
 */
export function dtmfTones(
  keys: string | readonly KeypadEntry[],
  opts: DtmfToneOptions = {},
): Int16Array {
  const rate = opts.sampleRate ?? 8000;
  const toneMs = opts.toneMs ?? 100;
  const gapMs = opts.gapMs ?? 100;
  const lead = Math.round(((opts.leadMs ?? 0) * rate) / 1000);
  const ampLow = opts.amplitude ?? 8000;
  const ampHigh = ampLow * 10 ** ((opts.twistDb ?? 0) / 20);
  if (!(rate > 0) || !(toneMs >= 0) || !(gapMs >= 0) || !(lead >= 0)) {
    throw new FlowcatError("config", "dtmf: rate must be positive and durations non-negative");
  }
  if (ampLow + ampHigh > 32767) {
    throw new FlowcatError("config", "dtmf: amplitude and twist would clip (sum over 32767)");
  }
  const list = parseDtmfKeys(keys);
  const tone = Math.round((toneMs * rate) / 1000);
  const gap = Math.round((gapMs * rate) / 1000);
  const out = new Int16Array(lead + list.length * (tone + gap));
  let o = lead;
  for (const key of list) {
    const [fl, fh] = DTMF_FREQS[key];
    const wl = (2 * Math.PI * fl) / rate;
    const wh = (2 * Math.PI * fh) / rate;
    for (let n = 0; n < tone; n++) {
      out[o + n] = Math.round(ampLow * Math.sin(wl * n) + ampHigh * Math.sin(wh * n));
    }
    o += tone + gap;
  }
  return out;
}
