/**
 * Failures in a call, said once. Every Error frame a call's task sees is classified (HTTP
 * status, WebSocket close code, timeout, connection refused...) and counted; the first of each
 * kind per service is logged with the provider's name and what the caller experienced (the
 * fallback line, silence, the call ended). Repeats only add to the counts, which the call-end
 * line carries.
 * @module
 */

import type { Logger } from "../core/log.ts";
import type { ServerMetrics } from "./server_metrics.ts";

/** The call services a failure is charged to. */
export type CallService = "stt" | "llm" | "tts" | "realtime" | "brain";

/** Configured provider per service (e.g. `{ stt: "whisper.cpp", llm: "ollama" }`). */
export type ProviderNames = Partial<Record<CallService, string>>;

/** What kind of failure it was: the `kind` label of `flowcat_provider_errors_total`. */
export type FailureKind =
  | "auth"
  | "rate_limit"
  | "http_4xx"
  | "http_5xx"
  | "timeout"
  | "connect"
  | "ws_close"
  | "protocol"
  | "other";

/** A failure message, classified. */
export interface Failure {
  /** What kind of failure. */
  kind: FailureKind;
  /** The HTTP status, when the message names one. */
  status?: number;
  /** The WebSocket close code, when the message names one. */
  closeCode?: number;
}

const PROCESSOR_SERVICE: Record<string, CallService> = {
  SttProcessor: "stt",
  LlmProcessor: "llm",
  TtsProcessor: "tts",
  RealtimeProcessor: "realtime",
  BrainProcessor: "brain",
};

/** The service a processor of the built-in call shapes runs, or `undefined` for the others. */
export function serviceOf(processor: string | undefined): CallService | undefined {
  return processor === undefined ? undefined : PROCESSOR_SERVICE[processor];
}

/**
 * Classify a failure from its message (provider errors name the HTTP status, close code or
 * cause in their text; see providers/http.ts and providers/dial_errors.ts).
 *
 * @example
 * ```ts
 * classifyFailure("whisper.cpp: HTTP 503: busy (3 attempts)"); // { kind: "http_5xx", status: 503 }
 * classifyFailure("gemini: could not connect: connection refused"); // { kind: "connect" }
 * ```
 */
