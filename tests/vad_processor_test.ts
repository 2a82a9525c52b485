import assert from "node:assert/strict";
import {
  type AudioFrame,
  type Direction,
  type Frame,
  FrameProcessor,
  inputAudio,
  type Link,
  makeFrame,
  type MediaIn,
  type MediaTransport,
  Pipeline,
  PipelineTask,
  type VadAnalyzer,
  type VadParams,
  type VadState,
} from "../mod.ts";
import { VadProcessor, type VadProcessorOptions } from "../core/processors/vad.ts";
import { DefaultTurnStrategy, TurnProcessor } from "../core/processors/turn.ts";
import { TransportOutput } from "../core/processors/transport.ts";
import { EnergyVad } from "../core/audio/vad_energy.ts";
import { SileroVad } from "../core/audio/vad_silero.ts";
import { concatInt16, dbfs, noise, sine } from "../core/audio/pcm.ts";
import { resample } from "../core/audio/resample.ts";
import { decodeWav } from "../core/audio/wav.ts";
import { silentLogger } from "../core/log.ts";
import { drive, until } from "./_core_helpers.ts";

const RATE = 16000;
const FRAME = RATE / 50;

const silence = (secs: number) => new Int16Array(Math.round(secs * RATE));

/** Speech-like test signal: a noise burst and a tone burst with silence around them. */
function bursts(): { pcm: Int16Array; on: [number, number][] } {
  const pcm = concatInt16([
    silence(0.5),
    noise(0.6 * RATE, 8000, 3),
    silence(1.2),
    sine({ freq: 300, sampleRate: RATE, samples: 0.8 * RATE, amplitude: 6000 }),
    silence(1.2),
  ]);
  // Frame indexes (20 ms) where each burst starts and ends.
  return { pcm, on: [[25, 55], [115, 155]] };
}

function frames(pcm: Int16Array, rate = RATE): Frame[] {
  const step = rate / 50;
  const out: Frame[] = [];
  for (let i = 0; i < pcm.length; i += step) {
    out.push(inputAudio({ pcm: pcm.subarray(i, i + step), sampleRate: rate, numChannels: 1 }));
  }
  return out;
}

/** Pipeline end: every frame that reaches it downstream, Interruption (a hook) included. */
class Sink extends FrameProcessor {
  readonly frames: Frame[] = [];
  override processFrame(frame: Frame, dir: Direction, link: Link) {
    if (dir === "downstream") this.frames.push(frame);
    link.push(frame, dir);
  }
  override onInterruption() {
    this.frames.push(makeFrame("Interruption", {}));
  }
}

/** Sits after the VAD like an output transport: can speak (broadcast) and counts interruptions. */
class BotSide extends FrameProcessor {
  link?: Link;
  interruptions = 0;
  override start(_s: unknown, _p: unknown, link: Link) {
    this.link = link;
  }
  override onInterruption() {
    this.interruptions++;
  }
}

interface Run {
  /** Frames that reached the end of the pipeline, in order. */
  down: Frame[];
  /** Kinds that reached the source travelling upstream. */
  up: string[];
  bot: BotSide;
}

async function run(
  vad: VadProcessor,
  input: Frame[],
  opts: { botSpeaking?: boolean; between?: () => Promise<void> } = {},
): Promise<Run> {
  const bot = new BotSide("bot");
  const sink = new Sink("sink");
  const task = new PipelineTask(new Pipeline([vad, bot, sink]), {
    idleTimeoutMs: null,
    logger: silentLogger,
  });
  const up: string[] = [];
  task.onFrameReachedUpstream(
    ["Interruption", "UserStartedSpeaking", "UserStoppedSpeaking", "Error", "BotStartedSpeaking"],
    (f) => void up.push(f.kind),
  );
  await drive(task, async () => {
    if (opts.botSpeaking) {
      bot.link!.broadcast(makeFrame("BotStartedSpeaking", {}));
      // Its upstream copy passed the VAD processor once it reaches the source.
      await until(() => up.includes("BotStartedSpeaking"), 2000, "bot speaking seen by the VAD");
    }
    for (const f of input) await task.queueFrame(f);
    await opts.between?.();
    await task.stopWhenDone();
  });
  return { down: sink.frames, up, bot };
}

