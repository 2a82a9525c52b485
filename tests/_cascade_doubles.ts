/**
 * In-process doubles of the cascaded service seams, for processor tests: scripted replies,
 * a record of what each was asked, and abort signals the tests can watch. The wire-level
 * fakes of real providers live in tests/fakes/.
 */

import {
  type AudioFrame,
  type Frame,
  type FunctionCall,
  type LlmContext,
  type LlmService,
  makeFrame,
  type SttService,
  type ToolDecl,
  ttsAudio,
  type TtsService,
  type VadAnalyzer,
  type VadState,
} from "../mod.ts";
import { sleep } from "./_core_helpers.ts";

/** One scripted reply of a {@link ScriptedLlm}: text pieces, then optional tool calls. */
export interface ScriptedReply {
  text?: string[];
  calls?: FunctionCall[];
  /** Wait this long between pieces (ms), so a test can interrupt mid-stream. */
  gapMs?: number;
  /** Throw this after the text. */
  fail?: string;
}

/** A language model answering from a script, one reply per run. */
export class ScriptedLlm implements LlmService {
  /** Snapshots of the context each run saw (messages copied). */
  readonly contexts: LlmContext[] = [];
  readonly signals: AbortSignal[] = [];
  tools: ToolDecl[] = [];
  constructor(readonly replies: ScriptedReply[]) {}
  name(): string {
    return "scripted-llm";
  }
  start(): Promise<void> {
    return Promise.resolve();
  }
  setTools(tools: ToolDecl[]): void {
    this.tools = tools;
  }
  async *runLlm(context: LlmContext, signal?: AbortSignal): AsyncIterable<Frame> {
    this.contexts.push({ messages: structuredClone(context.messages), tools: context.tools });
    if (signal) this.signals.push(signal);
    const reply = this.replies.shift() ?? { text: ["(no more replies)"] };
    yield makeFrame("LlmResponseStart", {});
    for (const t of reply.text ?? []) {
      if (reply.gapMs) await sleep(reply.gapMs);
      if (signal?.aborted) return;
      yield makeFrame("LlmText", { text: t });
    }
    if (reply.fail) throw new Error(reply.fail);
    if (reply.calls) yield makeFrame("FunctionCallsStarted", { calls: reply.calls });
    yield makeFrame("Metrics", {
      data: [{
        type: "llm_usage",
        processor: "scripted-llm",
        tokens: { promptTokens: 10, completionTokens: 5, totalTokens: 15 },
      }],
    });
    yield makeFrame("LlmResponseEnd", {});
  }
}

/** Text to speech making a tone per character: `msPerChar` (10) of 16 kHz audio each, in 3 chunks. */
export class ToneTts implements TtsService {
  readonly said: string[] = [];
  readonly aborted: string[] = [];
  constructor(readonly gapMs = 0, readonly msPerChar = 10) {}
  name(): string {
    return "tone-tts";
  }
  sampleRate(): number {
    return 16000;
  }
  start(): Promise<void> {
    return Promise.resolve();
  }
  async *runTts(text: string, signal?: AbortSignal): AsyncIterable<Frame> {
    this.said.push(text);
    yield makeFrame("TtsStarted", {});
    const samples = text.length * 16 * this.msPerChar;
    for (let part = 0; part < 3; part++) {
      if (this.gapMs) await sleep(this.gapMs);
      if (signal?.aborted) {
        this.aborted.push(text);
        return;
      }
      const pcm = new Int16Array(Math.ceil(samples / 3)).fill(3000);
      yield ttsAudio({ pcm, sampleRate: 16000, numChannels: 1 });
    }
    yield makeFrame("TtsStopped", {});
  }
}

/**
 * Speech to text that "hears" a fixed sentence per segment (batch style); a sentence starting
 * with `!` makes that segment fail with the rest as the error.
 */
export class SegmentStt implements SttService {
  muted = false;
  heardFrames = 0;
  segments = 0;
  #open = false;
  constructor(readonly sentences: string[]) {}
  name(): string {
    return "segment-stt";
  }
  start(): Promise<void> {
    return Promise.resolve();
  }
  runStt(_audio: AudioFrame): Promise<Frame[]> {
    if (!this.muted && this.#open) this.heardFrames++;
    return Promise.resolve([]);
  }
  setMuted(muted: boolean): void {
    this.muted = muted;
  }
  speechStarted(): void {
    this.#open = true;
  }
  speechStopped(): Promise<Frame[]> {
    this.#open = false;
    this.segments++;
    const text = this.sentences.shift();
    if (text?.startsWith("!")) return Promise.reject(new Error(text.slice(1)));
    return Promise.resolve(
      text ? [makeFrame("Transcription", { text, userId: "user", final: true })] : [],
    );
  }
}

/** Voice activity a test switches on and off (`state`), whatever the audio. */
export class ScriptedVad implements VadAnalyzer {
  state: VadState = "quiet";
  sampleRate(): number {
    return 16000;
  }
  analyze(_audio: AudioFrame): VadState {
    return this.state;
  }
  setParams(): void {}
}
