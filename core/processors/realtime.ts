/**
 * RealtimeProcessor: drives one speech-to-speech model through the {@link RealtimeLlm} seam.
 *
 * Downstream in: InputAudio (resampled to the model's input rate when needed: 16 kHz unless the
 * `inputRate` option says otherwise) and InputDtmf go to the model, and on (InputAudio only when
 * `forwardInputAudio`: a recorder further down). Upstream in, from the brain processor: UpdateSettings (target `llm`) becomes `updateSystem` (then `say`), and
 * FunctionCallResult becomes `sendToolResult`, in arrival order, so the model has its new
 * prompt and tools before it reads the result.
 *
 * Model events out: audio -> TtsAudio (at the model's output rate); caller text -> Interim
 * Transcription / Transcription (`userId` "user"); model text -> TtsText / Transcription (`userId`
 * "bot"); tool call -> FunctionCallsStarted; interrupted -> Interruption broadcast (the output
 * transport clears the far end's playback); usage -> Metrics and {@link RealtimeProcessor.usage};
 * turn complete -> TtsStopped (the turn has all its audio); closed -> End upstream (the call
 * drains and is finalized).
 *
 * Each model turn is one utterance: its TtsText (an empty one opens it when the voice comes
 * before the words) and its bot Transcription carry the same `utteranceId`, so the output
 * transport can say what of it played and the transcript line can be cut to that on a barge-in.
 * A turn's words that arrive after its interruption (a final transcript) keep the turn's id;
 * the next audio starts a new turn.
 *
 * Control calls to the model are chained off the frame path. Its events arrive pushed
 * ({@link RealtimeLlm.listen}, from the model socket's own callback: no reader task, no promise
 * per event), or through a reader task for a model without push mode.
 * @module
 */

import { Resampler } from "../audio/resample.ts";
import { errorMessage } from "../errors.ts";
import {
  type AudioFrame,
  type Direction,
  type Frame,
  type LlmTokenUsage,
  makeFrame,
  type StartParams,
  type StopReason,
  type ToolDecl,
  ttsAudio,
} from "../frames.ts";
import { FrameProcessor, type Link, type ProcessorSetup } from "../processor.ts";
import {
  DEFAULT_REALTIME_RATES,
  type RealtimeEvent,
  type RealtimeLlm,
  type RealtimeSetup,
} from "../seams.ts";
import type { CallTracer, RequestTrace } from "../tracing.ts";
import { newUtteranceId } from "../utterance.ts";
import { settlesWithin } from "../wait.ts";

/** Options of a {@link RealtimeProcessor}. */
export interface RealtimeProcessorOptions {
  /** Model name for metrics and usage. */
  model?: string;
  /** Give up connecting after this long (default 15 s). */
  connectTimeoutMs?: number;
  /** Processor name in logs and metrics (default `RealtimeProcessor`). */
  name?: string;
  /** Rate the model takes the caller's audio at, Hz (its `audioRates()`; default 16000). */
  inputRate?: number;
  /** Pass InputAudio on after the model (default true; false when nothing after it records). */
  forwardInputAudio?: boolean;
}

/** Accumulated token usage of a call. */
export interface RealtimeUsage extends LlmTokenUsage {
  /** Model name, when known. */
  model?: string;
  /** Number of completed model turns in the call. */
  turns: number;
}

