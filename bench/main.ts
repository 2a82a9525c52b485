/**
 * `deno task bench`: runs the benchmarks and writes JSON under bench/results/.
 * Options: --only routing|demo|memory|audio|aec|fft|srtp|webrtc|turns|bargein|capacity|observe|
 * guard (repeatable), --quick (fewer runs).
 *
 * routing, demo, memory and audio go to `core-<host>.json`; aec, fft, webrtc, turns, bargein and
 * capacity write their own file (`aec-<host>.json`, `fft-<host>.json`, `webrtc-<host>.json`,
 * `turns-<host>.json`, `bargein-<host>.json`, `capacity-<host>.json`) and leave a pointer in the
 * core file, which is written only when one of its own groups ran (so `--only webrtc` does not
 * wipe it). `observe` (server CPU per frame unobserved vs traced and scraped) and `guard` (CPU per
 * media message through the connection guard, written to `guard-<host>.json`) run only when named.
 * @module
 */

import { parseArgs } from "node:util";
import { runAecBench } from "./aec.ts";
import { runAudioBench } from "./audio.ts";
import { runFftBench } from "./fft.ts";
import { runCapacityBench, writeCapacityResults } from "./capacity.ts";
import { runGuardBench } from "./guard.ts";
import { runObserveBench } from "./capacity_observe.ts";
import { benchDemo, benchIdleMemory, benchRouting } from "./core.ts";
import { runBargeInBench } from "./bargein.ts";
import { runTurnsBench } from "./turns.ts";
import { runWebRtcBench } from "./webrtc.ts";
import { runSrtpBench } from "./srtp.ts";
import { runSrtpCallsBench } from "./srtp_calls.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    only: { type: "string", multiple: true },
    quick: { type: "boolean" },
    help: { type: "boolean", short: "h" },
  },
});
if (values.help) {
  console.log(
    "Usage: deno task bench [--only routing|demo|memory|audio|aec|fft|srtp|webrtc|turns|bargein|capacity|" +
      "observe|guard]... [--quick]",
  );
  Deno.exit(0);
}
const want = (name: string) => !values.only || values.only.includes(name);
const quick = values.quick === true;
const host = Deno.hostname();
const command = `deno task bench ${Deno.args.join(" ")}`.trim();
const machine = {
  host,
  os: Deno.build.os,
  arch: Deno.build.arch,
  cpus: navigator.hardwareConcurrency,
  memory_bytes: Deno.systemMemoryInfo().total,
};
const result: Record<string, unknown> = {
  command,
  date: new Date().toISOString(),
  machine,
  deno: Deno.version,
  reference: {
    design_bare_async_loop_us_per_hop: 0.037,
    rust_original_us_per_hop: 0.029,
    pipecat_2core_us_per_hop: [14, 33],
    pipecat_2core_idle_task_bytes: 195 * 1024,
  },
};
if (want("routing")) {
  console.error("bench: routing cost (20,000 frames through 1, 5, 12 processors)...");
  result.routing = await benchRouting(20000, quick ? 5 : 15);
}
if (want("demo")) {
  console.error("bench: demo pipeline wall time...");
  result.demo = await benchDemo(quick ? 10 : 30);
}
if (want("memory")) {
  console.error("bench: memory per idle 5-processor task (1,000 tasks)...");
  result.idle_memory = await benchIdleMemory(1000);
}
/**
 * Write a group's results to `bench/results/<name>-<host>.json` with the command, machine and
 * load beside them (other work on the machine shows in per-frame timings); returns the path.
 */
async function writeGroup(name: string, results: unknown): Promise<string> {
  const file = `bench/results/${name}-${host}.json`;
  const load = Deno.permissions.querySync({ name: "sys", kind: "loadavg" }).state === "granted"
    ? Deno.loadavg()
    : undefined;
  const doc = {
    command,
    date: new Date().toISOString(),
    machine,
    load_average_1_5_15m: load,
    deno: Deno.version,
    [name]: results,
  };
  await Deno.writeTextFile(file, JSON.stringify(doc, null, 2) + "\n");
  console.error(`bench: wrote ${file}`);
  return file;
}

