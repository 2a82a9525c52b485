/**
 * `demo pipeline`: a synthetic 440 Hz sine (16 kHz mono, 320-sample frames, 50 frames, 1.00 s)
 * through Source -> Echo -> Tap -> Sink inside a PipelineTask, with an observer counting
 * frames. OK only when frames in = frames out = frames sourced and the echo is sample-exact.
 * @module
 */

import {
  type Direction,
  type Frame,
  FrameProcessor,
  type FramePushEvent,
  inputAudio,
  type Link,
  makeFrame,
  type Observer,
  outputAudio,
  Pipeline,
  PipelineTask,
  type ProcessorSetup,
  type StartParams,
} from "../mod.ts";
import { sine } from "../core/audio/pcm.ts";

/** Parameters of the demo signal. */
export const DEMO = Object.freeze({
  hz: 440,
  rate: 16000,
  frameSamples: 320,
  frames: 50,
  amplitude: 0.5,
});

/** One 20 ms frame of the demo sine, starting at sample `offset` (phase-continuous). */
export function sineFrame(offset: number, samples: number = DEMO.frameSamples): Int16Array {
  const w = (2 * Math.PI * DEMO.hz) / DEMO.rate;
  return sine({
    freq: DEMO.hz,
    sampleRate: DEMO.rate,
    samples,
    amplitude: DEMO.amplitude * 32767,
    phase: w * offset,
  });
}

/** Pushes the demo frames from a reader task, then asks the task to end (End upstream). */
class SineSource extends FrameProcessor {
  constructor(readonly frames: Int16Array[]) {
    super("Source");
  }
  override start(_setup: ProcessorSetup, _params: StartParams, link: Link): void {
    // Pump after Start has been forwarded, so audio never overtakes it.
    setTimeout(() => void this.#pump(link), 0);
  }
  async #pump(link: Link): Promise<void> {
    for (const pcm of this.frames) {
      link.pushDown(inputAudio({ pcm, sampleRate: DEMO.rate, numChannels: 1 }));
      await link.writable();
    }
    link.push(makeFrame("End", { reason: "source done" }), "upstream");
  }
}

/** InputAudio in, the same PCM out as OutputAudio. */
class Echo extends FrameProcessor {
  constructor() {
    super("Echo");
  }
  override processFrame(frame: Frame, dir: Direction, link: Link): void {
    if (frame.kind === "InputAudio") link.pushDown(outputAudio(frame.audio));
    else link.push(frame, dir);
  }
}

/** Keeps every OutputAudio it sees, passes everything on. */
class Tap extends FrameProcessor {
  readonly seen: Int16Array[] = [];
  constructor() {
    super("Tap");
  }
  override processFrame(frame: Frame, dir: Direction, link: Link): void {
    if (frame.kind === "OutputAudio") this.seen.push(frame.audio.pcm);
    link.push(frame, dir);
  }
}

/** Counts distinct InputAudio and OutputAudio frames pushed anywhere. */
class CountingObserver implements Observer {
  readonly ids = { InputAudio: new Set<number>(), OutputAudio: new Set<number>() };
  onPush(e: FramePushEvent): void {
    const k = e.frame.kind;
    if (k === "InputAudio" || k === "OutputAudio") this.ids[k].add(e.frame.id);
  }
}

/** Outcome of one demo run. */
export interface DemoPipelineResult {
  sourced: number;
  framesIn: number;
  framesOut: number;
  echoed: number;
  identical: boolean;
  wallMs: number;
  ok: boolean;
  lines: string[];
}

/** Run the demo once; `lines` is what the command prints. */
export async function runDemoPipeline(): Promise<DemoPipelineResult> {
  const frames: Int16Array[] = [];
  for (let i = 0; i < DEMO.frames; i++) frames.push(sineFrame(i * DEMO.frameSamples));
  const source = new SineSource(frames);
  const tap = new Tap();
  const observer = new CountingObserver();
  const sinkProc = new FrameProcessor("Sink");
  const task = new PipelineTask(new Pipeline([source, new Echo(), tap, sinkProc]), {
    observers: [observer],
    idleTimeoutMs: null,
  });
  const t0 = performance.now();
  const reason = await task.run();
  const wallMs = performance.now() - t0;

  const samples = frames.reduce((n, f) => n + f.length, 0);
  const identical = tap.seen.length === frames.length &&
    tap.seen.every((pcm, i) =>
      pcm.length === frames[i].length && pcm.every((s, j) => s === frames[i][j])
    );
  const framesIn = observer.ids.InputAudio.size;
  const framesOut = observer.ids.OutputAudio.size;
  const ok = reason.kind === "end" && framesIn === DEMO.frames && framesOut === DEMO.frames &&
    identical;
  let peak = 0;
  for (const f of frames) for (const s of f) peak = Math.max(peak, Math.abs(s));
  const lines = [
    "Flowcat demo: pipeline",
    `source:     ${DEMO.hz} Hz sine, ${DEMO.rate} Hz mono, ${DEMO.frameSamples}-sample frames, ${DEMO.frames} frames (${
      (samples / DEMO.rate).toFixed(2)
    } s)`,
    `audio:      ${samples} samples, ${samples * 2} bytes PCM16, peak ${peak}`,
    "chain:      Source -> Echo -> Tap -> Sink",
    `frames in:  ${framesIn} (InputAudio observed)`,
    `frames out: ${framesOut} (OutputAudio observed)`,
    `echoed:     ${tap.seen.length} of ${DEMO.frames} frames, ${
      identical ? "sample-exact" : "MISMATCH"
    }`,
    `wall time:  ${wallMs.toFixed(2)} ms`,
    `result:     ${
      ok
        ? "OK"
        : `FAILED (sourced ${DEMO.frames}, in ${framesIn}, out ${framesOut}, stop ${reason.kind})`
    }`,
  ];
  return {
    sourced: DEMO.frames,
    framesIn,
    framesOut,
    echoed: tap.seen.length,
    identical,
    wallMs,
    ok,
    lines,
  };
}
