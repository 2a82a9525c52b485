/**
 * The echo canceller in a call's pipeline, end to end: the bot's audio goes out through
 * TransportOutput (paced), a far end plays it on its own clock and sends its echo back (a
 * speakerphone: bulk delay, a short room response, 10 dB down, G.711 both ways), and the VAD
 * listens behind the canceller. Without the canceller the VAD hears the bot as the caller.
 */

import assert from "node:assert/strict";
import {
  type AudioFrame,
  type Direction,
  EchoCancelProcessor,
  type Frame,
  FrameProcessor,
  type Link,
  makeFrame,
  Pipeline,
  PipelineTask,
  TransportInput,
  TransportOutput,
  VadProcessor,
} from "../mod.ts";
import { EnergyVad } from "../core/audio/vad_energy.ts";
import { ulawDecode, ulawEncode } from "../core/audio/g711.ts";
import { silentLogger } from "../core/log.ts";
import { AGENT_TEXT, espeakAt } from "../bench/aec_set.ts";
import { drive } from "./_core_helpers.ts";
import { FakeLeg } from "./_fake_leg.ts";

const RATE = 8000;

/**
 * A far end on its own steady clock: it plays what it was sent (silence when there is none) and
 * returns its echo, one 20 ms frame per 20 ms of wall time (late timers send what fell due).
 */
class SpeakerphoneLeg extends FakeLeg {
  readonly #queue: number[] = [];
  readonly #history = new Float64Array(RATE); // what was played, the last second
  #played = 0;
  #timer: ReturnType<typeof setInterval> | undefined;
  #t0 = 0;
  readonly #delay: number;

  constructor(delayMs: number) {
    super();
    this.#delay = Math.round((delayMs * RATE) / 1000);
  }

  override sendAudio(audio: AudioFrame): Promise<void> {
    for (const s of ulawDecode(ulawEncode(audio.pcm))) this.#queue.push(s);
    return super.sendAudio(audio);
  }

  start(): void {
    this.#t0 = performance.now();
    this.#timer = setInterval(() => {
      while (this.#played * 20 < performance.now() - this.#t0) this.#frame();
    }, 10);
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  #frame(): void {
    const h = this.#history, n = h.length, pcm = new Int16Array(160);
    for (let i = 0; i < 160; i++) {
      const t = this.#played * 160 + i;
      h[t % n] = this.#queue.length > 0 ? this.#queue.shift()! : 0;
      // The echo: bulk delay, then a direct path and two reflections, about 10 dB down.
      const at = (d: number) => (t - d >= 0 ? h[(t - d) % n] : 0);
      const e = 0.3 * at(this.#delay) - 0.12 * at(this.#delay + 9) + 0.06 * at(this.#delay + 31);
      pcm[i] = Math.round(e + ((t * 7919) % 17) - 8); // and a little line noise
    }
    this.#played++;
    this.feed({
      type: "audio",
      audio: { pcm: ulawDecode(ulawEncode(pcm)), sampleRate: RATE, numChannels: 1 },
    });
  }
}

/** Counts the VAD's starts. */
class StartCounter extends FrameProcessor {
  starts = 0;
  override processFrame(frame: Frame, dir: Direction, link: Link): void {
    if (frame.kind === "VadUserStartedSpeaking") this.starts++;
    link.push(frame, dir);
  }
}

const speech = await espeakAt(AGENT_TEXT, "en-us", RATE);

/** VAD starts while the bot says 7 s of speech over a speakerphone with 160 ms of bulk delay. */
async function falseStarts(echoCancel: boolean): Promise<{ starts: number; erle: number }> {
  const leg = new SpeakerphoneLeg(160);
  const input = new TransportInput(leg);
  const output = new TransportOutput(leg);
  const aec = new EchoCancelProcessor();
  output.onSent((audio, at) => aec.reference(audio, at));
  const counter = new StartCounter("counter");
  const vad = new VadProcessor(new EnergyVad({ sampleRate: RATE }), { turnStrategy: null });
  const head = echoCancel ? [input, aec, vad, counter] : [input, vad, counter];
  const task = new PipelineTask(new Pipeline([...head, output]), {
    idleTimeoutMs: null,
    logger: silentLogger,
    audioInSampleRate: RATE,
    audioOutSampleRate: RATE,
  });
  const pcm = speech!.slice(0, 7 * RATE);
  // Level the bot's voice at about -20 dBFS.
  let ms = 0;
  for (const s of pcm) ms += s * s;
  const g = 3277 / Math.sqrt(ms / pcm.length);
  const bot = pcm.map((s) => Math.max(-32768, Math.min(32767, Math.round(s * g))));
  await drive(task, async () => {
    leg.start();
    await task.queueFrame(
      makeFrame("OutputAudio", { audio: { pcm: bot, sampleRate: RATE, numChannels: 1 } }),
    );
    // Until the bot has finished and its echo has come back.
    await new Promise((r) => setTimeout(r, 7600));
    leg.stop();
    task.cancel("done");
  });
  return { starts: counter.starts, erle: aec.erleDb };
}

Deno.test({
  name: "echo cancel in a call: the bot's echo makes no barge-in with it, and does without",
  ignore: speech === undefined,
  async fn() {
    const without = await falseStarts(false);
    const withAec = await falseStarts(true);
    assert.ok(without.starts >= 1, `the echo alone starts the VAD without the canceller`);
    assert.equal(withAec.starts, 0, `VAD starts with the canceller (ERLE ${withAec.erle} dB)`);
    assert.ok(withAec.erle >= 25, `ERLE ${withAec.erle}`);
  },
});
