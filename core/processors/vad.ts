/**
 * VadProcessor: runs a {@link VadAnalyzer} (EnergyVad, SileroVad, ...) on the caller's
 * InputAudio and emits VadUserStartedSpeaking / VadUserStoppedSpeaking downstream, then lets a
 * {@link TurnStrategy} (default: {@link DefaultTurnStrategy}) turn those edges into
 * UserStartedSpeaking / UserStoppedSpeaking and barge-in Interruptions.
 *
 * Audio is forwarded first and unchanged. A synchronous analyzer's edge follows the frame
 * that caused it directly. An asynchronous one (Silero) never holds up the frame path: frames
 * are queued for analysis off-path, analysed one at a time in audio order, and their edges are
 * pushed, in order, as soon as they are known (so they trail the audio by the inference time).
 * On End the queue is drained before End goes on, so no edge is lost.
 *
 * While the caller speaks, a UserSpeaking frame goes downstream every `speakingEvery` frames
 * (the task's idle watch counts it as activity).
 *
 * @example
 * ```ts
 * import { VadProcessor } from "@flowcat/flowcat";
 * import { EnergyVad } from "@flowcat/flowcat/audio";
 * const vad = new VadProcessor(new EnergyVad({ sampleRate: 8000 }));
 * // Pipeline: [transportIn, vad, stt, llm, tts, transportOut]
 * ```
 * @module
 */

import { errorMessage } from "../errors.ts";
import {
  type AudioFrame,
  DEFAULT_VAD_PARAMS,
  type Direction,
  type Frame,
  makeFrame,
  type StartParams,
  type StopReason,
  type VadParams,
  type VadState,
} from "../frames.ts";
import type { Logger } from "../log.ts";
import { FrameProcessor, type Link, type ProcessorSetup } from "../processor.ts";
import type { VadAnalyzer } from "../seams.ts";
import { DefaultTurnStrategy, type TurnStrategy } from "./turn.ts";

/** Options of a {@link VadProcessor}. */
export interface VadProcessorOptions {
  /**
   * Parameters applied to the analyzer at construction, and reported in the edge frames
   * (`startSecs`, `stopSecs`). Default: the analyzer keeps its own; {@link DEFAULT_VAD_PARAMS}
   * are reported.
   */
  params?: VadParams;
  /** Strategy fed the VAD edges and the bot's speaking frames; `null` for VAD edges only. */
  turnStrategy?: TurnStrategy | null;
  /** Push UserSpeaking every this many frames while the caller speaks (default 10; 0: never). */
  speakingEvery?: number;
  /** Warn (once) when this many frames wait for analysis (default 50, one second of audio). */
  maxBacklog?: number;
  /**
   * For this long after the caller pauses (seconds of audio, default 0: never), and while the
   * bot is silent, speech resumes the caller's speech on `resumeStartSecs` of speech instead
   * of `startSecs`: they have not given up their turn, and a turn judge still waiting must
   * hear them go on at once. `startSecs` guards the bot's speech against false barge-ins.
   */
  resumeSecs?: number;
  /** Speech that resumes the caller's speech within `resumeSecs` (default 0: one frame). */
  resumeStartSecs?: number;
  /** Processor name (default `VadProcessor`). */
  name?: string;
}

function isPromise<T>(x: T | Promise<T>): x is Promise<T> {
  return typeof (x as { then?: unknown })?.then === "function";
}

/** Voice-activity edges (and, through its turn strategy, user turns) from InputAudio. */
export class VadProcessor extends FrameProcessor {
  /** The strategy in use, or `null`. */
  readonly turnStrategy: TurnStrategy | null;
  readonly #vad: VadAnalyzer;
  readonly #speakingEvery: number;
  readonly #maxBacklog: number;
  #params: VadParams;
  #speaking = false;
  #speakingFrames = 0;
  /** Last link of the off-path analysis chain; undefined when nothing is pending. */
  #tail: Promise<void> | undefined;
  #backlog = 0;
  #warned = false;
  #failing = false;
  #log: Logger | undefined;
  readonly #resumeSecs: number;
  readonly #resumeStartSecs: number;
  /** Seconds of audio analysed so far (the resume window is counted in audio, not wall time). */
  #audioSecs = 0;
  /** Audio time until which a pause may be resumed quickly; -1 when not in one. */
  #resumeUntil = -1;
  #botSpeaking = false;

  /** Wrap `analyzer` (see {@link VadProcessorOptions}). */
  constructor(analyzer: VadAnalyzer, opts: VadProcessorOptions = {}) {
    super(opts.name ?? "VadProcessor");
    this.#vad = analyzer;
    this.turnStrategy = opts.turnStrategy === undefined
      ? new DefaultTurnStrategy()
      : opts.turnStrategy;
    this.#speakingEvery = opts.speakingEvery ?? 10;
    this.#maxBacklog = opts.maxBacklog ?? 50;
    this.#params = { ...(opts.params ?? DEFAULT_VAD_PARAMS) };
    if (opts.params) analyzer.setParams(opts.params);
    this.#resumeSecs = opts.resumeSecs ?? 0;
    this.#resumeStartSecs = opts.resumeStartSecs ?? 0;
  }

  /** True between the emitted started and stopped edges. */
  get speaking(): boolean {
    return this.#speaking;
  }

