/**
 * Bench group `aec`: the echo canceller's CPU per 20 ms frame at 8 and 16 kHz, and its figures
 * over the generated set (bench/aec_set.ts): ERLE after 2 s (with the suppressor, and the linear
 * filter alone), convergence time to 25 dB, false barge-ins (VAD starts on echo alone) without
 * and with cancelling, true barge-ins detected and their delay.
 * @module
 */

import { EchoCanceller } from "../core/audio/aec.ts";
import { percentile } from "./core.ts";
import { aecCases, convergenceSecs, erleDb, vadStarts } from "./aec_set.ts";

const r = (x: number, digits = 4) => Number(x.toPrecision(digits));

/** The canceller over `mic`/`ref` in 20 ms frames: output aligned to the input, ms per frame. */
function run(mic: Int16Array, ref: Int16Array, rate: number, suppress = true) {
  const aec = new EchoCanceller({ sampleRate: rate, suppress });
  const n = rate / 50, out = new Int16Array(mic.length), ms: number[] = [];
  for (let i = 0; i + n <= mic.length; i += n) {
    const t0 = performance.now();
    aec.process(mic.subarray(i, i + n), ref.subarray(i, i + n), out.subarray(i, i + n));
    ms.push(performance.now() - t0);
  }
  return { out: out.slice(aec.latency), ms };
}

/** Results of the `aec` group; undefined where espeak-ng cannot run. */
export async function runAecBench(quick: boolean): Promise<Record<string, unknown> | undefined> {
  const cpu: Record<string, unknown> = {};
  const cases: Record<string, unknown>[] = [];
  let falseRaw = 0, falseAec = 0, detected = 0, total = 0;
  const delays: number[] = [];
  for (const rate of [8000, 16000]) {
    const set = await aecCases(rate);
    if (set === undefined) return undefined;
    // CPU: double talk (adaptation, detector and suppressor all busy), repeated, warm.
    const heavy = set[set.length - 1];
    const ms: number[] = [];
    for (let k = 0; k < (quick ? 2 : 6); k++) ms.push(...run(heavy.micTalk, heavy.ref, rate).ms);
    const warm = ms.slice(ms.length / (quick ? 2 : 6));
    cpu[`${rate / 1000}k`] = {
      ms_per_20ms_frame: { p50: r(percentile(warm, 50)), p99: r(percentile(warm, 99)) },
      frames: warm.length,
    };
    for (const c of set) {
      const single = run(c.micEcho, c.ref, rate).out;
      const linear = run(c.micEcho, c.ref, rate, false).out;
      const talk = run(c.micTalk, c.ref, rate).out;
      const end = single.length, mic = c.micEcho.subarray(0, end);
      const raw = vadStarts(c.micEcho, rate).length, aec = vadStarts(single, rate).length;
      const onset = c.talkStart / rate;
      const starts = vadStarts(talk, rate);
      const hit = starts.length > 0 && starts[0] >= onset && starts[0] - onset <= 1;
      falseRaw += raw;
      falseAec += aec;
      total++;
      if (hit) {
        detected++;
        delays.push(starts[0] - onset);
      }
      cases.push({
        name: c.name,
        erle_db: r(erleDb(mic, single, 2 * rate, end), 3),
        linear_erle_db: r(erleDb(mic, linear, 2 * rate, end), 3),
        converged_25db_s: convergenceSecs(mic, single, rate, 25),
        converged_20db_s: convergenceSecs(mic, single, rate, 20),
        false_barge_ins_without: raw,
        false_barge_ins_with: aec,
        barge_in_delay_s: hit ? r(starts[0] - onset, 3) : null,
      });
    }
  }
  // The far end's clock 100 ppm fast: the figures are not met there yet (docs/audio.md).
  const drift: Record<string, unknown>[] = [];
  for (const c of await aecCases(8000, [120, 300], { driftPpm: 100 }) ?? []) {
    const single = run(c.micEcho, c.ref, c.rate).out;
    const talk = run(c.micTalk, c.ref, c.rate).out;
    const mic = c.micEcho.subarray(0, single.length), onset = c.talkStart / c.rate;
    const starts = vadStarts(talk, c.rate);
    drift.push({
      name: c.name,
      erle_db: r(erleDb(mic, single, 2 * c.rate, single.length), 3),
      converged_25db_s: convergenceSecs(mic, single, c.rate, 25),
      false_barge_ins_with: vadStarts(single, c.rate).length,
      barge_in_delay_s: starts.length > 0 && starts[0] >= onset && starts[0] - onset <= 1
        ? r(starts[0] - onset, 3)
        : null,
    });
  }
  return {
    cpu,
    cases,
    drift_100ppm: drift,
    summary: {
      cases: total,
      min_erle_db: Math.min(...cases.map((c) => c.erle_db as number)),
      converged_25db_within_2s: cases.filter((c) => (c.converged_25db_s as number) <= 2).length,
      false_barge_ins_without: falseRaw,
      false_barge_ins_with: falseAec,
      true_barge_ins_detected: `${detected}/${total}`,
      barge_in_delay_s: { p50: r(percentile(delays, 50), 3), max: r(Math.max(...delays), 3) },
    },
  };
}
