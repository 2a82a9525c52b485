// Over 400 lines: one call's span tree: OtelCall and the OtelRequest spans under it.
/**
 * OpenTelemetry spans of calls: one `call` span per call, a `turn` span per turn under it, and a
 * span per provider request (speech-to-text segment, language-model reply, synthesized sentence,
 * realtime session and response) under its turn, made with `npm:@opentelemetry/api`. Under
 * `OTEL_DENO=true` Deno registers its own tracer provider with that API and exports the spans
 * over OTLP (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_PROTOCOL`); the agent server
 * imports this module only then (see server/tracing.ts), so tracing off costs nothing.
 *
 * Spans are made at request and turn boundaries only, never per audio frame. Attribute names:
 * docs/observability.md ("Traces").
 *
 * @example
 * ```ts
 * import { buildCascadedTask, type CascadedTaskOptions } from "@flowcat/flowcat";
 * declare const inputs: CascadedTaskOptions;
 * const tracing = createOtelTracing();
 * const call = tracing.startCall({ callId: "1", transport: "twilio", direction: "inbound",
 *   pipeline: "cascaded", providers: { llm: "ollama" }, models: { llm: "llama3.2" } });
 * const task = buildCascadedTask({ ...inputs, taskParams: { tracer: call } });
 * call.attach(task);
 * await task.run();
 * call.end({ reason: "caller_hung_up", turns: 2 });
 * ```
 * @module
 */

import {
  type Attributes,
  type AttributeValue,
  type Context,
  context,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
  type Tracer,
} from "npm:@opentelemetry/api@1.10.0";
import type { Frame, FrameKind, FunctionCall, LlmTokenUsage } from "../../core/frames.ts";
import type { PipelineTask } from "../../core/task.ts";
import type {
  CallTracer,
  RequestOutcome,
  RequestStart,
  RequestTrace,
  TracedService,
} from "../../core/tracing.ts";
import { genAiProvider, inputMessages, outputMessage } from "./genai.ts";

/** Name of the tracer (the instrumentation scope of every span). */
export const TRACER_NAME = "flowcat";

/** Who a call is, as its spans carry it. */
export interface TracedCallInfo {
  /** Flowcat's id of the call (the run id of the logs). */
  callId: string;
  /** The carrier's or leg's own id (Twilio CallSid, SIP Call-ID), when it has one. */
  legId?: string;
  /** `browser`, `sip`, or the carrier (`twilio`, ...). */
  transport: string;
  /** `inbound` or `outbound`. */
  direction: string;
  /** `s2s` or `cascaded`. */
  pipeline: string;
  /** Configured provider per service. */
  providers: Partial<Record<TracedService, string>>;
  /** Model per service, when known. */
  models: Partial<Record<TracedService, string>>;
}

/** How a call ended, for its span. */
export interface TracedCallEnd {
  /** The end reason word of the `call ended` line. */
  reason: string;
  /** Caller turns. */
  turns: number;
  /** True when the call failed (model error, pipeline error). */
  failed?: boolean;
}

/** A call's tracer: hand it to the task (`taskParams.tracer`), attach it, end it. */
export interface TracedCall extends CallTracer {
  /** Follow the task's turns (before it runs). */
  attach(task: PipelineTask): void;
  /** End the open turn and the call span. */
  end(end: TracedCallEnd): void;
}

/** Makes a {@link TracedCall} per call. */
export interface CallTracing {
  /** Open a call span. */
  startCall(info: TracedCallInfo): TracedCall;
}

/** Options of {@link createOtelTracing}. */
export interface OtelTracingOptions {
  /** The tracer (default: the global provider's `flowcat` tracer, which Deno exports). */
  tracer?: Tracer;
  /** Wall clock in epoch ms (default `performance.timeOrigin + performance.now()`). */
  now?: () => number;
  /**
   * Record prompts and completions (`gen_ai.input.messages`, `gen_ai.output.messages`,
   * `gen_ai.system_instructions`), transcripts and spoken text in spans (default false: the
   * operator opts in with `observability.tracing.record_content`).
   */
  recordContent?: boolean;
}