/** Runs a realtime model inside a pipeline. */
export class RealtimeProcessor extends FrameProcessor {
  readonly #llm: RealtimeLlm;
  readonly #setup: RealtimeSetup;
  readonly #forwardInputAudio: boolean;
  readonly #model: string | undefined;
  readonly #connectTimeoutMs: number;
  readonly #inputRate: number;
  #up: Resampler | undefined;
  #chain: Promise<void> = Promise.resolve();
  #connected = false;
  #stopping = false;
  #awaitingFirstAudio = false;
  /** True once the model's events have ended (closed, or the reader finished). */
  #ended = false;
  /** Wakes `stop` when the model's events end in push mode. */
  #onEnded: (() => void) | undefined;
  /** Utterance id of the model's turn being relayed. */
  #turn: string | undefined;
  /** The turn's words have been sent as TtsText. */
  #turnHasText = false;
  /** The turn was interrupted: its late words keep its id, its next audio is a new turn. */
  #turnCut = false;
  #tracer: CallTracer | undefined;
  /** The traced session (connect to close) and model response in flight (only with a tracer). */
  #session: RequestTrace | undefined;
  #response: RequestTrace | undefined;
  /** Usage summed over the call (for finalize). */
  readonly usage: RealtimeUsage = {
    promptTokens: 0,
    completionTokens: 0,
    totalTokens: 0,
    turns: 0,
  };
  /** The node the brain last moved to, if any. */
  nodeId: string | undefined;

  /** Wrap `llm`, connected with `setup` on Start. */
  constructor(llm: RealtimeLlm, setup: RealtimeSetup, options: RealtimeProcessorOptions = {}) {
    super(options.name ?? "RealtimeProcessor");
    this.#llm = llm;
    this.#setup = setup;
    this.#model = options.model;
    this.#connectTimeoutMs = options.connectTimeoutMs ?? 15_000;
    this.#inputRate = options.inputRate ?? DEFAULT_REALTIME_RATES.input;
    this.#forwardInputAudio = options.forwardInputAudio ?? true;
    if (options.model !== undefined) this.usage.model = options.model;
  }

  /** True once the model accepted the setup. */
  get connected(): boolean {
    return this.#connected;
  }