  /** Frames waiting for analysis (asynchronous analyzers only). */
  get backlog(): number {
    return this.#backlog;
  }

  /** Keeps the logger for the backlog warning. */
  override start(setup: ProcessorSetup, _params: StartParams, _link: Link): void {
    this.#log = setup.logger;
  }

  /** Forwards every frame; analyses downstream InputAudio; applies SpeechControlParams. */
  override processFrame(frame: Frame, direction: Direction, link: Link): void {
    link.push(frame, direction);
    if (frame.kind === "BotStartedSpeaking" || frame.kind === "BotStoppedSpeaking") {
      // Both copies of the broadcast pass by; the state is the same either way.
      this.#botSpeaking = frame.kind === "BotStartedSpeaking";
      if (this.#botSpeaking) this.#endResume(link);
    }
    if (direction === "downstream") {
      if (frame.kind === "InputAudio") {
        this.#audioSecs += frame.audio.pcm.length / frame.audio.numChannels /
          frame.audio.sampleRate;
        if (this.#resumeUntil >= 0 && this.#audioSecs > this.#resumeUntil) this.#endResume(link);
        this.#analyze(frame.audio, link);
        return;
      }
      if (frame.kind === "SpeechControlParams" && frame.vad) {
        const params = { ...frame.vad };
        // Through the chain, so the change lands at its place in the audio.
        this.#enqueue(() => this.#setParams(params), link);
        return;
      }
    }
    this.turnStrategy?.onFrame(frame, direction, link);
  }

  /** End: wait for queued analysis so its edges go out before End. */
  override async stop(reason: StopReason): Promise<void> {
    if (reason.kind === "end") await this.idle();
  }

  /** Resolves once every frame received so far has been analysed. */
  async idle(): Promise<void> {
    while (this.#tail !== undefined) await this.#tail;
  }

  #analyze(audio: AudioFrame, link: Link): void {
    if (this.#tail !== undefined) {
      this.#backlog++;
      if (this.#backlog >= this.#maxBacklog && !this.#warned) {
        this.#warned = true;
        this.#log?.warn(`${this.name}: ${this.#backlog} frames wait for voice analysis`);
      }
      this.#enqueue(async () => {
        this.#backlog--;
        this.#onState(await this.#vad.analyze(audio), link);
      }, link);
      return;
    }
    let result: VadState | Promise<VadState>;
    try {
      result = this.#vad.analyze(audio);
    } catch (err) {
      this.#onError(err, link);
      return;
    }
    if (!isPromise(result)) {
      this.#onState(result, link);
      return;
    }
    const pending = result;
    this.#enqueue(async () => this.#onState(await pending, link), link);
  }

  #enqueue(job: () => void | Promise<void>, link: Link): void {
    if (this.#tail === undefined) {
      const r = job();
      if (r === undefined) return;
      this.#track(r.catch((err) => this.#onError(err, link)));
      return;
    }
    this.#track(this.#tail.then(job).catch((err) => this.#onError(err, link)));
  }

  #track(next: Promise<void>): void {
    this.#tail = next;
    void next.then(() => {
      if (this.#tail === next) this.#tail = undefined;
    });
  }

  #setParams(params: VadParams): void {
    this.#vad.setParams(this.#resumeUntil >= 0 ? this.#resumable(params) : params);
    this.#params = params;
  }

  #resumable(params: VadParams): VadParams {
    return { ...params, startSecs: Math.min(params.startSecs, this.#resumeStartSecs) };
  }

  /** The caller paused: for a while, their speech resumes quickly (see `resumeSecs`). */
  #beginResume(link: Link): void {
    if (this.#resumeSecs <= 0 || this.#botSpeaking) return;
    this.#resumeUntil = this.#audioSecs + this.#resumeSecs;
    this.#enqueue(() => this.#vad.setParams(this.#resumable(this.#params)), link);
  }

  #endResume(link: Link): void {
    if (this.#resumeUntil < 0) return;
    this.#resumeUntil = -1;
    this.#enqueue(() => this.#vad.setParams(this.#params), link);
  }

  #onState(state: VadState, link: Link): void {
    this.#failing = false;
    if (state === "starting" && !this.#speaking) this.turnStrategy?.onSpeechOnset?.(link);
    if (state === "speaking" && !this.#speaking) {
      this.#speaking = true;
      this.#speakingFrames = 0;
      this.#endResume(link);
      this.#edge(makeFrame("VadUserStartedSpeaking", { startSecs: this.#params.startSecs }), link);
    } else if (state === "quiet" && this.#speaking) {
      this.#speaking = false;
      this.#beginResume(link);
      this.#edge(makeFrame("VadUserStoppedSpeaking", { stopSecs: this.#params.stopSecs }), link);
    } else if (this.#speaking && this.#speakingEvery > 0) {
      if (++this.#speakingFrames % this.#speakingEvery === 0) {
        link.pushDown(makeFrame("UserSpeaking", {}));
      }
    }
  }

  #edge(frame: Frame, link: Link): void {
    link.pushDown(frame);
    this.turnStrategy?.onFrame(frame, "downstream", link);
  }

  #onError(err: unknown, link: Link): void {
    // One report per run of failures, not one per 20 ms frame.
    if (this.#failing) return;
    this.#failing = true;
    link.pushError(`voice analysis failed: ${errorMessage(err)}`, false);
  }
}
