/**
 * LlmProcessor: drives a language model through the {@link LlmService} seam.
 *
 * Downstream in: LlmContext (the caller finished a turn) or LlmRun starts a reply over the
 * shared context; the service's frames go downstream as they stream in (LlmResponseStart,
 * LlmText..., FunctionCallsStarted, Metrics, LlmResponseEnd). An LlmContext with `draft` (the
 * caller paused but may go on) starts the reply on its copy of the context and holds every frame
 * of it, tool calls included; LlmDraftSettled then plays it (confirmed) or aborts the request
 * and drops it. Upstream in, from the brain:
 * UpdateSettings (target `llm`) replaces the system prompt and tools; FunctionCallResult
 * answers a call, and once every call of the reply is answered the model runs again (unless a
 * result says `runLlm: false`).
 *
 * The reply streams off the frame path, so an Interruption (or a newer turn) aborts it at
 * once through its AbortSignal instead of waiting for the model's current await. A failing
 * model is not fatal: the error goes upstream and the bot says a fallback line (a TtsSpeak
 * marked `appendToContext`, so the context and the transcript record it).
 * @module
 */

import { errorMessage, namedMessage } from "../errors.ts";
import {
  type Direction,
  type Frame,
  type FrameOf,
  type LlmContext,
  type LlmTokenUsage,
  makeFrame,
  type MetricsData,
  type StartParams,
  type StopReason,
  type ToolDecl,
} from "../frames.ts";
import { FrameProcessor, type Link, type ProcessorSetup } from "../processor.ts";
import type { LlmService } from "../seams.ts";
import type { CallTracer, RequestOutcome } from "../tracing.ts";
import { setContextSystem } from "./context.ts";

/** Options of an {@link LlmProcessor}. */
export interface LlmProcessorOptions {
  /** Model name for metrics and usage. */
  model?: string;
  /** Said when the model fails (default a short apology; "" for silence). */
  fallbackText?: string;
  /** Run the model once when the caller connects (it speaks first). */
  runOnConnect?: boolean;
  /** Processor name in logs and metrics (default `LlmProcessor`). */
  name?: string;
}

/** Token usage summed over a call. */
export interface LlmUsage extends LlmTokenUsage {
  /** Model name, when known. */
  model?: string;
  /** Number of model runs in the call. */
  turns: number;
}

const DEFAULT_FALLBACK = "Sorry, I am having trouble answering right now.";

/** A reply to a turn not yet over: its frames are `held` until confirmed (then undefined). */
interface Draft {
  id: number;
  held: Frame[] | undefined;
  /** The model finished (or failed) while held. */
  ended: boolean;
}

/** Runs a language model inside a pipeline. */
export class LlmProcessor extends FrameProcessor {
  readonly #llm: LlmService;
  readonly #model: string | undefined;
  readonly #fallback: string;
  readonly #runOnConnect: boolean;
  #context: LlmContext;
  #current: AbortController | undefined;
  /** The reply in flight when it is a draft (see {@link Draft}). */
  #draft: Draft | undefined;
  #running: Promise<void> = Promise.resolve();
  #awaitingResults = new Set<string>();
  #rerun = false;
  #stopped = false;
  #tracer: CallTracer | undefined;
  /** Usage summed over the call (for finalize). */
  readonly usage: LlmUsage = { promptTokens: 0, completionTokens: 0, totalTokens: 0, turns: 0 };

  /** Wrap `llm`, answering over `context`. */
  constructor(llm: LlmService, context: LlmContext, options: LlmProcessorOptions = {}) {
    super(options.name ?? "LlmProcessor");
    this.#llm = llm;
    this.#context = context;
    this.#model = options.model;
    this.#fallback = options.fallbackText ?? DEFAULT_FALLBACK;
    this.#runOnConnect = options.runOnConnect ?? false;
    if (options.model !== undefined) this.usage.model = options.model;
  }

  /** True while a reply streams. */
  get generating(): boolean {
    return this.#current !== undefined;
  }

  /** Starts the service; a service that cannot start makes the call fail (fatal). */
  override async start(s: ProcessorSetup, params: StartParams, link: Link): Promise<void> {
    this.#tracer = s.tracer;
    try {
      await this.#llm.start(params);
      this.#llm.setTools(this.#context.tools);
    } catch (err) {
      link.pushError(`${this.#llm.name()}: failed to start: ${errorMessage(err)}`, true);
    }
  }

