/** Helpers of the gRPC speech-to-text tests (Google Cloud Speech, NVIDIA Riva). */

import { FlowcatError } from "../core/errors.ts";
import { type AudioFrame, audioFrame, type Frame, type StartParams } from "../core/frames.ts";
import type { SttService } from "../core/seams.ts";
import { sleep } from "./_core_helpers.ts";

/** Start parameters of an 8 kHz phone leg. */
export const STT_PARAMS: StartParams = {
  audioInSampleRate: 8000,
  audioOutSampleRate: 8000,
  enableMetrics: false,
  enableUsageMetrics: false,
  enableTracing: false,
  reportOnlyInitialTtfb: false,
};

/** 20 ms of a ramp at `rate` (non-silent, so a resampler bug would show). */
export function frame20ms(rate = 8000): AudioFrame {
  const n = rate / 50;
  const pcm = new Int16Array(n);
  for (let i = 0; i < n; i++) pcm[i] = (i * 97) % 4000 - 2000;
  return audioFrame(pcm, rate);
}

/** Feed 20 ms frames every 5 ms until `done(frames)` holds; the frames (or a timeout error). */
export async function feedUntil(
  stt: SttService,
  done: (frames: Frame[]) => boolean,
  ms = 5000,
): Promise<Frame[]> {
  const got: Frame[] = [];
  const end = Date.now() + ms;
  while (!done(got)) {
    if (Date.now() > end) throw new Error(`timed out; got ${got.map((f) => f.kind)}`);
    got.push(...await stt.runStt(frame20ms()));
    await sleep(5);
  }
  return got;
}

/** Feed audio until runStt rejects; the FlowcatError (a timeout error otherwise). */
export async function feedUntilError(stt: SttService, ms = 5000): Promise<FlowcatError> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    try {
      await stt.runStt(frame20ms());
    } catch (err) {
      if (err instanceof FlowcatError) return err;
      throw err;
    }
    await sleep(5);
  }
  throw new Error("runStt never failed");
}

/** The texts of the (interim) transcription frames, as `kind:text`. */
export function transcripts(frames: Frame[]): string[] {
  return frames.flatMap((f) =>
    f.kind === "Transcription" || f.kind === "InterimTranscription" ? [`${f.kind}:${f.text}`] : []
  );
}