  /** Connects the model (bounded), then listens to its events (or reads them). Fatal on failure. */
  override async start(s: ProcessorSetup, _p: StartParams, link: Link): Promise<void> {
    this.#tracer = s.tracer;
    this.#session = this.#trace("session");
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      await Promise.race([
        this.#llm.connect(this.#setup),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`no answer in ${this.#connectTimeoutMs} ms`)),
            this.#connectTimeoutMs,
          );
        }),
      ]);
    } catch (err) {
      const message = `realtime model failed to connect: ${errorMessage(err)}`;
      this.#endTraces({ error: message });
      link.pushError(message, true);
      return;
    } finally {
      clearTimeout(timer);
    }
    this.#connected = true;
    this.#session?.firstByte();
    // From the next macrotask, as TransportInput does: Start must reach the processors below
    // before the model's first event (a greeting said on connect) does.
    setTimeout(() => this.#receive(link), 0);
  }

  /**
   * Take the model's events: pushed when it offers that (no reader task, no promise per event),
   * else read. A method of its own, so the listener's closure holds `link` and nothing of
   * `start` (its connect timer would stay reachable for the whole call).
   */
  #receive(link: Link): void {
    const listen = this.#llm.listen;
    if (listen !== undefined) listen.call(this.#llm, (ev) => this.#deliver(ev, link));
    else void this.#readEvents(link);
  }

  /** Feeds the model; applies the brain's moves. */
  override processFrame(frame: Frame, dir: Direction, link: Link): void {
    if (dir === "downstream") {
      if (frame.kind === "InputAudio") {
        this.#sendAudio(frame.audio, link);
        if (!this.#forwardInputAudio) return;
      } else if (frame.kind === "InputDtmf") {
        const send = this.#llm.sendDtmf;
        if (send !== undefined) this.#then(link, "dtmf", () => send.call(this.#llm, frame.key));
      }
    } else if (frame.kind === "UpdateSettings" && frame.target === "llm") {
      const s = frame.settings;
      const prompt = typeof s.systemPrompt === "string" ? s.systemPrompt : this.#setup.systemPrompt;
      const tools = Array.isArray(s.tools) ? (s.tools as ToolDecl[]) : [];
      const say = typeof s.say === "string" && s.say !== "" ? s.say : undefined;
      if (typeof s.nodeId === "string") this.nodeId = s.nodeId;
      const llm = this.#llm;
      this.#then(link, "update system", async () => {
        if (say !== undefined && llm.say === undefined) {
          await llm.updateSystem(`${prompt}\n\nSay this to the caller now: "${say}"`, tools);
          return;
        }
        await llm.updateSystem(prompt, tools);
        if (say !== undefined) await llm.say!(say);
      });
      return;
    } else if (frame.kind === "FunctionCallResult") {
      const r = frame.result;
      this.#then(link, "tool result", () => this.#llm.sendToolResult(r.toolCallId, r.result));
      return;
    }
    link.push(frame, dir);
  }

  /** Closes the model, then reads what it still had to say (final usage) for a bounded time. */
  override async stop(_reason: StopReason): Promise<void> {
    this.#stopping = true;
    await this.#chain;
    try {
      await this.#llm.close();
    } catch { /* closing a broken model is not news */ }
    if (this.#ended || !this.#connected) return this.#endTraces();
    await settlesWithin(new Promise<void>((resolve) => (this.#onEnded = resolve)), 1000);
    this.#onEnded = undefined;
    this.#endTraces();
  }

  /** Trace a session or a response (to the caller's `heard` words, when it answers them). */
  #trace(operation: "session" | "response", heard?: string): RequestTrace | undefined {
    const model = this.#model;
    return this.#tracer?.request({
      service: "realtime",
      operation,
      ...(model !== undefined ? { model } : {}),
      ...(heard !== undefined
        ? { answersCaller: true, messages: [{ role: "user" as const, content: heard }] }
        : {}),
    });
  }

  /** End the response in flight and the session (each once). */
  #endTraces(outcome?: { error?: string; interrupted?: boolean }): void {
    const response = this.#response;
    const session = this.#session;
    this.#response = this.#session = undefined;
    response?.end(outcome?.error === undefined ? { interrupted: true } : outcome);
    session?.end(outcome);
  }

  #sendAudio(audio: AudioFrame, link: Link): void {
    if (!this.#connected) return;
    const want = this.#inputRate;
    if (audio.sampleRate !== want) {
      if (this.#up === undefined || this.#up.inRate !== audio.sampleRate) {
        this.#up = new Resampler(audio.sampleRate, want);
      }
      audio = { pcm: this.#up.process(audio.pcm), sampleRate: want, numChannels: 1 };
    }
    try {
      const r = this.#llm.sendAudio(audio);
      if (r !== undefined) r.catch((err) => link.pushError(`send audio: ${errorMessage(err)}`));
    } catch (err) {
      link.pushError(`send audio: ${errorMessage(err)}`);
    }
  }

  #then(link: Link, what: string, fn: () => void | Promise<void>): void {
    this.#chain = this.#chain.then(fn).catch((err) =>
      link.pushError(`realtime ${what} failed: ${errorMessage(err)}`)
    );
  }

  /** Pull mode: read events into {@link #deliver} until the model side has ended. */
  async #readEvents(link: Link): Promise<void> {
    try {
      while (!this.#ended) this.#deliver(await this.#llm.nextEvent(), link);
    } catch (err) {
      this.#fail(err, link);
    }
  }

  /** One event (either mode); the first `closed` (or `undefined`) ends the call's model side. */
  #deliver(ev: RealtimeEvent | undefined, link: Link): void {
    if (this.#ended) return;
    if (ev === undefined || ev.type === "closed") {
      return this.#end(ev?.reason ? `model closed: ${ev.reason}` : "model closed", link);
    }
    try {
      this.#onEvent(ev, link);
    } catch (err) {
      this.#fail(err, link);
    }
  }

  #fail(err: unknown, link: Link): void {
    const reason = `model failed: ${errorMessage(err)}`;
    link.pushError(reason);
    this.#end(reason, link);
  }

  #end(reason: string, link: Link): void {
    this.#ended = true;
    // Closed by the model, not by us: the session failed.
    if (this.#session !== undefined) {
      this.#endTraces(this.#stopping ? undefined : { error: reason });
    }
    if (!this.#stopping) link.push(makeFrame("End", { reason }), "upstream");
    this.#onEnded?.();
  }

  #onEvent(ev: Exclude<RealtimeEvent, { type: "closed" }>, link: Link): void {
    switch (ev.type) {
      case "audio_out":
        if (this.#awaitingFirstAudio) {
          this.#awaitingFirstAudio = false;
          link.stopTtfb(this.#model);
          this.#response?.firstByte();
        } else if (this.#session !== undefined && this.#response === undefined) {
          // The model speaks on its own (a greeting): a response all the same.
          this.#response = this.#trace("response");
          this.#response?.firstByte();
        }
        // The voice may come before the words: open the turn for the output's ledger.
        if (this.#turn === undefined || this.#turnCut) this.#sayText("", this.#newTurn(), link);
        return link.pushDown(ttsAudio(ev.audio));
      case "user_text":
        if (!ev.final) {
          return link.pushDown(
            makeFrame("InterimTranscription", { text: ev.text, userId: "user" }),
          );
        }
        // The caller finished a turn: time to the model's first audio starts now.
        this.#awaitingFirstAudio = true;
        link.startTtfb();
        if (this.#session !== undefined) {
          this.#response?.end();
          this.#response = this.#trace("response", ev.text);
        }
        return link.pushDown(
          makeFrame("Transcription", { text: ev.text, userId: "user", final: true }),
        );
      case "bot_text": {
        const id = this.#turn ?? this.#newTurn();
        if (!ev.final) return this.#sayText(ev.text, id, link);
        // A model that sends only the final text: the output still needs the words.
        if (!this.#turnHasText) this.#sayText(ev.text, id, link);
        this.#response?.output(ev.text);
        return link.pushDown(
          makeFrame("Transcription", {
            text: ev.text,
            userId: "bot",
            final: true,
            utteranceId: id,
          }),
        );
      }
      case "tool_call":
        this.#response?.toolCalls([{
          toolCallId: ev.id,
          functionName: ev.name,
          arguments: ev.args,
        }]);
        return link.pushDown(
          makeFrame("FunctionCallsStarted", {
            calls: [{ toolCallId: ev.id, functionName: ev.name, arguments: ev.args }],
          }),
        );
      case "interrupted":
        if (this.#turn !== undefined) this.#turnCut = true;
        if (this.#response !== undefined) {
          this.#response.end({ interrupted: true });
          this.#response = undefined;
        }
        return link.broadcast(makeFrame("Interruption", {}));
      case "usage": {
        const u = this.usage;
        u.promptTokens += ev.usage.promptTokens;
        u.completionTokens += ev.usage.completionTokens;
        u.totalTokens += ev.usage.totalTokens;
        u.turns++;
        (this.#response ?? this.#session)?.usage(ev.usage);
        return link.reportLlmUsage(ev.usage, this.#model);
      }
      case "turn_complete":
        if (this.#response !== undefined) {
          this.#response.end();
          this.#response = undefined;
        }
        if (this.#turn === undefined) return;
        this.#turn = undefined;
        return link.pushDown(makeFrame("TtsStopped", {}));
    }
  }

  #newTurn(): string {
    this.#turnHasText = false;
    this.#turnCut = false;
    return (this.#turn = newUtteranceId("turn"));
  }

  #sayText(text: string, utteranceId: string, link: Link): void {
    if (text !== "") this.#turnHasText = true;
    link.pushDown(makeFrame("TtsText", { text, utteranceId }));
  }

  /** Usage metrics are reported when the task enables them. */
  override canGenerateMetrics(): boolean {
    return true;
  }
}
