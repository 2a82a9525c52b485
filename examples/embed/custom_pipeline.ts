/**
 * Embedding 1: your own processors in a Flowcat pipeline, no server, no network. Five 20 ms
 * frames of a tone go through a gain stage and into a meter that prints what it saw.
 *
 * Run: `deno run examples/embed/custom_pipeline.ts` (no permission: the core reads no file,
 * no environment variable and opens no socket).
 * @module
 */

import {
  type Direction,
  type Frame,
  FrameProcessor,
  inputAudio,
  type Link,
  outputAudio,
  Pipeline,
  PipelineTask,
} from "@flowcat/flowcat";

/** Multiplies every input audio frame by `factor` and sends it on as output audio. */
class Gain extends FrameProcessor {
  constructor(readonly factor: number) {
    super("gain");
  }

  override processFrame(frame: Frame, dir: Direction, link: Link): void {
    if (frame.kind !== "InputAudio") return link.push(frame, dir);
    const pcm = frame.audio.pcm.map((s) => Math.max(-32768, Math.min(32767, s * this.factor)));
    link.pushDown(outputAudio({ ...frame.audio, pcm }));
  }
}

/** Counts output audio frames and keeps the loudest sample. */
class Meter extends FrameProcessor {
  frames = 0;
  peak = 0;

  override processFrame(frame: Frame, dir: Direction, link: Link): void {
    if (frame.kind === "OutputAudio") {
      this.frames++;
      for (const s of frame.audio.pcm) this.peak = Math.max(this.peak, Math.abs(s));
    }
    link.push(frame, dir);
  }
}

const meter = new Meter("meter");
const task = new PipelineTask(new Pipeline([new Gain(2), meter]));
task.onStarted(async () => {
  for (let i = 0; i < 5; i++) {
    const pcm = Int16Array.from({ length: 320 }, (_, n) => 1000 * Math.sin(n / 5));
    await task.queueFrame(inputAudio({ pcm, sampleRate: 16000, numChannels: 1 }));
  }
  await task.stopWhenDone();
});
const end = await task.run();
console.log(JSON.stringify({ end: end.kind, frames: meter.frames, peak: meter.peak }));
