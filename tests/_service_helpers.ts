/** Pieces the cascaded-service client tests share: start params, a test signal, frame draining. */

import { type AudioFrame, audioFrame, type Frame, type StartParams } from "../core/frames.ts";
import type { SttService } from "../core/seams.ts";
import { sleep } from "./_core_helpers.ts";

/** Start params of a service under test: 8 kHz call, metrics and tracing off. */
export const SERVICE_START_PARAMS: StartParams = {
  audioInSampleRate: 8000,
  audioOutSampleRate: 8000,
  enableMetrics: false,
  enableUsageMetrics: false,
  enableTracing: false,
  reportOnlyInitialTtfb: false,
};

/** 20 ms of a ramp at `rate`: not silent, so a resampler or muting bug shows. */
export function ramp20ms(rate: number): AudioFrame {
  const n = rate / 50;
  const pcm = new Int16Array(n);
  for (let i = 0; i < n; i++) pcm[i] = (i * 97) % 4000 - 2000;
  return audioFrame(pcm, rate);
}

/** Every frame of a stream, in order. */
export async function drainFrames(it: AsyncIterable<Frame>): Promise<Frame[]> {
  const out: Frame[] = [];
  for await (const f of it) out.push(f);
  return out;
}

/** Feed `stt` `frame` (default: no samples) until `want` frames came back; throws after `ms`. */
export async function sttFrames(
  stt: SttService,
  want: number,
  frame: AudioFrame = audioFrame(new Int16Array(0), 16000),
  ms = 3000,
): Promise<Frame[]> {
  const got: Frame[] = [];
  const end = Date.now() + ms;
  while (got.length < want) {
    if (Date.now() > end) throw new Error(`got ${got.length} of ${want} frames`);
    got.push(...await stt.runStt(frame));
    if (got.length < want) await sleep(5);
  }
  return got;
}

/** Call `fn` until it rejects; the rejection (or a timeout error). */
export async function firstRejection(fn: () => Promise<unknown>, ms = 3000): Promise<unknown> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    try {
      await fn();
    } catch (err) {
      return err;
    }
    await sleep(5);
  }
  throw new Error("no rejection within the deadline");
}
