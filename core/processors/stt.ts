/**
 * SttProcessor: transcribes the caller through the {@link SttService} seam.
 *
 * Downstream in: InputAudio is forwarded, then fed to the service, and whatever transcription
 * frames the service has ready (InterimTranscription, Transcription) follow it downstream.
 * UserStartedSpeaking / UserStoppedSpeaking (from the VAD in front) open and close a segment
 * on batch services (`speechStarted` / `speechStopped`), whose transcript arrives off the
 * frame path so caller audio keeps flowing meanwhile. SttMute mutes the service.
 *
 * A failing service is not fatal: errors go upstream as Error frames, at most one per
 * `errorEverySecs`, so a broken socket does not flood the pipeline fifty times a second. The
 * caller is not left in silence either: when the words of a turn could not be transcribed (the
 * segment's transcription failed after the provider's own retries, or a streaming service
 * failed while the caller spoke), the bot says `fallbackText` (a TtsSpeak marked
 * `appendToContext`, so the context and the transcript record it), once per failed turn.
 * @module
 */

import { errorMessage, namedMessage } from "../errors.ts";
import {
  type Direction,
  type Frame,
  makeFrame,
  type StartParams,
  type StopReason,
} from "../frames.ts";
import { FrameProcessor, type Link, type ProcessorSetup } from "../processor.ts";
import type { SttService } from "../seams.ts";
import type { CallTracer, RequestTrace } from "../tracing.ts";
import { settlesWithin } from "../wait.ts";

/** Options of an {@link SttProcessor}. */
export interface SttProcessorOptions {
  /** Model name for metrics. */
  model?: string;
  /** Report a failing service at most this often (default 5 s). */
  errorEverySecs?: number;
  /** Processor name in logs and metrics (default `SttProcessor`). */
  name?: string;
  /** Said when a turn's words could not be transcribed (default: a request to repeat; "" for silence). */
  fallbackText?: string;
}

/** What the bot says when a turn could not be transcribed. */
export const DEFAULT_STT_FALLBACK = "Sorry, I did not catch that. Could you say it again?";

/** Runs a speech-to-text service inside a pipeline. */
export class SttProcessor extends FrameProcessor {
  readonly #stt: SttService;
  readonly #model: string | undefined;
  readonly #errorEveryMs: number;
  #lastErrorAt = -Infinity;
  readonly #fallback: string;
  #segments: Promise<void> = Promise.resolve();
  #awaitingFinal = false;
  #tracer: CallTracer | undefined;
  /** The traced segment waiting for its final transcript (only with a tracer). */
  #req: RequestTrace | undefined;
  /** The service failed since the caller last started speaking, and no transcript came since. */
  #failedInTurn = false;

  /** Wrap `stt`. */
  constructor(stt: SttService, options: SttProcessorOptions = {}) {
    super(options.name ?? "SttProcessor");
    this.#stt = stt;
    this.#model = options.model;
    this.#errorEveryMs = (options.errorEverySecs ?? 5) * 1000;
    this.#fallback = options.fallbackText ?? DEFAULT_STT_FALLBACK;
  }

  /** Starts the service; one that cannot start makes the call fail (fatal). */
  override async start(s: ProcessorSetup, params: StartParams, link: Link): Promise<void> {
    this.#tracer = s.tracer;
    try {
      await this.#stt.start(params);
    } catch (err) {
      link.pushError(`${this.#stt.name()}: failed to start: ${errorMessage(err)}`, true);
    }
  }

  /** Feeds audio and turn edges to the service; pushes its transcriptions. */
  override async processFrame(frame: Frame, dir: Direction, link: Link): Promise<void> {
    link.push(frame, dir);
    if (dir !== "downstream") return;
    switch (frame.kind) {
      case "InputAudio":
        try {
          this.#emit(await this.#stt.runStt(frame.audio), link);
        } catch (err) {
          this.#fail(err, link);
          this.#failedInTurn = true;
        }
        return;
      case "UserStartedSpeaking":
        this.#failedInTurn = false;
        this.#stt.speechStarted?.();
        return;
      case "UserStoppedSpeaking": {
        // Time from the end of the caller's speech to its final transcript.
        link.startTtfb();
        this.#awaitingFinal = true;
        if (this.#tracer !== undefined) this.#trace(this.#tracer);
        const stopped = this.#stt.speechStopped?.();
        if (stopped === undefined) {
          // A streaming service that failed while the caller spoke has nothing to give.
          if (this.#failedInTurn) this.#notHeard(link);
          return;
        }
        const req = this.#req;
        this.#segments = this.#segments.then(() =>
          stopped.then((frames) => {
            this.#emit(frames, link);
            // A segment with no words (a cough): the request is over all the same.
            if (req !== undefined && this.#req === req) this.#endReq();
          }, (err) => {
            this.#fail(err, link);
            this.#notHeard(link);
          })
        );
        return;
      }
      case "SttMute":
        this.#stt.setMuted(frame.mute);
        return;
    }
  }

  /** Waits (bounded) for a segment still being transcribed, then stops the service. */
  override async stop(_reason: StopReason): Promise<void> {
    await settlesWithin(this.#segments, 3000);
    this.#endReq({ interrupted: true });
    try {
      await this.#stt.stop?.();
    } catch { /* stopping a broken service is not news */ }
  }

  /** TTFB is reported when the task enables metrics. */
  override canGenerateMetrics(): boolean {
    return true;
  }

  #emit(frames: readonly Frame[], link: Link): void {
    for (const f of frames) {
      if (f.kind === "Transcription") {
        this.#failedInTurn = false;
        if (this.#awaitingFinal) {
          this.#awaitingFinal = false;
          link.stopTtfb(this.#model);
          if (this.#req !== undefined) {
            this.#req.firstByte();
            this.#req.output(f.text);
          }
          this.#endReq();
        }
      }
      link.pushDown(f);
    }
  }

  /** A segment is sent for transcription: trace it (ending one still waiting, unanswered). */
  #trace(tracer: CallTracer): void {
    this.#endReq();
    this.#req = tracer.request(
      this.#model === undefined
        ? { service: "stt", operation: "transcribe" }
        : { service: "stt", operation: "transcribe", model: this.#model },
    );
  }

  #endReq(outcome?: { error?: string; interrupted?: boolean }): void {
    const req = this.#req;
    if (req === undefined) return;
    this.#req = undefined;
    req.end(outcome);
  }

  /** The caller's words were lost: ask them to repeat, rather than say nothing. */
  #notHeard(link: Link): void {
    this.#failedInTurn = false;
    this.#awaitingFinal = false;
    if (this.#fallback === "") return;
    link.pushDown(makeFrame("TtsSpeak", { text: this.#fallback, appendToContext: true }));
  }

  #fail(err: unknown, link: Link): void {
    if (this.#req !== undefined) this.#endReq({ error: namedMessage(this.#stt.name(), err) });
    const now = performance.now();
    if (now - this.#lastErrorAt < this.#errorEveryMs) return;
    this.#lastErrorAt = now;
    link.pushError(namedMessage(this.#stt.name(), err), false);
  }
}
