/**
 * Bench group `aec`: the echo canceller's CPU per 20 ms frame at 8 and 16 kHz, and the issue's
 * figures per condition over the generated set (bench/aec_set.ts): every echo path (synthetic
 * room and handset, sox band-limit, sox small room, living room and speakerphone) at bulk delays
 * of 40-300 ms, with the far end's clock on time and 100 ppm fast and slow, at both rates. Per
 * condition: ERLE after 2 s (with the suppressor, and the linear filter alone), convergence time
 * to 25 dB, false barge-ins (VAD starts on echo alone) without and with cancelling, the true
 * barge-in's detection delay, the caller's level kept over its first second of double talk, the
 * drift followed, and CPU per frame. `failing` lists the conditions that miss a figure.
 * `greeting`: barge-ins in the first two seconds of the agent's speech, before convergence.
 * @module
 */

import { EchoCanceller } from "../core/audio/aec.ts";
import { percentile } from "./core.ts";
import { type AecCase, aecCases, convergenceSecs, erleDb, vadStarts } from "./aec_set.ts";
import { ECHO_PATHS } from "./aec_paths.ts";
import { AecVadColumns } from "./aec_vad.ts";

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
  return { out: out.slice(aec.latency), ms, driftPpm: aec.driftPpm };
}

/** The figures of one condition, and whether it meets the bar. */
function measure(c: AecCase) {
  const rate = c.rate;
  const single = run(c.micEcho, c.ref, rate);
  const linear = run(c.micEcho, c.ref, rate, false).out;
  const talk = run(c.micTalk, c.ref, rate);
  const end = single.out.length, mic = c.micEcho.subarray(0, end);
  const onset = c.talkStart / rate, starts = vadStarts(talk.out, rate);
  const early = starts.filter((t) => t < onset).length;
  const hit = starts.find((t) => t >= onset && t - onset <= 1);
  // How much of the caller's level the canceller keeps over the first second of double talk:
  // the caller is the double-talk output less the single-talk one (the same echo, cancelled).
  let callerIn = 0, callerOut = 0;
  for (let i = c.talkStart; i < Math.min(end, c.talkStart + rate); i++) {
    const a = c.micTalk[i] - c.micEcho[i], b = talk.out[i] - single.out[i];
    callerIn += a * a;
    callerOut += b * b;
  }
  const row = {
    name: c.name,
    erle_db: r(erleDb(mic, single.out, 2 * rate, end), 3),
    linear_erle_db: r(erleDb(mic, linear, 2 * rate, end), 3),
    converged_25db_s: convergenceSecs(mic, single.out, rate, 25),
    false_barge_ins_without: vadStarts(c.micEcho, rate).length,
    false_barge_ins_with: vadStarts(single.out, rate).length + early,
    barge_in_delay_s: hit === undefined ? null : r(hit - onset, 3),
    caller_kept_db: r(10 * Math.log10(callerOut / Math.max(callerIn, 1)), 3),
    drift_followed_ppm: r(single.driftPpm, 3),
    ms_per_frame_p50: r(percentile(talk.ms, 50), 3),
  };
  const misses: string[] = [];
  if (row.erle_db < 25) misses.push("erle");
  if (row.converged_25db_s > 2) misses.push("convergence");
  if (row.false_barge_ins_with > 0) misses.push("false barge-in");
  if (row.barge_in_delay_s === null) misses.push("barge-in missed");
  return { row, misses, outputs: { cancelled: single.out, talk: talk.out } };
}

/**
 * Barge-ins over the greeting: the caller starts talking 0.5, 1 or 2 s into the agent's speech,
 * before the filter has converged, on a leg with no echo at all and on every echo path. Per
 * group: barge-ins detected within 1 s, their delay, and VAD starts before the caller spoke.
 */
async function greetingBargeIns(quick: boolean): Promise<Record<string, unknown>> {
  const groups: Record<string, unknown> = {};
  for (const noEcho of [true, false]) {
    for (const talkAtSecs of [0.5, 1, 2]) {
      let found = 0, n = 0, early = 0;
      const delays: number[] = [];
      for (const rate of quick ? [8000] : [8000, 16000]) {
        // With no echo the path does not matter; the sox paths need sox.
        for (const path of noEcho ? ["room" as const] : ECHO_PATHS) {
          const set = await aecCases(rate, [40, 120, 200, 300], {
            paths: [path],
            talkAtSecs,
            noEcho,
          });
          for (const c of set ?? []) {
            const starts = vadStarts(run(c.micTalk, c.ref, rate).out, rate);
            const onset = c.talkStart / rate;
            early += starts.filter((t) => t < onset).length;
            const hit = starts.find((t) => t >= onset && t - onset <= 1);
            n++;
            if (hit !== undefined) {
              found++;
              delays.push(hit - onset);
            }
          }
        }
      }
      groups[`${noEcho ? "no echo" : "echo"}, caller at ${talkAtSecs} s`] = {
        barge_ins_detected: `${found}/${n}`,
        delay_s: delays.length === 0
          ? null
          : { p50: r(percentile(delays, 50), 3), max: r(Math.max(...delays), 3) },
        false_barge_ins: early,
      };
    }
  }
  return groups;
}

