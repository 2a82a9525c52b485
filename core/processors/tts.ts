/**
 * TtsProcessor: speaks text through the {@link TtsService} seam.
 *
 * Downstream in: LlmText is split into sentences (speech starts with the first one, not the
 * whole reply), LlmResponseEnd speaks the rest; TtsSpeak and Text are spoken as they are.
 * Out, per sentence: TtsText (what is being said, with the utterance id of its reply or line, so
 * the output transport can tell what of it played), then the service's TtsStarted, TtsAudio...,
 * Metrics, TtsStopped. LlmText itself stops here.
 *
 * Synthesis runs off the frame path, one sentence after another. An Interruption aborts the
 * one in flight through its AbortSignal (the provider's socket or body is cancelled, not
 * awaited) and drops the sentences still waiting. On End the queued speech is finished first
 * (a goodbye line is heard), bounded by `drainTimeoutMs`.
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
import type { TtsService } from "../seams.ts";
import type { CallTracer, RequestOutcome } from "../tracing.ts";
import { SentenceSplitter } from "../sentences.ts";
import { replyUtteranceId, speakUtteranceId } from "../utterance.ts";
import { settlesWithin } from "../wait.ts";

/** Options of a {@link TtsProcessor}. */
export interface TtsProcessorOptions {
  /** Model or voice name for metrics. */
  model?: string;
  /** Speak LLM text sentence by sentence (default true); false waits for the whole reply. */
  splitSentences?: boolean;
  /** On End, how long queued speech may still take (default 15 s). */
  drainTimeoutMs?: number;
  /** Processor name in logs and metrics (default `TtsProcessor`). */
  name?: string;
}

/** Runs a text-to-speech service inside a pipeline. */
export class TtsProcessor extends FrameProcessor {
  readonly #tts: TtsService;
  readonly #model: string | undefined;
  readonly #split: boolean;
  readonly #drainMs: number;
  #splitter = new SentenceSplitter();
  #whole = "";
  /** Utterance id of the reply whose text is arriving. */
  #reply: string | undefined;
  #queue: Promise<void> = Promise.resolve();
  #ctl = new AbortController();
  #tracer: CallTracer | undefined;
  /** Characters sent to the service over the call. */
  characters = 0;

  /** Wrap `tts`. */
  constructor(tts: TtsService, options: TtsProcessorOptions = {}) {
    super(options.name ?? "TtsProcessor");
    this.#tts = tts;
    this.#model = options.model;
    this.#split = options.splitSentences ?? true;
    this.#drainMs = options.drainTimeoutMs ?? 15_000;
  }

  /** Starts the service; one that cannot start makes the call fail (fatal). */
  override async start(s: ProcessorSetup, params: StartParams, link: Link): Promise<void> {
    this.#tracer = s.tracer;
    try {
      await this.#tts.start(params);
    } catch (err) {
      link.pushError(`${this.#tts.name()}: failed to start: ${errorMessage(err)}`, true);
    }
  }

  /** Queues text for speech; forwards everything else. */
  override processFrame(frame: Frame, dir: Direction, link: Link): void {
    if (dir === "downstream") {
      switch (frame.kind) {
        case "LlmResponseStart":
          this.#splitter.reset();
          this.#whole = "";
          this.#reply = replyUtteranceId(frame);
          break;
        case "LlmText":
          if (this.#split) {
            for (const s of this.#splitter.push(frame.text)) this.#say(s, this.#reply, link);
          } else this.#whole += frame.text;
          return;
        case "LlmResponseEnd":
          if (this.#split) {
            for (const s of this.#splitter.flush()) this.#say(s, this.#reply, link);
          } else if (this.#whole.trim()) this.#say(this.#whole.trim(), this.#reply, link);
          this.#whole = "";
          break;
        case "TtsSpeak":
          if (frame.text.trim()) this.#say(frame.text.trim(), speakUtteranceId(frame), link);
          return;
        case "Text":
          if (frame.text.trim()) this.#say(frame.text.trim(), `text-${frame.id}`, link);
          return;
      }
    }
    link.push(frame, dir);
  }

  /** Aborts the sentence being synthesized and drops the waiting ones. */
  override onInterruption(): void {
    this.#ctl.abort(new DOMException("interrupted", "AbortError"));
    this.#ctl = new AbortController();
    this.#splitter.reset();
    this.#whole = "";
  }

  /** End: finish what is queued (bounded); Stop/Cancel: abort. Then stop the service. */
  override async stop(reason: StopReason): Promise<void> {
    if (reason.kind === "end") await settlesWithin(this.#queue, this.#drainMs);
    this.#ctl.abort(new DOMException("stopped", "AbortError"));
    await settlesWithin(this.#queue, 2000);
    try {
      await this.#tts.stop?.();
    } catch { /* stopping a broken service is not news */ }
  }

  /** TTFB and usage are reported when the task enables metrics. */
  override canGenerateMetrics(): boolean {
    return true;
  }

  #say(text: string, utteranceId: string | undefined, link: Link): void {
    const ctl = this.#ctl;
    this.#queue = this.#queue.then(() => this.#speak(text, utteranceId, ctl.signal, link));
  }

  async #speak(
    text: string,
    utteranceId: string | undefined,
    signal: AbortSignal,
    link: Link,
  ): Promise<void> {
    if (signal.aborted) return;
    this.characters += text.length;
    link.pushDown(
      makeFrame("TtsText", utteranceId === undefined ? { text } : { text, utteranceId }),
    );
    link.startTtfb();
    const req = this.#tracer?.request({
      service: "tts",
      operation: "speak",
      text,
      ...(this.#model !== undefined ? { model: this.#model } : {}),
    });
    let outcome: RequestOutcome | undefined;
    let first = true;
    let stopped = false;
    try {
      for await (const frame of this.#tts.runTts(text, signal)) {
        if (signal.aborted) break;
        if (frame.kind === "TtsAudio" && first) {
          first = false;
          link.stopTtfb(this.#model);
          req?.firstByte();
        }
        if (frame.kind === "TtsStopped") stopped = true;
        await link.writable();
        if (signal.aborted) break;
        link.pushDown(frame);
      }
    } catch (err) {
      if (signal.aborted) return;
      const message = namedMessage(this.#tts.name(), err);
      outcome = { error: message };
      link.pushError(message, false);
      if (!stopped) link.pushDown(makeFrame("TtsStopped", {}));
    } finally {
      req?.end(outcome ?? (signal.aborted ? { interrupted: true } : undefined));
    }
  }
}