if (want("audio")) {
  console.error("bench: audio path (codecs, resamplers, VAD, noise filter, recorder)...");
  result.audio = await runAudioBench(quick);
}
if (want("aec")) {
  console.error(
    "bench: aec (echo canceller CPU per frame, ERLE, barge-ins over the speech set)...",
  );
  const aec = await runAecBench(quick);
  if (aec === undefined) console.error("bench: aec skipped (espeak-ng cannot run)");
  else {
    const file = await writeGroup("aec", aec);
    result.aec = { file, cpu: aec.cpu, summary: aec.summary };
  }
}
if (want("fft")) {
  console.error("bench: fft (the canceller's real FFT, WebAssembly SIMD and JavaScript)...");
  const fft = runFftBench(quick);
  result.fft = { file: await writeGroup("fft", fft), sizes: fft.sizes };
}
if (want("webrtc")) {
  console.error("bench: WebRTC leg (Opus and G.711 per 20 ms frame, jitter buffer, resamplers)...");
  const webrtc = await runWebRtcBench(quick);
  const file = await writeGroup("webrtc", webrtc);
  const opus = webrtc.opus as { decode_plus_encode_ms: { p50: number } };
  const leg = webrtc.leg_per_call_frame as { opus_48k: { total_ms: { p50: number } } };
  result.webrtc = {
    file,
    opus_decode_plus_encode_ms_p50: opus.decode_plus_encode_ms.p50,
    opus_leg_ms_per_call_frame_p50: leg.opus_48k.total_ms.p50,
  };
}
if (want("srtp")) {
  console.error("bench: SRTP protect + unprotect per 20 ms G.711 packet, then calls on/off...");
  const srtp = runSrtpBench(quick);
  const calls = await runSrtpCallsBench(quick);
  const file = await writeGroup("srtp", { ...srtp, calls });
  const s80 = srtp.AES_CM_128_HMAC_SHA1_80 as { protect_plus_unprotect_us: { p50: number } };
  result.srtp = {
    file,
    protect_plus_unprotect_us_p50: s80.protect_plus_unprotect_us.p50,
    calls_srtp_over_plain_cpu_ratio_p50: calls.srtp_over_plain_ratio_p50,
  };
}
if (want("turns")) {
  console.error("bench: turns (caller's last word to the bot's first audio; minutes)...");
  const turns = await runTurnsBench(quick);
  const file = await writeGroup("turns", turns);
  const pick = (name: string) => {
    const c = turns.cases[name] as
      | { last_word_to_first_audio_ms?: { p50: number }; premature_rate: number }
      | undefined;
    return c &&
      { first_audio_ms_p50: c.last_word_to_first_audio_ms?.p50, premature_rate: c.premature_rate };
  };
  result.turns = {
    file,
    fixed_800ms_instant: pick("fixed_800ms_instant"),
    adaptive_instant: pick("adaptive_instant"),
  };
}
if (want("bargein")) {
  console.error("bench: bargein (caller's onset to our last agent frame, false barge-ins)...");
  const bargein = await runBargeInBench(quick);
  const file = await writeGroup("bargein", bargein);
  const pick = (name: string) => {
    const c = bargein.cases[name] as
      | { onset_to_last_agent_frame_ms?: { p50: number }; false_barge_ins: number }
      | undefined;
    return c && {
      onset_to_last_agent_frame_ms_p50: c.onset_to_last_agent_frame_ms?.p50,
      false_barge_ins: c.false_barge_ins,
    };
  };
  result.bargein = {
    file,
    twilio_confirm_only: pick("twilio_confirm_only"),
    twilio_hold: pick("twilio_hold"),
    sip_hold: pick("sip_hold"),
  };
}
if (want("capacity")) {
  console.error("bench: capacity (concurrent Twilio calls through a server child; minutes)...");
  const capacity = await runCapacityBench({
    ...(quick ? { calls: [10, 100], durationS: 3, up: false } : {}),
    floor: true,
    command: `deno task bench ${Deno.args.join(" ")}`.trim(),
  });
  const paths = await writeCapacityResults(capacity);
  result.capacity = { file: paths.json, saturated_at: capacity.saturated_at };
  console.error(`bench: wrote ${paths.json} and ${paths.svg}`);
}
if (values.only?.includes("observe")) {
  console.error(
    "bench: observing cost (capacity point unobserved vs traced + scraped; minutes)...",
  );
  const command = `deno task bench ${Deno.args.join(" ")}`.trim();
  const observe = await runObserveBench(
    quick
      ? { calls: 100, durationS: 5, rounds: 2, command }
      : { calls: 200, durationS: 10, rounds: 8, command },
  );
  const path = `bench/results/observe-${host}.json`;
  await Deno.writeTextFile(path, JSON.stringify(observe, null, 2) + "\n");
  result.observe = {
    file: path,
    off_us_per_frame: observe.off_median,
    on_us_per_frame: observe.on_median,
    ratio: observe.ratio,
    ratio_spread: observe.ratio_spread,
  };
  const s = observe.ratio_spread;
  console.error(
    `bench: observe: ${observe.off_median} us/frame unobserved, ${observe.on_median} observed; ` +
      `per-pair on/off median x${observe.ratio} (quartiles ${s.p25}..${s.p75}, ` +
      `range ${s.min}..${s.max}); wrote ${path}`,
  );
}
if (values.only?.includes("guard")) {
  console.error("bench: connection guard (CPU per media message with and without it)...");
  const guard = await runGuardBench(quick);
  const file = await writeGroup("guard", guard);
  result.guard = { file, guard_cpu_us_per_message: guard.guard_cpu_us_per_message };
}
type Routing = Record<
  string,
  { us_per_hop: { p50: number }; us_per_hop_marginal: { p50: number } }
