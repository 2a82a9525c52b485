/**
 * The VAD columns of bench group `aec`: besides the bench's own energy VAD (bench/aec_set.ts
 * `vadStarts`), each case's outputs go through the VADs a call may run, and each gets its own
 * false barge-ins (without and with cancelling), true barge-ins heard within 1 s of the caller's
 * onset, and detection delay:
 *
 * - `energy_server`: the energy VAD as the agent server's cascaded pipeline builds it (start
 *   window `turns.barge_in_ms`, stop after `turns.pause_ms`, both at their defaults).
 * - `silero`: Silero v5 (the model in `@ricky0123/vad-web`) with the default VAD parameters, as
 *   `SileroVad.create()` gives it to an embedder; skipped when the model cannot be loaded.
 *
 * The server's speech-to-speech pipeline (its default) runs no VAD of its own: the model's
 * server-side VAD hears the cancelled audio, and cannot be measured here.
 * @module
 */

import { EnergyVad } from "../core/audio/vad_energy.ts";
import { loadSileroModel, SileroVad } from "../core/audio/vad_silero.ts";
import { DEFAULT_VAD_PARAMS, type VadState } from "../core/frames.ts";
import type { VadAnalyzer } from "../core/seams.ts";
import { DEFAULT_BARGE_IN, DEFAULT_TURN_WINDOWS } from "../core/turn_end.ts";
import { percentile } from "./core.ts";

/** One VAD under test: a fresh or reset analyzer per signal. */
interface VadUnderTest {
  name: string;
  /** An analyzer in state quiet for a signal at `rate`. */
  fresh(rate: number): VadAnalyzer;
  close?(): Promise<void>;
}

/** What one VAD made of one case. */
export interface VadCaseFigures {
  /** VAD starts on the echo alone, without the canceller. */
  false_barge_ins_without: number;
  /** VAD starts on the cancelled echo alone, or before the caller spoke. */
  false_barge_ins_with: number;
  /** Seconds from the caller's onset to the first start within 1 s of it; null: missed. */
  barge_in_delay_s: number | null;
}

const r3 = (x: number) => Number(x.toPrecision(3));

/** Times (seconds) at which `vad` starts speech over `pcm`, in 20 ms frames. */
export async function vadStartsWith(
  vad: VadAnalyzer,
  pcm: Int16Array,
  rate: number,
): Promise<number[]> {
  const n = rate / 50, starts: number[] = [];
  let prev: VadState = "quiet";
  for (let i = 0; i + n <= pcm.length; i += n) {
    const s = await vad.analyze({ pcm: pcm.subarray(i, i + n), sampleRate: rate, numChannels: 1 });
    if (s === "speaking" && prev !== "speaking" && prev !== "stopping") starts.push((i + n) / rate);
    prev = s;
  }
  return starts;
}

/** The VADs measured besides the bench's own; Silero only where its model loads. */
async function vadsUnderTest(): Promise<{ vads: VadUnderTest[]; skipped: string[] }> {
  const server = {
    ...DEFAULT_VAD_PARAMS,
    startSecs: DEFAULT_BARGE_IN.startMs / 1000,
    stopSecs: DEFAULT_TURN_WINDOWS.pauseMs / 1000,
  };
  const vads: VadUnderTest[] = [{
    name: "energy_server",
    fresh: (rate) => new EnergyVad({ sampleRate: rate, params: server }),
  }];
  const skipped: string[] = [];
  try {
    const silero = await SileroVad.create({ modelBytes: await loadSileroModel() });
    vads.push({
      name: "silero",
      fresh: () => {
        silero.reset();
        return silero;
      },
      close: () => silero.close(),
    });
  } catch (err) {
    skipped.push(`silero (${err instanceof Error ? err.message : String(err)})`);
  }
  return { vads, skipped };
}

/** Per-VAD tallies over the set. */
interface Tally {
  cases: number;
  falseWithout: number;
  falseWith: number;
  delays: number[];
  missed: string[];
}

/** Runs every extra VAD over each case's signals and sums them up. */
export class AecVadColumns {
  readonly #vads: VadUnderTest[];
  readonly #skipped: string[];
  readonly #tally = new Map<string, Tally>();

  private constructor(vads: VadUnderTest[], skipped: string[]) {
    this.#vads = vads;
    this.#skipped = skipped;
    for (const v of vads) {
      this.#tally.set(v.name, { cases: 0, falseWithout: 0, falseWith: 0, delays: [], missed: [] });
    }
  }

  /** Load the VADs (the Silero model once). */
  static async create(): Promise<AecVadColumns> {
    const { vads, skipped } = await vadsUnderTest();
    return new AecVadColumns(vads, skipped);
  }

  /**
   * One case: `raw` the echo alone, `cancelled` the cancelled echo alone, `talk` the cancelled
   * double talk, the caller starting at `onset` seconds.
   */
  async measure(
    name: string,
    rate: number,
    signals: { raw: Int16Array; cancelled: Int16Array; talk: Int16Array },
    onset: number,
  ): Promise<Record<string, VadCaseFigures>> {
    const out: Record<string, VadCaseFigures> = {};
    for (const v of this.#vads) {
      const t = this.#tally.get(v.name)!;
      const talk = await vadStartsWith(v.fresh(rate), signals.talk, rate);
      const early = talk.filter((s) => s < onset).length;
      const hit = talk.find((s) => s >= onset && s - onset <= 1);
      const fig: VadCaseFigures = {
        false_barge_ins_without: (await vadStartsWith(v.fresh(rate), signals.raw, rate)).length,
        false_barge_ins_with: (await vadStartsWith(v.fresh(rate), signals.cancelled, rate)).length +
          early,
        barge_in_delay_s: hit === undefined ? null : r3(hit - onset),
      };
      t.cases++;
      t.falseWithout += fig.false_barge_ins_without;
      t.falseWith += fig.false_barge_ins_with;
      if (fig.barge_in_delay_s === null) t.missed.push(name);
      else t.delays.push(fig.barge_in_delay_s);
      out[v.name] = fig;
    }
    return out;
  }

  /** The summary per VAD, and the VADs that could not run. */
  summary(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const [name, t] of this.#tally) {
      out[name] = {
        false_barge_ins_without: t.falseWithout,
        false_barge_ins_with: t.falseWith,
        true_barge_ins_detected: `${t.delays.length}/${t.cases}`,
        barge_in_delay_s: t.delays.length === 0
          ? null
          : { p50: r3(percentile(t.delays, 50)), max: r3(Math.max(...t.delays)) },
        missed: t.missed,
      };
    }
    if (this.#skipped.length > 0) out.skipped = this.#skipped;
    return out;
  }

  /** Release the analyzers. */
  async close(): Promise<void> {
    for (const v of this.#vads) await v.close?.();
  }
}