/**
 * An integer attribute. Deno exports a JS number as a double and a bigint as an int, which the
 * conventions ask for (token counts, indexes); the API's types know only numbers.
 */
export function intValue(n: number): AttributeValue {
  return BigInt(Math.trunc(n)) as unknown as AttributeValue;
}

const epochMs = () => performance.timeOrigin + performance.now();

/** Tracing of the agent server's calls through OpenTelemetry. */
export function createOtelTracing(opts: OtelTracingOptions = {}): CallTracing {
  const tracer = opts.tracer ?? trace.getTracer(TRACER_NAME);
  const now = opts.now ?? epochMs;
  const content = opts.recordContent === true;
  return { startCall: (info) => new OtelCall(tracer, info, now, content) };
}

/** One turn's span and what is known of it. */
interface Turn {
  span: Span;
  ctx: Context;
  index: number;
  /** The bot is speaking now. */
  botSpeaking: boolean;
  /** The bot spoke in this turn. */
  botSpoke: boolean;
  /** When the caller stopped speaking (epoch ms), until the bot's reply started. */
  userStoppedAt?: number;
  /** Latest thing that happened in it (epoch ms): where it ends when nothing cut it. */
  lastActivity?: number;
}

const UP_KINDS: ReadonlySet<FrameKind> = new Set(["UserStartedSpeaking", "UserStoppedSpeaking"]);
const DOWN_KINDS: ReadonlySet<FrameKind> = new Set([
  "Transcription",
  "BotStartedSpeaking",
  "BotStoppedSpeaking",
]);

/** A call span, its turns and its requests. */
class OtelCall implements TracedCall {
  readonly #tracer: Tracer;
  readonly #now: () => number;
  readonly #info: TracedCallInfo;
  readonly #content: boolean;
  readonly #span: Span;
  readonly #ctx: Context;
  #turn: Turn | undefined;
  #turns = 0;
  /** Turn edges came from a voice-activity detector (a cascaded call). */
  #vad = false;
  #ended = false;