/** Non-audio kinds in order, UserSpeaking left out. */
const events = (down: Frame[]) =>
  down.map((f) => f.kind).filter((k) => k !== "InputAudio" && k !== "UserSpeaking" && k !== "End");

/** For each frame of `kind`: how many InputAudio frames went before it. */
function audioIndexOf(down: Frame[], kind: string): number[] {
  const out: number[] = [];
  let audio = 0;
  for (const f of down) {
    if (f.kind === "InputAudio") audio++;
    else if (f.kind === kind) out.push(audio);
  }
  return out;
}

const energy = (opts: VadProcessorOptions = {}) =>
  new VadProcessor(new EnergyVad({ sampleRate: RATE }), opts);

Deno.test("energy VAD on bursts: edges in order, at the right frames, audio unchanged", async () => {
  const { pcm, on } = bursts();
  const input = frames(pcm);
  const r = await run(energy(), input);
  const audio = r.down.filter((f) => f.kind === "InputAudio");
  assert.equal(audio.length, input.length);
  audio.forEach((f, i) => {
    assert.equal(f, input[i], `frame ${i} forwarded as is`);
  });
  assert.deepEqual(events(r.down), [
    "VadUserStartedSpeaking",
    "UserStartedSpeaking",
    "VadUserStoppedSpeaking",
    "UserStoppedSpeaking",
    "VadUserStartedSpeaking",
    "UserStartedSpeaking",
    "VadUserStoppedSpeaking",
    "UserStoppedSpeaking",
  ]);
  // startSecs 0.2 (10 frames) plus smoothing; stopSecs 0.8 (40 frames) plus smoothing.
  const starts = audioIndexOf(r.down, "VadUserStartedSpeaking");
  const stops = audioIndexOf(r.down, "VadUserStoppedSpeaking");
  for (let b = 0; b < 2; b++) {
    const [s, e] = on[b];
    assert.ok(starts[b] >= s + 10 && starts[b] <= s + 16, `start ${b} after frame ${starts[b]}`);
    assert.ok(stops[b] >= e + 40 && stops[b] <= e + 48, `stop ${b} after frame ${stops[b]}`);
  }
  const started = r.down.find((f) => f.kind === "VadUserStartedSpeaking");
  assert.equal(started?.kind === "VadUserStartedSpeaking" && started.startSecs, 0.2);
  // User edges are broadcast: their upstream copies reach the source. No bot: no barge-in.
  assert.deepEqual(r.up, [
    "UserStartedSpeaking",
    "UserStoppedSpeaking",
    "UserStartedSpeaking",
    "UserStoppedSpeaking",
  ]);
  assert.equal(r.bot.interruptions, 0);
  // UserSpeaking every 10 frames while speaking.
  const speaking = r.down.filter((f) => f.kind === "UserSpeaking").length;
  assert.ok(speaking >= 8 && speaking <= 14, `${speaking} UserSpeaking`);
});

Deno.test("silence and low noise make no edges", async () => {
  const pcm = concatInt16([silence(1), noise(RATE, 200, 9)]);
  const r = await run(energy(), frames(pcm));
  assert.deepEqual(events(r.down), []);
  assert.equal(r.down.filter((f) => f.kind === "InputAudio").length, 100);
});

Deno.test("barge-in: the caller starting over the bot broadcasts Interruption", async () => {
  const { pcm } = bursts();
  const vad = energy();
  const r = await run(vad, frames(pcm.subarray(0, 100 * FRAME)), { botSpeaking: true });
  assert.deepEqual(events(r.down), [
    "BotStartedSpeaking",
    "VadUserStartedSpeaking",
    "UserStartedSpeaking",
    "Interruption",
    "VadUserStoppedSpeaking",
    "UserStoppedSpeaking",
  ]);
  assert.equal(r.bot.interruptions, 1, "the processor after the VAD ran its interruption hook");
  assert.deepEqual(r.up, [
    "BotStartedSpeaking",
    "UserStartedSpeaking",
    "Interruption",
    "UserStoppedSpeaking",
  ]);
  assert.equal((vad.turnStrategy as DefaultTurnStrategy).interruptCount, 1);
});