/** Cases of one condition (rate, clock, path) and how they fared. */
interface Group {
  n: number;
  met: number;
  erle: number[];
  delays: number[];
}

/** Results of the `aec` group; undefined where espeak-ng cannot run. */
export async function runAecBench(quick: boolean): Promise<Record<string, unknown> | undefined> {
  const cpu: Record<string, unknown> = {};
  const cases: Record<string, unknown>[] = [];
  const failing: string[] = [];
  const groups: Record<string, Group> = {};
  let falseRaw = 0, falseAec = 0, detected = 0, total = 0;
  const delays: number[] = [];
  const delaysMs = quick ? [40, 300] : [40, 120, 200, 300];
  let soxSkipped = false;
  // The barge-in figures again through the other VADs a call may run: `vads` (bench/aec_vad.ts).
  const vadColumns = await AecVadColumns.create();
  for (const rate of quick ? [8000] : [8000, 16000]) {
    const base = await aecCases(rate);
    if (base === undefined) {
      await vadColumns.close();
      return undefined;
    }
    // CPU: double talk (adaptation, detector and suppressor all busy), repeated, warm.
    const heavy = base[base.length - 1];
    const ms: number[] = [];
    for (let k = 0; k < (quick ? 2 : 6); k++) ms.push(...run(heavy.micTalk, heavy.ref, rate).ms);
    const warm = ms.slice(ms.length / (quick ? 2 : 6));
    cpu[`${rate / 1000}k`] = {
      ms_per_20ms_frame: { p50: r(percentile(warm, 50)), p99: r(percentile(warm, 99)) },
      frames: warm.length,
    };
    for (const driftPpm of [0, 100, -100]) {
      for (const path of ECHO_PATHS) {
        const set = await aecCases(rate, delaysMs, { driftPpm, paths: [path] });
        if (set === undefined) {
          soxSkipped = true;
          continue;
        }
        const key = `${rate / 1000}k ${
          driftPpm === 0 ? "0" : driftPpm > 0 ? "+100" : "-100"
        }ppm ${path}`;
        const g: Group = { n: 0, met: 0, erle: [], delays: [] };
        groups[key] = g;
        for (const c of set) {
          const { row, misses, outputs } = measure(c);
          const signals = { raw: c.micEcho, ...outputs };
          const vads = await vadColumns.measure(c.name, rate, signals, c.talkStart / rate);
          cases.push({ ...row, vads });
          g.n++;
          g.erle.push(row.erle_db);
          total++;
          falseRaw += row.false_barge_ins_without;
          falseAec += row.false_barge_ins_with;
          if (row.barge_in_delay_s !== null) {
            detected++;
            delays.push(row.barge_in_delay_s);
            g.delays.push(row.barge_in_delay_s);
          }
          if (misses.length === 0) g.met++;
          else failing.push(`${row.name}: ${misses.join(", ")}`);
        }
      }
    }
  }
  const conditions: Record<string, unknown> = {};
  for (const [key, g] of Object.entries(groups)) {
    conditions[key] = {
      cases_meeting_every_figure: `${g.met}/${g.n}`,
      min_erle_db: Math.min(...g.erle),
      barge_ins_detected: `${g.delays.length}/${g.n}`,
    };
  }
  const vads = vadColumns.summary();
  await vadColumns.close();
  const greeting = await greetingBargeIns(quick);
  return {
    cpu,
    summary: {
      cases: total,
      cases_meeting_every_figure: total - failing.length,
      min_erle_db: Math.min(...cases.map((c) => c.erle_db as number)),
      converged_25db_within_2s: cases.filter((c) => (c.converged_25db_s as number) <= 2).length,
      false_barge_ins_without: falseRaw,
      false_barge_ins_with: falseAec,
      true_barge_ins_detected: `${detected}/${total}`,
      barge_in_delay_s: { p50: r(percentile(delays, 50), 3), max: r(Math.max(...delays), 3) },
      caller_kept_db: {
        p50: r(percentile(cases.map((c) => c.caller_kept_db as number), 50), 3),
        min: Math.min(...cases.map((c) => c.caller_kept_db as number)),
      },
      sox_paths: soxSkipped ? "skipped (sox cannot run)" : "included",
    },
    vads,
    greeting,
    conditions,
    failing,
    cases,
  };
}
