/**
 * The tracing seam: what the service processors tell a tracer about each provider request
 * (a speech-to-text segment, a language-model reply, a synthesized sentence, a realtime session
 * and each of its responses). The core defines only these shapes and imports no tracing
 * library; an exporter (providers/obs/otel.ts for OpenTelemetry) implements them.
 *
 * A task without a tracer (`PipelineTaskParams.tracer` unset, the default) costs nothing: the
 * processors skip the calls at request boundaries, and nothing here runs per audio frame.
 *
 * @example
 * ```ts
 * import type { CallTracer } from "@flowcat/flowcat";
 * declare const setup: { tracer?: CallTracer };
 * const req = setup.tracer?.request({ service: "llm", operation: "chat", model: "gpt-4o-mini" });
 * // ... stream the reply ...
 * req?.firstByte();
 * req?.end();
 * ```
 * @module
 */

import type { FunctionCall, LlmMessage, LlmTokenUsage } from "./frames.ts";

/** The services whose requests are traced. */
export type TracedService = "stt" | "llm" | "tts" | "realtime";

/** What a processor knows when a request begins. */
export interface RequestStart {
  /** The service making the request. */
  service: TracedService;
  /**
   * What the request does: `transcribe` (stt), `chat` (llm; a realtime model's `response`),
   * `speak` (tts), `session` (a realtime model's whole session).
   */
  operation: "transcribe" | "chat" | "speak" | "session" | "response";
  /** Model, when the processor knows it. */
  model?: string;
  /**
   * The messages a language model is asked over, as they are now (read at once, never kept).
   * A tracer records them only when the operator opted into content capture.
   */
  messages?: readonly LlmMessage[];
  /** Text to speak (tts), recorded only with content capture; its length always. */
  text?: string;
  /**
   * True for a realtime model's response to the caller's turn that just ended (its final
   * transcript): the request opens that turn when the frames announcing it are still on
   * their way.
   */
  answersCaller?: boolean;
}

/** How a request ended. */
export interface RequestOutcome {
  /** The failure, when it failed (a message with no secret in it, as the logs carry). */
  error?: string;
  /** True when a barge-in or a newer turn cut it short. */
  interrupted?: boolean;
}

/** One provider request in flight. */
export interface RequestTrace {
  /** The first byte of the answer arrived (transcript, text, audio). */
  firstByte(): void;
  /** Tokens the provider reported for this request (may come in parts; summed). */
  usage(tokens: LlmTokenUsage): void;
  /** Tool calls the model made. */
  toolCalls(calls: readonly FunctionCall[]): void;
  /** A piece of the model's text answer (recorded only with content capture). */
  output(text: string): void;
  /** The request is over; later calls are ignored. */
  end(outcome?: RequestOutcome): void;
}

/** Receives a call's provider requests. */
export interface CallTracer {
  /** A request begins. */
  request(start: RequestStart): RequestTrace;
}