Deno.test("interruption modes: always interrupts without the bot, never does not even over it", async () => {
  const { pcm } = bursts();
  const first = pcm.subarray(0, 100 * FRAME);
  const always = await run(
    energy({ turnStrategy: new DefaultTurnStrategy({ interruptions: "always" }) }),
    frames(first),
  );
  assert.ok(events(always.down).includes("Interruption"));
  assert.equal(always.bot.interruptions, 1);
  const never = await run(
    energy({ turnStrategy: new DefaultTurnStrategy({ interruptions: "never" }) }),
    frames(first),
    { botSpeaking: true },
  );
  assert.ok(!events(never.down).includes("Interruption"));
  assert.ok(events(never.down).includes("UserStartedSpeaking"));
  assert.equal(never.bot.interruptions, 0);
  const bare = await run(energy({ turnStrategy: null }), frames(first), { botSpeaking: true });
  assert.deepEqual(events(bare.down), [
    "BotStartedSpeaking",
    "VadUserStartedSpeaking",
    "VadUserStoppedSpeaking",
  ]);
});

Deno.test("bot stopped: the next user start does not interrupt", async () => {
  const { pcm } = bursts();
  const bot = new BotSide("bot");
  const vad = energy();
  const task = new PipelineTask(new Pipeline([vad, bot]), {
    idleTimeoutMs: null,
    logger: silentLogger,
  });
  task.onStarted(async () => {
    bot.link!.broadcast(makeFrame("BotStartedSpeaking", {}));
    bot.link!.broadcast(makeFrame("BotStoppedSpeaking", {}));
    const turn = vad.turnStrategy as DefaultTurnStrategy;
    await until(() => !turn.botSpeaking, 2000);
    for (const f of frames(pcm)) await task.queueFrame(f);
    await task.stopWhenDone();
  });
  await task.run();
  assert.equal(bot.interruptions, 0);
  assert.equal((vad.turnStrategy as DefaultTurnStrategy).interruptCount, 0);
});

