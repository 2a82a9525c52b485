/**
 * RecorderProcessor: records a call. It taps the caller's InputAudio and the bot's TtsAudio /
 * OutputAudio on their way past, forwards every frame unchanged, and at the end gives the
 * call as a WAV: mono (both legs mixed) or stereo (caller left, bot right).
 *
 * Place it just before the output transport: it sees the caller's audio as the pipeline got
 * it and the bot's audio as it goes to be played. Both legs go into {@link AudioRecorder}s on
 * one timeline that starts at Start:
 *
 * - caller audio is placed at its arrival time (or the frame's `pts` when set);
 * - bot audio arrives in bursts, faster than it plays. It is placed where the output
 *   transport will play it (back to back, from its arrival at the earliest) and kept aside
 *   until that time has passed. An Interruption keeps what was played up to that moment,
 *   cutting the frame being played, and drops the rest, so the recording holds what the
 *   caller heard. End keeps everything queued (the transport plays it out) unless the caller
 *   hung up; Stop and Cancel keep what was played.
 *
 * @example
 * ```ts
 * import { RecorderProcessor } from "@flowcat/flowcat";
 * const recorder = new RecorderProcessor({ sampleRate: 8000, channels: 2 });
 * // Pipeline: [transportIn, vad, stt, llm, tts, recorder, transportOut]
 * // after the task ends:
 * await Deno.writeFile("call.wav", recorder.wav());
 * ```
 * @module
 */

import { AudioRecorder } from "../audio/recorder.ts";
import { encodeWav } from "../audio/wav.ts";
import { mixSaturate } from "../audio/pcm.ts";
import { FlowcatError } from "../errors.ts";
import type { AudioFrame, Direction, Frame, StartParams, StopReason } from "../frames.ts";
import { FrameProcessor, type Link, type ProcessorSetup } from "../processor.ts";
import { CALLER_HUNG_UP } from "./transport.ts";

/** Options of a {@link RecorderProcessor}. */
export interface RecorderProcessorOptions {
  /** Rate of the recording in Hz (default 16000). */
  sampleRate?: number;
  /** Channels of {@link RecorderProcessor.wav} by default: 1 mixed, 2 caller/bot (default 1). */
  channels?: 1 | 2;
  /** Longest recording kept, in seconds (default 3600). */
  maxSeconds?: number;
  /** Clock in ns (default: the task's pipeline clock). */
  clock?: () => number;
  /** Processor name (default `RecorderProcessor`). */
  name?: string;
}

/** Bot audio placed on the timeline but not yet played. */
interface Scheduled {
  audio: AudioFrame;
  atNs: number;
  endNs: number;
}

/** Records both legs of a call; frames pass through unchanged. */
export class RecorderProcessor extends FrameProcessor {
  /** Rate of the recording in Hz. */
  readonly sampleRate: number;
  readonly #channels: 1 | 2;
  readonly #caller: AudioRecorder;
  readonly #bot: AudioRecorder;
  #clock: (() => number) | undefined;
  #queued: Scheduled[] = [];
  #playheadNs = 0;

  /** Make a recorder (see {@link RecorderProcessorOptions}). */
  constructor(opts: RecorderProcessorOptions = {}) {
    super(opts.name ?? "RecorderProcessor");
    const recorder = { sampleRate: opts.sampleRate, maxSeconds: opts.maxSeconds };
    this.#caller = new AudioRecorder(recorder);
    this.#bot = new AudioRecorder(recorder);
    this.sampleRate = this.#caller.sampleRate;
    this.#channels = opts.channels ?? 1;
    this.#clock = opts.clock;
  }

  /** Length of the recording so far, in seconds. */
  get durationSecs(): number {
    return Math.max(this.#caller.durationSecs, this.#bot.durationSecs);
  }

  /** Samples dropped because the recording reached `maxSeconds`. */
  get droppedSamples(): number {
    return this.#caller.droppedSamples + this.#bot.droppedSamples;
  }

  /** The timeline starts now. */
  override start(setup: ProcessorSetup, _params: StartParams, _link: Link): void {
    this.#clock ??= setup.clock;
    const now = this.#clock();
    this.#caller.reset(now);
    this.#bot.reset(now);
    this.#queued = [];
    this.#playheadNs = now;
  }

  /** Taps caller and bot audio going downstream; forwards every frame. */
  override processFrame(frame: Frame, direction: Direction, link: Link): void {
    if (direction === "downstream" && this.#clock !== undefined) {
      const now = this.#clock();
      if (this.#queued.length > 0) this.#keepPlayed(now);
      if (frame.kind === "InputAudio") {
        this.#caller.addInput(frame.audio, frame.pts ?? now);
      } else if (frame.kind === "TtsAudio" || frame.kind === "OutputAudio") {
        this.#schedule(frame.audio, now);
      }
    }
    link.push(frame, direction);
  }

  /** Barge-in: keep the bot audio played so far, drop the rest. */
  override onInterruption(): void {
    if (this.#clock === undefined) return;
    const now = this.#clock();
    this.#keepPlayed(now, true);
    this.#queued = [];
    this.#playheadNs = now;
  }

  /**
   * End keeps all queued bot audio (it is played out), unless the caller hung up (the output
   * transport then drops it); Stop and Cancel keep what was played.
   */
  override stop(reason: StopReason): void {
    if (this.#clock === undefined) return;
    const playsOut = reason.kind === "end" && reason.reason !== CALLER_HUNG_UP;
    this.#keepPlayed(playsOut ? Infinity : this.#clock(), true);
    this.#queued = [];
  }

  /**
   * The recording as 16-bit PCM WAV bytes: mono (the legs mixed with saturation) or stereo
   * (caller left, bot right). Call it after the task ended; mid-call it holds what was
   * played so far.
   */
  wav(channels: 1 | 2 = this.#channels): Uint8Array {
    if (this.#clock !== undefined && this.#queued.length > 0) this.#keepPlayed(this.#clock());
    const caller = this.#caller.mix();
    const bot = this.#bot.mix();
    if (channels === 1) return encodeWav(mixSaturate(caller, bot), this.sampleRate);
    if (channels !== 2) throw new FlowcatError("config", `recorder: ${channels} channels`);
    const n = Math.max(caller.length, bot.length);
    const stereo = new Int16Array(2 * n);
    for (let i = 0; i < caller.length; i++) stereo[2 * i] = caller[i];
    for (let i = 0; i < bot.length; i++) stereo[2 * i + 1] = bot[i];
    return encodeWav(stereo, this.sampleRate, 2);
  }

  #schedule(audio: AudioFrame, now: number): void {
    const samples = audio.pcm.length / audio.numChannels;
    const durNs = Math.round((samples * 1e9) / audio.sampleRate);
    const atNs = Math.max(now, this.#playheadNs);
    this.#playheadNs = atNs + durNs;
    this.#queued.push({ audio, atNs, endNs: atNs + durNs });
  }

  /** Record queued bot audio played by `now`; with `cut`, also the played part of the next. */
  #keepPlayed(now: number, cut = false): void {
    const q = this.#queued;
    let i = 0;
    for (; i < q.length && q[i].endNs <= now; i++) this.#bot.addOutput(q[i].audio, q[i].atNs);
    if (cut && i < q.length && q[i].atNs < now) {
      const { audio, atNs } = q[i];
      const frames = Math.floor(((now - atNs) * audio.sampleRate) / 1e9);
      const pcm = audio.pcm.subarray(0, frames * audio.numChannels);
      this.#bot.addOutput({ ...audio, pcm }, atNs);
      i++;
    }
    if (i > 0) this.#queued = q.slice(i);
  }
}