export function classifyFailure(message: string): Failure {
  const http = /\bHTTP (\d{3})\b|status code:?\s*(\d{3})/i.exec(message);
  if (http !== null) {
    const status = Number(http[1] ?? http[2]);
    const kind: FailureKind = status === 401 || status === 403
      ? "auth"
      : status === 429
      ? "rate_limit"
      : status >= 500
      ? "http_5xx"
      : "http_4xx";
    return { kind, status };
  }
  if (/API key rejected/i.test(message)) return { kind: "auth" };
  const close = /\bcode:? (\d{4})\b|socket closed \((\d{4})/i.exec(message);
  if (close !== null) return { kind: "ws_close", closeCode: Number(close[1] ?? close[2]) };
  if (/timed out|no answer within|timeout|deadline/i.test(message)) return { kind: "timeout" };
  if (
    /connection refused|could not connect|failed to connect|tcp connect|connection reset|dns error|not known|unreachable/i
      .test(message)
  ) {
    return { kind: "connect" };
  }
  if (/not JSON|not valid|unexpected|malformed/i.test(message)) return { kind: "protocol" };
  return { kind: "other" };
}

/** What the caller lived through when `service` failed (`fatal`: the call ended). */
export function callerExperience(service: CallService | undefined, fatal: boolean): string {
  if (fatal) return "the call ended";
  switch (service) {
    case "stt":
      return "the caller's words were not transcribed; the caller heard the fallback line";
    case "llm":
      return "the caller heard the fallback line";
    case "tts":
      return "the caller heard silence instead of the agent's reply";
    case "realtime":
      return "the model may have missed the caller or not answered";
    case "brain":
      return "the agent stayed on its current step";
    default:
      return "the call went on";
  }
}

/** A fatal failure as it is reported (server/error_reporting.ts). */
export interface CallFailureReport {
  /** The failure's message, as logged. */
  message: string;
  /** What kind of failure. */
  kind: FailureKind;
  /** The service it is charged to, when it is one. */
  service?: CallService;
  /** The configured provider of that service. */
  provider?: string;
  /** The processor it came from, outside the services. */
  processor?: string;
  /** HTTP status, when the message names one. */
  status?: number;
  /** WebSocket close code, when the message names one. */
  closeCode?: number;
  /** What the caller lived through. */
  caller: string;
}

/** One call's failures: classified, counted, each kind logged once. */
export class CallFailures {
  readonly #log: Logger;
  readonly #metrics: ServerMetrics | undefined;
  readonly #providers: ProviderNames;
  /** Occurrences per `service/provider/kind` (or `processor/kind` outside the services). */
  readonly counts: Record<string, number> = {};
  /** True once a fatal error came from a model or provider service. */
  fatalFromProvider = false;
  /** Kinds already logged, fatal ones apart (a failure that ends the call is said too). */
  #logged: Set<string> | undefined;
  readonly #onFatal: ((f: CallFailureReport) => void) | undefined;

  /**
   * Failures of one call, logged to `log` (which carries the call's id); each fatal one is also
   * handed to `onFatal` once (error reporting), when given.
   */
  constructor(
    log: Logger,
    providers: ProviderNames,
    metrics?: ServerMetrics,
    onFatal?: (f: CallFailureReport) => void,
  ) {
    this.#log = log;
    this.#providers = providers;
    this.#metrics = metrics;
    this.#onFatal = onFatal;
  }

  /** Any failures at all. */
  get any(): boolean {
    for (const _ in this.counts) return true;
    return false;
  }

  /** True when `service` has failed at least once in this call. */
  has(service: CallService): boolean {
    const prefix = `${service}/`;
    return Object.keys(this.counts).some((k) => k.startsWith(prefix));
  }

  /** An Error frame reached the task (from `processor`, when known). */
  record(message: string, fatal: boolean, processor: string | undefined): void {
    const service = serviceOf(processor);
    const failure = classifyFailure(message);
    const provider = service === undefined ? undefined : this.#providers[service] ?? service;
    const key = service === undefined
      ? `${processor ?? "pipeline"}/${failure.kind}`
      : `${service}/${provider}/${failure.kind}`;
    this.counts[key] = (this.counts[key] ?? 0) + 1;
    if (service !== undefined) {
      if (fatal && service !== "brain") this.fatalFromProvider = true;
      this.#metrics?.providerErrors.labels(service, provider!, failure.kind).inc();
    }
    const said = fatal ? `${key} fatal` : key;
    this.#logged ??= new Set();
    if (this.#logged.has(said)) return;
    this.#logged.add(said);
    const fields: Record<string, unknown> = service === undefined
      ? { processor: processor ?? "pipeline", kind: failure.kind }
      : { service, provider, kind: failure.kind };
    if (failure.status !== undefined) fields.status = failure.status;
    if (failure.closeCode !== undefined) fields.closeCode = failure.closeCode;
    fields.error = message;
    fields.caller = callerExperience(service, fatal);
    const level = fatal ? "error" : "warn";
    this.#log[level](service === undefined ? "call error" : "provider failed", fields);
    if (fatal && this.#onFatal !== undefined) {
      const report: CallFailureReport = {
        message,
        kind: failure.kind,
        caller: fields.caller as string,
      };
      if (service !== undefined) [report.service, report.provider] = [service, provider!];
      else report.processor = processor ?? "pipeline";
      if (failure.status !== undefined) report.status = failure.status;
      if (failure.closeCode !== undefined) report.closeCode = failure.closeCode;
      this.#onFatal(report);
    }
  }
}