  /** Starts replies; applies the brain's moves. */
  override processFrame(frame: Frame, dir: Direction, link: Link): void {
    if (dir === "downstream") {
      if (frame.kind === "LlmContext") {
        // A draft runs on its own copy; the conversation's context stays the one to rerun on.
        if (frame.draft !== undefined) return this.#generate(link, frame.context, frame.draft);
        this.#context = frame.context;
        return this.#generate(link);
      }
      if (frame.kind === "LlmDraftSettled") return this.#settle(frame, link);
      if (frame.kind === "LlmRun") return this.#generate(link);
      link.push(frame, dir);
      if (frame.kind === "ClientConnected" && this.#runOnConnect) this.#generate(link);
      return;
    }
    if (frame.kind === "UpdateSettings" && frame.target === "llm") {
      const s = frame.settings;
      const prompt = typeof s.systemPrompt === "string" ? s.systemPrompt : undefined;
      const tools = Array.isArray(s.tools) ? (s.tools as ToolDecl[]) : this.#context.tools;
      setContextSystem(this.#context, prompt ?? systemOf(this.#context), tools);
      this.#llm.setTools(tools);
    } else if (frame.kind === "FunctionCallResult") {
      const r = frame.result;
      this.#awaitingResults.delete(r.toolCallId);
      if (r.runLlm !== false) this.#rerun = true;
      if (this.#awaitingResults.size === 0 && this.#rerun) {
        this.#rerun = false;
        this.#generate(link);
      }
      return;
    }
    link.push(frame, dir);
  }

  /** Aborts the reply in flight (out of band: the model's pending read is cancelled). */
  override onInterruption(): void {
    this.#abort();
  }

  /** Aborts any reply and stops the service. */
  override async stop(_reason: StopReason): Promise<void> {
    this.#stopped = true;
    this.#abort();
    await this.#running;
    try {
      await this.#llm.stop?.();
    } catch { /* stopping a broken model is not news */ }
  }

  /** Usage metrics and TTFB are reported when the task enables them. */
  override canGenerateMetrics(): boolean {
    return true;
  }

  #abort(): void {
    this.#current?.abort(new DOMException("interrupted", "AbortError"));
    this.#current = undefined;
    this.#draft = undefined;
    this.#awaitingResults.clear();
    this.#rerun = false;
  }

  #generate(link: Link, context: LlmContext = this.#context, draftId?: number): void {
    if (this.#stopped) return;
    this.#abort();
    const ctl = new AbortController();
    this.#current = ctl;
    const draft = draftId === undefined ? undefined : { id: draftId, held: [], ended: false };
    this.#draft = draft;
    const previous = this.#running;
    this.#running = previous.then(() => this.#stream(ctl, link, context, draft));
  }

  /** The caller's turn is over: play the draft's reply (or answer afresh), or drop the draft. */
  #settle(frame: FrameOf<"LlmDraftSettled">, link: Link): void {
    const draft = this.#draft;
    const ours = draft !== undefined && draft.id === frame.draftId;
    if (!frame.confirmed) {
      if (ours) this.#abort();
      return;
    }
    this.#context = frame.context;
    // A draft this processor no longer has (an interruption dropped it): answer now.
    if (!ours || draft.held === undefined) return this.#generate(link);
    const held = draft.held;
    draft.held = undefined;
    for (const f of held) link.pushDown(f);
    if (draft.ended) {
      this.usage.turns++;
      this.#draft = undefined;
      this.#current = undefined;
    }
  }

  async #stream(
    ctl: AbortController,
    link: Link,
    context: LlmContext,
    draft: Draft | undefined,
  ): Promise<void> {
    if (ctl.signal.aborted) return;
    const live = () => !ctl.signal.aborted && !this.#stopped;
    // A draft's frames wait for its confirmation; after it they go down as they come.
    const emit = async (f: Frame) => {
      if (draft?.held !== undefined) return void draft.held.push(f);
      await link.writable();
      if (live()) link.pushDown(f);
    };
    let started = false;
    let ended = false;
    let first = true;
    link.startTtfb();
    link.startProcessing();
    const req = this.#tracer?.request({
      service: "llm",
      operation: "chat",
      messages: this.#context.messages,
      ...(this.#model !== undefined ? { model: this.#model } : {}),
    });
    let outcome: RequestOutcome | undefined;
    try {
      for await (const frame of this.#llm.runLlm(context, ctl.signal)) {
        if (!live()) break;
        switch (frame.kind) {
          case "LlmResponseStart":
            started = true;
            break;
          case "LlmText":
            if (first) {
              first = false;
              link.stopTtfb(this.#model);
              req?.firstByte();
            }
            req?.output(frame.text);
            break;
          case "FunctionCallsStarted":
            for (const c of frame.calls) this.#awaitingResults.add(c.toolCallId);
            req?.toolCalls(frame.calls);
            break;
          case "Metrics":
            this.#addUsage(frame.data, link);
            if (req !== undefined) usageOf(frame.data, (t) => req.usage(t));
            continue;
          case "LlmResponseEnd":
            ended = true;
            break;
        }
        await emit(frame);
        if (!live()) break;
      }
      if (live()) {
        if (started && !ended) await emit(makeFrame("LlmResponseEnd", {}));
        this.#finished(draft);
      }
    } catch (err) {
      if (!live()) return;
      // Said at once (the provider failed), even for a draft; the fallback is the reply.
      const message = namedMessage(this.#llm.name(), err);
      outcome = { error: message };
      link.pushError(message, false);
      if (started && !ended) await emit(makeFrame("LlmResponseEnd", {}));
      if (this.#fallback) {
        // Recorded like a reply (the context aggregator writes it): the caller heard it.
        await emit(makeFrame("TtsSpeak", { text: this.#fallback, appendToContext: true }));
      }
      if (draft !== undefined) draft.ended = true;
    } finally {
      req?.end(outcome ?? (live() ? undefined : { interrupted: true }));
      link.stopProcessing(this.#model);
      if (this.#current === ctl && draft?.held === undefined) {
        this.#current = undefined;
        this.#draft = undefined;
      }
    }
  }

  /** A reply ran to its end: counted once heard (a held draft, once confirmed). */
  #finished(draft: Draft | undefined): void {
    if (draft === undefined || draft.held === undefined) this.usage.turns++;
    else draft.ended = true;
  }

  #addUsage(data: readonly MetricsData[], link: Link): void {
    for (const d of data) {
      if (d.type !== "llm_usage") continue;
      const t = d.tokens;
      this.usage.promptTokens += t.promptTokens;
      this.usage.completionTokens += t.completionTokens;
      this.usage.totalTokens += t.totalTokens;
      link.reportLlmUsage(t, this.#model);
    }
  }
}

/** Each token report in `data`. */
function usageOf(data: readonly MetricsData[], fn: (t: LlmTokenUsage) => void): void {
  for (const d of data) if (d.type === "llm_usage") fn(d.tokens);
}

function systemOf(context: LlmContext): string {
  const m = context.messages.find((m) => m.role === "system");
  return m?.content ?? "";
}
