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
} from "@opentelemetry/api";
import type { Frame, FrameKind, FunctionCall, LlmTokenUsage } from "../../core/frames.ts";
import type { PipelineTask } from "../../core/task.ts";
import type {
  CallTracer,
  RequestOutcome,
  RequestStart,
  RequestTrace,
  TracedService,
} from "../../core/tracing.ts";

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
  return { startCall: (info) => new OtelCall(tracer, info, now) };
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
  readonly #span: Span;
  readonly #ctx: Context;
  #turn: Turn | undefined;
  #turns = 0;
  /** Turn edges came from a voice-activity detector (a cascaded call). */
  #vad = false;
  #ended = false;

  constructor(tracer: Tracer, info: TracedCallInfo, now: () => number) {
    this.#tracer = tracer;
    this.#now = now;
    this.#info = info;
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
    }
    const span = this.#tracer.startSpan(`${start.service} ${start.operation}`, {
      kind: SpanKind.CLIENT,
      attributes,
      startTime: at,
    }, turn?.ctx ?? this.#ctx);
    return new OtelRequest(span, at, this.#now, (end) => {
      if (turn !== undefined && end > (turn.lastActivity ?? 0)) turn.lastActivity = end;
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

/** One provider request's span. */
class OtelRequest implements RequestTrace {
  readonly #span: Span;
  readonly #startedAt: number;
  readonly #now: () => number;
  readonly #onEnd: (at: number) => void;
  #ended = false;
  #firstByte = false;
  #input = 0;
  #output = 0;
  #tools: string[] | undefined;

  constructor(span: Span, startedAt: number, now: () => number, onEnd: (at: number) => void) {
    this.#span = span;
    this.#startedAt = startedAt;
    this.#now = now;
    this.#onEnd = onEnd;
  }

  firstByte(): void {
    if (this.#firstByte || this.#ended) return;
    this.#firstByte = true;
    this.#span.setAttribute("flowcat.ttfb_seconds", (this.#now() - this.#startedAt) / 1000);
  }

  usage(tokens: LlmTokenUsage): void {
    this.#input += tokens.promptTokens;
    this.#output += tokens.completionTokens;
  }

  toolCalls(calls: readonly FunctionCall[]): void {
    this.#tools ??= [];
    for (const c of calls) this.#tools.push(c.functionName);
  }

  output(_text: string): void {}

  end(outcome?: RequestOutcome): void {
    if (this.#ended) return;
    this.#ended = true;
    const at = this.#now();
    const s = this.#span;
    if (this.#input > 0 || this.#output > 0) {
      s.setAttributes({
        "flowcat.usage.input_tokens": intValue(this.#input),
        "flowcat.usage.output_tokens": intValue(this.#output),
      });
    }
    if (this.#tools !== undefined) s.setAttribute("flowcat.tool_calls", this.#tools);
    s.setAttribute("flowcat.interrupted", outcome?.interrupted === true);
    if (outcome?.error !== undefined) {
      s.setAttribute("error.type", "provider_error");
      s.setStatus({ code: SpanStatusCode.ERROR, message: outcome.error });
    }
    s.end(at);
    this.#onEnd(at);
  }
}