  constructor(tracer: Tracer, info: TracedCallInfo, now: () => number, content: boolean) {
    this.#tracer = tracer;
    this.#now = now;
    this.#info = info;
    this.#content = content;
    const attributes: Attributes = {
      "flowcat.call.id": info.callId,
      "flowcat.transport": info.transport,
      "flowcat.call.direction": info.direction,
      "flowcat.pipeline": info.pipeline,
    };
    if (info.legId !== undefined) attributes["flowcat.call.leg_id"] = info.legId;
    for (const [service, name] of Object.entries(info.providers)) {
      attributes[`flowcat.provider.${service}`] = name;
    }
    for (const [service, model] of Object.entries(info.models)) {
      if (model !== undefined) attributes[`flowcat.model.${service}`] = model;
    }
    this.#span = tracer.startSpan("call", {
      kind: SpanKind.SERVER,
      attributes,
      startTime: now(),
      root: true,
    }, context.active());
    this.#ctx = trace.setSpan(context.active(), this.#span);
  }

  request(start: RequestStart): RequestTrace {
    const at = this.#now();
    if (start.answersCaller) this.#callerSpoke(at);
    // A realtime session lasts the call; everything else belongs to the turn it serves.
    const turn = start.operation === "session" ? undefined : this.#ensureTurn(at);
    const attributes: Attributes = {
      "flowcat.call.id": this.#info.callId,
      "flowcat.service": start.service,
      "flowcat.operation": start.operation,
    };
    const provider = this.#info.providers[start.service];
    if (provider !== undefined) attributes["flowcat.provider"] = provider;
    const model = start.model ?? this.#info.models[start.service];
    if (model !== undefined) attributes["flowcat.model"] = model;
    if (turn !== undefined) attributes["flowcat.turn.index"] = intValue(turn.index);
    if (start.text !== undefined) {
      attributes["flowcat.tts.characters"] = intValue(start.text.length);
      if (this.#content) attributes["flowcat.tts.text"] = start.text;
    }
    // A model reply is a GenAI `chat` operation: named and attributed as the conventions say.
    const genAi = start.service === "llm" || start.operation === "response";
    let name = `${start.service} ${start.operation}`;
    if (genAi) {
      const system = genAiProvider(provider ?? start.service);
      name = `chat ${model ?? system}`;
      attributes["gen_ai.operation.name"] = "chat";
      attributes["gen_ai.provider.name"] = system;
      attributes["gen_ai.system"] = system;
      if (model !== undefined) attributes["gen_ai.request.model"] = model;
      if (this.#content && start.messages !== undefined) {
        const { system: instructions, input } = inputMessages(start.messages);
        if (instructions.length > 0) {
          attributes["gen_ai.system_instructions"] = JSON.stringify(instructions);
        }
        attributes["gen_ai.input.messages"] = JSON.stringify(input);
      }
    }
    const span = this.#tracer.startSpan(name, {
      kind: SpanKind.CLIENT,
      attributes,
      startTime: at,
    }, turn?.ctx ?? this.#ctx);
    return new OtelRequest(span, at, {
      now: this.#now,
      genAi,
      content: this.#content,
      service: start.service,
      onEnd: (end) => {
        if (turn !== undefined && end > (turn.lastActivity ?? 0)) turn.lastActivity = end;
      },
    });
  }

  attach(task: PipelineTask): void {
    const onFrame = (f: Frame) => this.#frame(f);
    task.onFrameReachedUpstream(UP_KINDS, onFrame);
    task.onFrameReachedDownstream(DOWN_KINDS, onFrame);
  }

  end(end: TracedCallEnd): void {
    if (this.#ended) return;
    this.#ended = true;
    const at = this.#now();
    this.#closeTurn(at, false);
    this.#span.setAttributes({
      "flowcat.call.end_reason": end.reason,
      "flowcat.call.turns": intValue(end.turns),
    });
    if (end.failed) this.#span.setStatus({ code: SpanStatusCode.ERROR, message: end.reason });
    this.#span.end(at);
  }

  #frame(f: Frame): void {
    const at = this.#now();
    switch (f.kind) {
      case "UserStartedSpeaking":
        this.#vad = true;
        this.#openTurn(at, "caller");
        return;
      case "UserStoppedSpeaking": {
        const turn = this.#turn;
        if (turn === undefined) return;
        turn.userStoppedAt = turn.lastActivity = at;
        turn.span.addEvent("user stopped speaking", at);
        return;
      }
      case "Transcription":
        // A speech-to-speech model detects turns itself: its final transcript of the caller
        // opens the turn, unless the bot has not answered the one still open.
        if (f.final && f.userId === "user") this.#callerSpoke(at);
        return;
      case "BotStartedSpeaking": {
        const turn = this.#ensureTurn(at);
        turn.botSpeaking = turn.botSpoke = true;
        if (turn.userStoppedAt !== undefined) {
          turn.span.setAttribute("flowcat.turn.latency_seconds", (at - turn.userStoppedAt) / 1000);
          turn.userStoppedAt = undefined;
        }
        turn.span.addEvent("bot started speaking", at);
        return;
      }
      case "BotStoppedSpeaking": {
        const turn = this.#turn;
        // The end of speech a barge-in cut: it belonged to the turn already closed.
        if (turn === undefined || !turn.botSpeaking) return;
        turn.botSpeaking = false;
        turn.lastActivity = at;
        turn.span.addEvent("bot stopped speaking", at);
        return;
      }
    }
  }

  /**
   * A speech-to-speech model heard the caller finish (its final transcript, or its response to
   * it, whichever comes first): that opens a caller turn, unless the bot has not answered the
   * open one yet. Turns from a voice-activity detector make this a no-op.
   */
  #callerSpoke(at: number): void {
    if (this.#vad) return;
    if (this.#turn === undefined || this.#turn.botSpoke) this.#openTurn(at, "caller");
    this.#turn!.userStoppedAt ??= at;
  }

  /** The open turn, or the agent's opening turn (index 0) when the bot acts first. */
  #ensureTurn(at: number): Turn {
    return this.#turn ?? this.#openTurn(at, "agent");
  }

  #openTurn(at: number, initiator: "caller" | "agent"): Turn {
    // The caller speaking over the bot cuts the turn it was answering.
    this.#closeTurn(at, this.#turn?.botSpeaking === true);
    const index = initiator === "caller" ? ++this.#turns : 0;
    const span = this.#tracer.startSpan("turn", {
      kind: SpanKind.INTERNAL,
      attributes: {
        "flowcat.call.id": this.#info.callId,
        "flowcat.turn.index": intValue(index),
        "flowcat.turn.initiator": initiator,
      },
      startTime: at,
    }, this.#ctx);
    const turn: Turn = {
      span,
      ctx: trace.setSpan(this.#ctx, span),
      index,
      botSpeaking: false,
      botSpoke: false,
    };
    this.#turn = turn;
    return turn;
  }

  #closeTurn(at: number, interrupted: boolean): void {
    const turn = this.#turn;
    if (turn === undefined) return;
    this.#turn = undefined;
    turn.span.setAttribute("flowcat.turn.interrupted", interrupted);
    // A turn nothing cut ends where its last activity did, not when the next one began.
    const end = interrupted || turn.botSpeaking ? at : Math.min(turn.lastActivity ?? at, at);
    turn.span.end(end);
  }
}

