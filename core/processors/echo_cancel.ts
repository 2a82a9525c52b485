/**
 * EchoCancelProcessor: removes the agent's own voice from the caller's InputAudio, for callers
 * on a speakerphone or a leaky handset, so the VAD does not hear it as the caller barging in.
 *
 * The reference is what {@link TransportOutput} actually sent, after pacing, placed on the
 * playout timeline ({@link EchoReference}); feed it with
 * `output.onSent((audio, at) => aec.reference(audio, at))` (the call builders do, when
 * `echoCancel` is set). Each mono InputAudio frame goes through this call's
 * {@link EchoCanceller} at the frame's own rate and on as a new InputAudio frame of the same
 * length (16 ms later: two blocks). Put it right after the input transport, before the VAD.
 *
 * `UpdateSettings` with target `echo_cancel` (or `all`) and `{ enabled: boolean }` turns it off
 * and on during a call; turning it on again starts from a fresh filter.
 *
 * @example
 * ```ts
 * import { EchoCancelProcessor, TransportOutput } from "@flowcat/flowcat";
 * declare const output: TransportOutput;
 * const aec = new EchoCancelProcessor();
 * output.onSent((audio, at) => aec.reference(audio, at));
 * // Pipeline: [transportIn, aec, vad, stt, llm, tts, output]
 * ```
 *
 * Permissions: none.
 * @module
 */

import { EchoCanceller } from "../audio/aec.ts";
import { EchoReference } from "../audio/aec_reference.ts";
import {
  type AudioFrame,
  cloneFrame,
  type Direction,
  type Frame,
  type FrameOf,
} from "../frames.ts";
import { FrameProcessor, type Link } from "../processor.ts";

/** Options of an {@link EchoCancelProcessor}. */
export interface EchoCancelOptions {
  /** Start enabled (default true). */
  enabled?: boolean;
  /** Longest bulk delay of the echo, ms (default 300). */
  maxDelayMs?: number;
  /** Echo tail after the bulk delay, ms (default 160). */
  tailMs?: number;
  /** Processor name (default `EchoCancel`). */
  name?: string;
}

/** Cancels the bot's echo in downstream InputAudio; forwards everything else. */
export class EchoCancelProcessor extends FrameProcessor {
  #enabled: boolean;
  readonly #maxDelayMs: number;
  readonly #tailMs: number;
  #aec: EchoCanceller | undefined;
  #ref: EchoReference | undefined;
  #refBuf = new Int16Array(0);
  /** Reference chunks sent before the first caller frame fixed the rate. */
  #pending: { audio: AudioFrame; at: number }[] = [];

  /** Make a processor (see {@link EchoCancelOptions}). */
  constructor(opts: EchoCancelOptions = {}) {
    super(opts.name ?? "EchoCancel");
    this.#enabled = opts.enabled ?? true;
    this.#maxDelayMs = opts.maxDelayMs ?? 300;
    this.#tailMs = opts.tailMs ?? 160;
  }

  /** True while audio is being cancelled. */
  get enabled(): boolean {
    return this.#enabled;
  }

  /** Echo return loss enhancement over the recent single talk, in dB (NaN before any). */
  get erleDb(): number {
    return this.#aec?.erleDb ?? NaN;
  }

  /** The canceller of this call, once the first caller frame has set its rate. */
  get canceller(): EchoCanceller | undefined {
    return this.#aec;
  }

  /** Note audio that left for the caller, starting at `playAtMs` on the playout timeline. */
  reference(audio: AudioFrame, playAtMs: number): void {
    if (!this.#enabled || audio.numChannels !== 1) return;
    if (this.#ref === undefined) {
      // The rate is the caller's, known from their first frame; keep a little until then.
      if (this.#pending.length < 100) this.#pending.push({ audio, at: playAtMs });
      return;
    }
    this.#ref.write(audio, playAtMs);
  }

  /** Cancels echo in InputAudio when enabled; handles `UpdateSettings` for `echo_cancel`. */
  override processFrame(frame: Frame, direction: Direction, link: Link): void {
    if (direction === "downstream") {
      if (frame.kind === "InputAudio" && this.#enabled && frame.audio.numChannels === 1) {
        const out = cloneFrame(frame) as FrameOf<"InputAudio">;
        out.audio = this.#cancel(frame.audio, performance.now());
        return link.push(out, direction);
      }
      if (
        frame.kind === "UpdateSettings" &&
        (frame.target === "echo_cancel" || frame.target === "all")
      ) {
        const on = frame.settings.enabled;
        if (typeof on === "boolean" && on !== this.#enabled) {
          this.#enabled = on;
          // Back on: the echo path may have changed meanwhile, and the reference has a gap.
          this.#aec = this.#ref = undefined;
          this.#pending = [];
        }
      }
    }
    link.push(frame, direction);
  }

  /** The caller's audio less the echo of what was played. */
  #cancel(audio: AudioFrame, now: number): AudioFrame {
    const rate = audio.sampleRate;
    if (this.#aec?.sampleRate !== rate) {
      this.#aec = new EchoCanceller({
        sampleRate: rate,
        maxDelayMs: this.#maxDelayMs,
        tailMs: this.#tailMs,
      });
      this.#ref = new EchoReference(rate);
      for (const p of this.#pending) this.#ref.write(p.audio, p.at);
      this.#pending = [];
    }
    const n = audio.pcm.length;
    if (this.#refBuf.length !== n) this.#refBuf = new Int16Array(n);
    const ref = this.#ref!.read(this.#refBuf, now);
    return { pcm: this.#aec.process(audio.pcm, ref), sampleRate: rate, numChannels: 1 };
  }
}