/** An analyzer whose results wait for a gate: models slow async inference (Silero). */
class GatedVad implements VadAnalyzer {
  readonly inner = new EnergyVad({ sampleRate: RATE });
  readonly seen: Int16Array[] = [];
  calls = 0;
  open = false;
  #waiters: (() => void)[] = [];
  sampleRate() {
    return RATE;
  }
  setParams(p: VadParams) {
    this.inner.setParams(p);
  }
  async analyze(audio: AudioFrame): Promise<VadState> {
    this.calls++;
    if (!this.open) await new Promise<void>((r) => this.#waiters.push(r));
    this.seen.push(audio.pcm);
    return this.inner.analyze(audio);
  }
  release() {
    this.open = true;
    for (const w of this.#waiters.splice(0)) w();
  }
}

Deno.test("async analyzer: audio is never held up; edges follow in audio order", async () => {
  const { pcm } = bursts();
  const input = frames(pcm);
  const gated = new GatedVad();
  const vad = new VadProcessor(gated);
  let audioBeforeRelease = 0;
  let backlogBeforeRelease = 0;
  const r = await run(vad, input, {
    between: async () => {
      // Every audio frame gets through while the first analysis is still pending.
      await until(() => vad.backlog === input.length - 1, 2000, "all frames queued for analysis");
      backlogBeforeRelease = vad.backlog;
      audioBeforeRelease = input.length;
      assert.equal(gated.calls, 1, "one analysis at a time");
      gated.release();
    },
  });
  assert.equal(audioBeforeRelease, input.length);
  assert.equal(backlogBeforeRelease, input.length - 1);
  assert.equal(vad.backlog, 0);
  // The analyzer saw the audio in order, and End waited for the analysis to finish.
  assert.equal(gated.seen.length, input.length);
  gated.seen.forEach((p, i) => assert.equal(p, (input[i] as { audio: AudioFrame }).audio.pcm));
  const sync = await run(energy(), input);
  assert.deepEqual(events(r.down), events(sync.down));
  // All audio came before the first edge: nothing waited for inference.
  const firstEdge = r.down.findIndex((f) => f.kind === "VadUserStartedSpeaking");
  assert.equal(
    r.down.slice(0, firstEdge).filter((f) => f.kind === "InputAudio").length,
    input.length,
  );
});

Deno.test("async analyzer: results already resolved keep the same order as sync", async () => {
  const { pcm } = bursts();
  const inner = new EnergyVad({ sampleRate: RATE });
  const analyzer: VadAnalyzer = {
    sampleRate: () => RATE,
    setParams: (p) => inner.setParams(p),
    analyze: (a) => Promise.resolve(inner.analyze(a)),
  };
  const r = await run(new VadProcessor(analyzer), frames(pcm));
  const sync = await run(energy(), frames(pcm));
  assert.deepEqual(events(r.down), events(sync.down));
});

Deno.test("SpeechControlParams changes stopSecs at its place in the audio", async () => {
  const { pcm } = bursts();
  const input = frames(pcm);
  const params = { confidence: 0.7, startSecs: 0.2, stopSecs: 0.3, minVolume: 0.6 };
  input.splice(0, 0, makeFrame("SpeechControlParams", { vad: params }));
  const r = await run(energy(), input);
  const stops = audioIndexOf(r.down, "VadUserStoppedSpeaking");
  assert.equal(stops.length, 2);
  assert.ok(stops[0] >= 55 + 15 && stops[0] <= 55 + 22, `stop after frame ${stops[0]}`);
  const stop = r.down.find((f) => f.kind === "VadUserStoppedSpeaking");
  assert.equal(stop?.kind === "VadUserStoppedSpeaking" && stop.stopSecs, 0.3);
});

Deno.test("a failing analyzer reports one Error upstream and audio keeps flowing", async () => {
  const analyzer: VadAnalyzer = {
    sampleRate: () => RATE,
    setParams: () => {},
    analyze: () => {
      throw new Error("model gone");
    },
  };
  const r = await run(new VadProcessor(analyzer), frames(silence(0.5)));
  assert.equal(r.down.filter((f) => f.kind === "InputAudio").length, 25);
  assert.deepEqual(r.up, ["Error"]);
});

Deno.test("TurnProcessor applies the strategy to VAD frames made elsewhere", async () => {
  const turns = new TurnProcessor();
  const sink = new Sink("sink");
  const task = new PipelineTask(new Pipeline([turns, sink]), {
    idleTimeoutMs: null,
    logger: silentLogger,
  });
  task.onStarted(async () => {
    await task.queueFrame(makeFrame("BotStartedSpeaking", {}));
    await task.queueFrame(makeFrame("VadUserStartedSpeaking", { startSecs: 0.2 }));
    await task.queueFrame(makeFrame("VadUserStartedSpeaking", { startSecs: 0.2 }));
    await task.queueFrame(makeFrame("VadUserStoppedSpeaking", { stopSecs: 0.8 }));
    await task.stopWhenDone();
  });
  await task.run();
  assert.deepEqual(events(sink.frames), [
    "BotStartedSpeaking",
    "VadUserStartedSpeaking",
    "UserStartedSpeaking",
    "Interruption",
    "VadUserStartedSpeaking",
    "VadUserStoppedSpeaking",
    "UserStoppedSpeaking",
  ]);
});

// ---------------------------------------------------------------------- real speech (espeak-ng)

/** espeak-ng speech written to ./.tmp with -w, at 16 kHz; undefined when espeak-ng can't run. */
async function espeak(text: string): Promise<Int16Array | undefined> {
  try {
    const perm = await Deno.permissions.query({ name: "run", command: "espeak-ng" });
    if (perm.state !== "granted") return undefined;
    await Deno.mkdir(".tmp", { recursive: true });
    const path = `.tmp/vad_processor_${crypto.randomUUID()}.wav`;
    const out = await new Deno.Command("espeak-ng", {
      args: ["-w", path, text],
      stdout: "null",
      stderr: "null",
    }).output();
    if (!out.success) return undefined;
    const wav = decodeWav(await Deno.readFile(path));
    await Deno.remove(path);
    return resample(wav.pcm, wav.sampleRate, RATE);
  } catch {
    return undefined;
  }
}

const speech = await espeak("hello, I would like to book a table for two");

/** Speech with a second of silence before and 1.5 s after. */
function utterance(): Int16Array {
  return concatInt16([silence(1), speech!, silence(1.5)]);
}

/** First and last 20 ms frame above -40 dBFS. */
function loudFrames(pcm: Int16Array): [number, number] {
  const loud: number[] = [];
  for (let i = 0; i * FRAME < pcm.length; i++) {
    if (dbfs(pcm.subarray(i * FRAME, (i + 1) * FRAME)) > -40) loud.push(i);
  }
  return [loud[0], loud[loud.length - 1]];
}

Deno.test({
  name: "espeak-ng utterance over the bot: Silero VAD gives start, Interruption, stop",
  ignore: speech === undefined,
  fn: async () => {
    const silero = await SileroVad.create({ sampleRate: RATE });
    // Edges of an async analyzer trail the audio, so positions come from its own results.
    const states: VadState[] = [];
    const analyzer: VadAnalyzer = {
      sampleRate: () => RATE,
      setParams: (p) => silero.setParams(p),
      analyze: async (a) => {
        const s = await silero.analyze(a);
        states.push(s);
        return s;
      },
    };
    try {
      const r = await run(new VadProcessor(analyzer), frames(utterance()), { botSpeaking: true });
      assert.deepEqual(events(r.down), [
        "BotStartedSpeaking",
        "VadUserStartedSpeaking",
        "UserStartedSpeaking",
        "Interruption",
        "VadUserStoppedSpeaking",
        "UserStoppedSpeaking",
      ]);
      const start = states.indexOf("speaking");
      const stop = states.indexOf("quiet", start);
      // startSecs 0.2 (10 frames) after the first loud frame; stopSecs 0.8 (40) after the last.
      const [first, last] = loudFrames(utterance());
      assert.ok(start >= first + 10 && start <= first + 25, `start ${start}, speech from ${first}`);
      assert.ok(stop >= last + 38 && stop <= last + 50, `stop ${stop}, speech to ${last}`);
      assert.equal(r.bot.interruptions, 1);
    } finally {
      await silero.close();
    }
  },
});

Deno.test({
  name: "espeak-ng utterance: energy VAD gives one start and one stop",
  ignore: speech === undefined,
  fn: async () => {
    const r = await run(energy(), frames(utterance()));
    assert.deepEqual(events(r.down), [
      "VadUserStartedSpeaking",
      "UserStartedSpeaking",
      "VadUserStoppedSpeaking",
      "UserStoppedSpeaking",
    ]);
  },
});

// ---------------------------------------------------------------------- with the real output

/** Media leg that never sends inbound events and counts clears. */
class QuietLeg implements MediaTransport {
  sent = 0;
  clears = 0;
  recv(): Promise<MediaIn | undefined> {
    return Promise.resolve(undefined);
  }
  sendAudio(): Promise<void> {
    this.sent++;
    return Promise.resolve();
  }
  sendClear(): Promise<void> {
    this.clears++;
    return Promise.resolve();
  }
  carrierRate() {
    return 8000;
  }
}

Deno.test("barge-in against TransportOutput: playback is cleared and the bot stops", async () => {
  const leg = new QuietLeg();
  const vad = energy();
  const out = new TransportOutput(leg);
  const task = new PipelineTask(new Pipeline([vad, out]), {
    idleTimeoutMs: null,
    logger: silentLogger,
  });
  const up: string[] = [];
  task.onFrameReachedUpstream(
    ["BotStartedSpeaking", "BotStoppedSpeaking", "Interruption"],
    (f) => void up.push(f.kind),
  );
  task.onStarted(async () => {
    // Five seconds of bot speech; the caller talks over it once it is playing.
    await task.queueFrame(
      makeFrame("TtsAudio", {
        audio: { pcm: new Int16Array(5 * 24000), sampleRate: 24000, numChannels: 1 },
      }),
    );
    const turn = vad.turnStrategy as DefaultTurnStrategy;
    await until(() => turn.botSpeaking, 2000, "bot speaking");
    for (const f of frames(bursts().pcm.subarray(0, 100 * FRAME))) await task.queueFrame(f);
    await until(() => leg.clears === 1, 2000, "far end cleared");
    await until(() => !turn.botSpeaking, 2000, "bot stopped");
    await task.stopWhenDone();
  });
  await task.run();
  assert.deepEqual(up, ["BotStartedSpeaking", "Interruption", "BotStoppedSpeaking"]);
  assert.ok(leg.sent < 5 * 50, `only ${leg.sent} of 250 chunks played`);
});

/** Speech, a pause, then speech again that resumes quietly (words starting soft). */
function pausedSpeech(pauseSecs: number): Int16Array {
  const loud = (secs: number) => noise(Math.round(secs * RATE), 8000, 5);
  // Bursts of 60 ms with 20 ms gaps: a start needing 200 ms unbroken speech misses them long.
  const choppy = concatInt16(
    Array.from({ length: 8 }, () => concatInt16([loud(0.06), silence(0.02)])),
  );
  return concatInt16([silence(0.3), loud(0.6), silence(pauseSecs), choppy, silence(0.6)]);
}

Deno.test("resume window: after a pause the caller's speech resumes on its first syllable", async () => {
  const params = { confidence: 0.7, startSecs: 0.2, stopSecs: 0.2, minVolume: 0.6 };
  const pcm = pausedSpeech(0.5);
  const slow = await run(energy({ params }), frames(pcm));
  const quick = await run(energy({ params, resumeSecs: 1.3 }), frames(pcm));
  // Speech resumes at frame 15 + 30 + 25 = 70.
  const resumedAt = (r: Run) => audioIndexOf(r.down, "VadUserStartedSpeaking")[1];
  assert.ok(resumedAt(quick) <= 74, `quick resume after frame ${resumedAt(quick)}`);
  assert.ok(
    resumedAt(slow) === undefined || resumedAt(slow) > 80,
    `without the window: ${resumedAt(slow)}`,
  );
});

Deno.test("resume window: closed while the bot speaks (barge-in keeps its start time)", async () => {
  const params = { confidence: 0.7, startSecs: 0.2, stopSecs: 0.2, minVolume: 0.6 };
  const r = await run(energy({ params, resumeSecs: 1.3 }), frames(pausedSpeech(0.5)), {
    botSpeaking: true,
  });
  const starts = audioIndexOf(r.down, "VadUserStartedSpeaking");
  assert.ok(starts[1] === undefined || starts[1] > 80, `barge-in start after ${starts[1]}`);
});

Deno.test("hold: the first sign of voice over the bot holds its audio; a noise never confirms", async () => {
  const click = concatInt16([silence(0.2), noise(0.06 * RATE, 8000, 4), silence(0.6)]);
  const holding = () => energy({ turnStrategy: new DefaultTurnStrategy({ holdMs: 300 }) });
  const noisy = await run(holding(), frames(click), { botSpeaking: true });
  assert.deepEqual(events(noisy.down), ["BotStartedSpeaking", "BotAudioHold"]);
  assert.equal(noisy.bot.interruptions, 0, "a click is no barge-in");

  const { pcm } = bursts();
  const speech = await run(holding(), frames(pcm.subarray(0, 100 * FRAME)), { botSpeaking: true });
  const kinds = events(speech.down);
  assert.deepEqual(kinds.slice(0, 3), [
    "BotStartedSpeaking",
    "BotAudioHold",
    "VadUserStartedSpeaking",
  ]);
  assert.ok(kinds.includes("Interruption"));
  // Held at the first loud frames, confirmed 200 ms of speech later.
  const held = audioIndexOf(speech.down, "BotAudioHold")[0];
  const started = audioIndexOf(speech.down, "VadUserStartedSpeaking")[0];
  assert.ok(held <= 28 && started - held >= 8, `held after ${held}, started after ${started}`);

  const quiet = await run(holding(), frames(pcm.subarray(0, 100 * FRAME)));
  assert.ok(
    !events(quiet.down).includes("BotAudioHold"),
    "nothing to hold while the bot is silent",
  );
  const never = await run(
    energy({ turnStrategy: new DefaultTurnStrategy({ holdMs: 300, interruptions: "never" }) }),
    frames(click),
    { botSpeaking: true },
  );
  assert.ok(!events(never.down).includes("BotAudioHold"), "never interrupted: never held");
});
