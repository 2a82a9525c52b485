/**
 * Warm-up at server start: every engine the config's calls will use is loaded, compiled and run
 * once before the server takes its first call, so that call's greeting is as prompt as any
 * later one's (a cold eSpeak engine alone costs the first greeting most of a second).
 *
 * What is warmed follows the config: the eSpeak NG engine and a synthesis of the greeting when a
 * call speaks with it; the resamplers between the rates of the legs and voices in use (their FIR
 * kernel compiles on first use); the G.711 codecs of carriers and SIP; Opus when the WebRTC
 * playground is on; the voice-activity detector of the cascaded pipeline. A failure is logged and
 * skipped: the call that needs the engine will report it as it always did.
 *
 * @example
 * ```ts
 * declare const config: Parameters<typeof warmEngines>[0];
 * declare const logger: Parameters<typeof warmEngines>[1];
 * const report = await warmEngines(config, logger);
 * // { ms: 412, engines: ["espeak", "resamplers", "g711", "opus", "vad"] }
 * ```
 * @module
 */

import { GraphBrain } from "../core/agent/graph_brain.ts";
import { interpolate } from "../core/agent/interpolate.ts";
import { alawDecode, alawEncode, ulawDecode, ulawEncode } from "../core/audio/g711.ts";
import { sine } from "../core/audio/pcm.ts";
import { Resampler, transitionFor } from "../core/audio/resample.ts";
import { EnergyVad } from "../core/audio/vad_energy.ts";
import { errorMessage } from "../core/errors.ts";
import type { Logger } from "../core/log.ts";
import type { AgentServerConfig } from "./config.ts";

/** What warm-up did. */
export interface WarmReport {
  /** Milliseconds it took. */
  ms: number;
  /** The engines warmed, in order. */
  engines: string[];
  /** Engines that failed to warm (each logged once). */
  failed: string[];
}

/** The rate of calls' carrier legs (G.711 over WebSocket and SIP). */
const CARRIER_RATE = 8000;
/** The rate of the WebRTC leg (Opus). */
const WEBRTC_RATE = 48000;
/** The rate the pipeline takes caller audio at. */
const PIPELINE_IN_RATE = 16000;
/** A realtime model's voice rate. */
const REALTIME_OUT_RATE = 24000;
/** eSpeak NG's own rate. */
const ESPEAK_RATE = 22050;

/** True when the config's calls speak with the local eSpeak NG engine. */
export function usesEspeak(config: AgentServerConfig): boolean {
  const { realtime: rt, tts } = config.providers;
  if (config.pipeline === "cascaded") return tts?.name === "espeak";
  return rt?.name === "echo" && rt.options.tts !== "none";
}

/** The rate the config's calls produce the bot's voice at. */
function voiceRate(config: AgentServerConfig): number | undefined {
  if (config.pipeline !== "cascaded") return REALTIME_OUT_RATE;
  return config.providers.tts?.name === "espeak" ? ESPEAK_RATE : undefined;
}

/** The greeting as the first call will say it (a graph's seed variables filled in). */
function greetingText(config: AgentServerConfig): string {
  const a = config.agent;
  if (a.greeting === undefined) return "Hello.";
  if (a.kind !== "graph") return a.greeting;
  return interpolate(a.greeting, new GraphBrain(a.spec, { vars: a.vars }).collectedVars());
}

/** Load and run once every engine `config`'s calls use (see the module doc). */
export async function warmEngines(config: AgentServerConfig, logger: Logger): Promise<WarmReport> {
  const t0 = performance.now();
  const report: WarmReport = { ms: 0, engines: [], failed: [] };
  const step = async (name: string, run: () => unknown) => {
    try {
      await run();
      report.engines.push(name);
    } catch (err) {
      report.failed.push(name);
      logger.warn("warm-up failed", { engine: name, error: errorMessage(err) });
    }
  };
  const webrtc = config.playground.enabled;
  if (usesEspeak(config)) {
    await step("espeak", async () => {
      const { espeakSynthesize } = await import("../providers/espeak/tts.ts");
      await espeakSynthesize(greetingText(config));
    });
  }
  await step("resamplers", () => warmResamplers(config, webrtc));
  await step("g711", warmG711);
  if (webrtc) {
    await step("opus", async () => {
      const { OpusCodec, OPUS_FRAME, OPUS_RATE } = await import("../core/audio/opus.ts");
      const codec = await OpusCodec.create();
      try {
        const pcm = sine({
          freq: 440,
          sampleRate: OPUS_RATE,
          samples: OPUS_FRAME,
          amplitude: 4000,
        });
        codec.decode(codec.encode(pcm));
      } finally {
        codec.close();
      }
    });
  }
  if (config.pipeline === "cascaded") await step("vad", warmVad);
  report.ms = Math.round(performance.now() - t0);
  return report;
}

/** One 20 ms frame through every rate change the legs and voices of `config` make. */
function warmResamplers(config: AgentServerConfig, webrtc: boolean): void {
  const legs = [CARRIER_RATE, ...(webrtc ? [WEBRTC_RATE] : [])];
  const voice = voiceRate(config);
  const pairs: [number, number][] = [];
  for (const leg of legs) {
    pairs.push([leg, PIPELINE_IN_RATE]);
    if (voice !== undefined && voice !== leg) pairs.push([voice, leg]);
  }
  // A cascaded pipeline's transcriber may want 16 kHz from a voice-rate recorder mix too; the
  // pairs above are the ones every call makes.
  for (const [from, to] of pairs) {
    const r = new Resampler(from, to, { transition: transitionFor(from, to) });
    r.process(sine({ freq: 440, sampleRate: from, samples: from / 50, amplitude: 4000 }));
  }
}

function warmG711(): void {
  const pcm = sine({ freq: 440, sampleRate: CARRIER_RATE, samples: 160, amplitude: 4000 });
  ulawDecode(ulawEncode(pcm));
  alawDecode(alawEncode(pcm));
}

function warmVad(): void {
  const vad = new EnergyVad({ sampleRate: PIPELINE_IN_RATE });
  const pcm = sine({ freq: 300, sampleRate: PIPELINE_IN_RATE, samples: 320, amplitude: 6000 });
  for (let i = 0; i < 20; i++) {
    vad.analyze({ pcm, sampleRate: PIPELINE_IN_RATE, numChannels: 1 });
  }
}