>;
const routing = result.routing as Routing | undefined;
if (routing) {
  const p50 = routing["input_audio_5_hops"].us_per_hop.p50;
  result.ratios = {
    pipecat_over_flowcat_low: 14 / p50,
    pipecat_over_flowcat_high: 33 / p50,
    flowcat_over_rust: p50 / 0.029,
    pipecat_measured: await pipecatRatios(routing),
  };
}
const coreGroups = ["routing", "demo", "memory", "audio"];
if (coreGroups.some(want)) {
  const path = `bench/results/core-${host}.json`;
  await Deno.writeTextFile(path, JSON.stringify(result, null, 2) + "\n");
  console.error(`bench: wrote ${path}`);
}
console.log(JSON.stringify(result, null, 2));

/**
 * Ratios against pipecat measured on this host by bench/pipecat_routing.py (its JSON, when
 * present): pipecat's marginal p50 per hop over our whole p50 per hop (which still includes the
 * task's injection of each frame: the conservative side; our marginal, a small difference of two
 * noisy times with depth-first hops, is not a stable divisor), per chain length and
 * profile.
 */
async function pipecatRatios(routing: Routing): Promise<Record<string, unknown> | string> {
  const file = `bench/results/pipecat-${host}.json`;
  let measured: {
    pipecat_commit?: string;
    pipecat: Record<string, { us_per_hop_marginal_p50: Record<string, number> }>;
  };
  try {
    measured = JSON.parse(await Deno.readTextFile(file));
  } catch {
    return `no ${file}: run bench/pipecat_routing.py on this host (see its header)`;
  }
  const out: Record<string, unknown> = { file, pipecat_commit: measured.pipecat_commit };
  for (const [profile, numbers] of Object.entries(measured.pipecat)) {
    const ratios: Record<string, number> = {};
    for (const hops of [1, 5, 12]) {
      const theirs = numbers.us_per_hop_marginal_p50[`${hops}_hops`];
      const ours = routing[`input_audio_${hops}_hops`].us_per_hop.p50;
      if (theirs > 0 && ours > 0) ratios[`${hops}_hops`] = Math.round((theirs / ours) * 10) / 10;
    }
    out[profile] = ratios;
  }
  return out;
}