/** How a request span records. */
interface RequestOptions {
  now: () => number;
  /** A model reply: GenAI usage, finish reasons and messages. */
  genAi: boolean;
  /** Record content (the reply, the transcript). */
  content: boolean;
  service: TracedService;
  onEnd: (at: number) => void;
}

/** One provider request's span. */
class OtelRequest implements RequestTrace {
  readonly #span: Span;
  readonly #startedAt: number;
  readonly #o: RequestOptions;
  #ended = false;
  #firstByte = false;
  #usage = false;
  #input = 0;
  #output = 0;
  #calls: FunctionCall[] | undefined;
  #text = "";

  constructor(span: Span, startedAt: number, o: RequestOptions) {
    this.#span = span;
    this.#startedAt = startedAt;
    this.#o = o;
  }

  firstByte(): void {
    if (this.#firstByte || this.#ended) return;
    this.#firstByte = true;
    this.#span.setAttribute("flowcat.ttfb_seconds", (this.#o.now() - this.#startedAt) / 1000);
  }

  usage(tokens: LlmTokenUsage): void {
    this.#usage = true;
    this.#input += tokens.promptTokens;
    this.#output += tokens.completionTokens;
  }

  toolCalls(calls: readonly FunctionCall[]): void {
    (this.#calls ??= []).push(...calls);
  }

  output(text: string): void {
    // Kept only when it may be recorded: content off, nothing is held per piece of text.
    if (this.#o.content) this.#text += text;
  }

  end(outcome?: RequestOutcome): void {
    if (this.#ended) return;
    this.#ended = true;
    const at = this.#o.now();
    const s = this.#span;
    const { genAi, content } = this.#o;
    if (this.#usage) {
      const prefix = genAi ? "gen_ai" : "flowcat";
      s.setAttributes({
        [`${prefix}.usage.input_tokens`]: intValue(this.#input),
        [`${prefix}.usage.output_tokens`]: intValue(this.#output),
      });
    }
    const calls = this.#calls ?? [];
    if (calls.length > 0) s.setAttribute("flowcat.tool_calls", calls.map((c) => c.functionName));
    const interrupted = outcome?.interrupted === true;
    s.setAttribute("flowcat.interrupted", interrupted);
    const done = !interrupted && outcome?.error === undefined;
    if (genAi) {
      const finish = calls.length > 0 ? "tool_calls" : "stop";
      if (done) s.setAttribute("gen_ai.response.finish_reasons", [finish]);
      if (content && (this.#text !== "" || calls.length > 0)) {
        const reason = done ? finish : interrupted ? "interrupted" : "error";
        s.setAttribute(
          "gen_ai.output.messages",
          JSON.stringify([outputMessage(this.#text, calls, reason)]),
        );
      }
    } else if (content && this.#text !== "" && this.#o.service === "stt") {
      s.setAttribute("flowcat.stt.transcript", this.#text);
    }
    if (outcome?.error !== undefined) {
      s.setAttribute("error.type", "provider_error");
      s.setStatus({ code: SpanStatusCode.ERROR, message: outcome.error });
    }
    s.end(at);
    this.#o.onEnd(at);
  }
}
