// Over 400 lines: one class, CallManager; admission, limits and drain share its counters.
/**
 * CallManager: turns a media leg (browser, carrier WebSocket, SIP) into a running call
 * (speech-to-speech or cascaded, see server/call_shapes.ts) for the agent server, and keeps the server's bounds: at most
 * `limits.max_calls` at once, each at most `limits.max_call_seconds`, and a graceful drain
 * (no new calls; running calls get `drain_seconds` to finish, then are cancelled).
 *
 * Per call it builds a fresh brain (the config's graph, or the remote brain) and fresh
 * provider clients from the registries, with the provider keys the server read at start.
 *
 * Every call leaves a `call started` and a `call ended` line (server/call_log.ts), its failures
 * said once each (server/call_failures.ts), and its counts in the server's metrics.
 * @module
 */

import { type ExtraTools, withExtraTools } from "../core/agent/extra_tools.ts";
import { GraphBrain } from "../core/agent/graph_brain.ts";
import type { CallBase } from "../core/builders.ts";
import { interpolate } from "../core/agent/interpolate.ts";
import { RemoteBrain } from "../core/agent/remote_brain.ts";
import { errorMessage, FlowcatError } from "../core/errors.ts";
import type { StopReason } from "../core/frames.ts";
import { type Logger, withFields } from "../core/log.ts";
import type { TranscriptLine } from "../core/processors/finalize.ts";
import { EchoCancelProcessor } from "../core/processors/echo_cancel.ts";
import type { AgentBrain, Finalize, MediaTransport } from "../core/seams.ts";
import type { PipelineTask } from "../core/task.ts";
import { cancelDeadline, scheduleDeadline } from "../core/deadlines.ts";
import { settlesWithin } from "../core/wait.ts";
import type { RealtimeFactory } from "../providers/registry.ts";
import type { ServiceFactory, ServiceKind } from "../providers/service_registry.ts";
import { CallFailures, type ProviderNames } from "./call_failures.ts";
import {
  callEndFields,
  type CallIdentity,
  callIdentity,
  callStartFields,
  droppedMedia,
} from "./call_log.ts";
import { type CallShape, type EnvGet, loadCallShape } from "./call_shapes.ts";
import { type CallWatch, watchCall, type WatchShared } from "./call_watch.ts";
import type { AgentServerConfig } from "./config.ts";
import { endReason, stopDetail } from "./end_reason.ts";
import type { ServerMetrics } from "./server_metrics.ts";
import type { CallTracing, TracedCall } from "./tracing.ts";
import type { ErrorReporter } from "./error_reporting.ts";
import type { CallFailureReport } from "./call_failures.ts";
import type { MemorySessionSource, RunRecord } from "./session_store.ts";
import { echoCancelFor } from "./echo_cancel_policy.ts";

export type { EnvGet } from "./call_shapes.ts";

/** A leg admitted before a drain ({@link CallManager.admit}); release it once. */
export interface CallTicket {
  /** Stop holding the drain for this leg (idempotent). */
  release(): void;
}

/** Live view of a call, for the browser playground. */
export interface CallWatcher {
  /**
   * A new transcript line of the call (caller, agent or node change), at `index` in the call's
   * transcript; an agent line a barge-in cut comes again, same index, marked `interrupted`.
   */
  onTranscript?(line: TranscriptLine, index: number): void;
  /** The call ended; `report` is its finalize report. */
  onFinalized?(report: Finalize): void;
  /**
   * The call could not start (brain unavailable) or a fatal error ended it (say, the model
   * could not connect); `reason` is one line for the caller's screen. Called before the leg is
   * closed.
   */
  onFailed?(reason: string): void;
}

/** Options of {@link CallManager.create}. */
export interface CallManagerOptions {
  config: AgentServerConfig;
  sessions: MemorySessionSource;
  env: EnvGet;
  logger: Logger;
  /** Replaces the registry's factory (tests). */
  realtimeFactory?: RealtimeFactory;
  /** Replaces registry factories of cascaded services (tests). */
  serviceFactories?: { [K in ServiceKind]?: ServiceFactory<K> };
  /** Where calls are counted (`GET /metrics`); none when absent. */
  metrics?: ServerMetrics;
  /** Traces each call (OpenTelemetry); none when absent (no tracer on any call). */
  tracing?: CallTracing;
  /** Reports fatal call failures (Sentry-compatible); none when absent. */
  errors?: ErrorReporter;
  /** Tools offered beside the brain's on every call (`tools.mcp`); `refresh` runs at call start. */
  tools?: ExtraTools & { refresh?(): void };
}

/** Runs the server's calls. */
export class CallManager {
  readonly #cfg: AgentServerConfig;
  readonly #sessions: MemorySessionSource;
  readonly #log: Logger;
  readonly #shape: CallShape;
  readonly #env: EnvGet;
  readonly #metrics: ServerMetrics | undefined;
  readonly #providers: ProviderNames;
  readonly #shared: WatchShared;
  readonly #tracing: CallTracing | undefined;
  readonly #errors: ErrorReporter | undefined;
  readonly #tools: (ExtraTools & { refresh?(): void }) | undefined;
  readonly #tasks = new Map<number, { task: PipelineTask; done: Promise<unknown> }>();
  #draining = false;
  /** Legs admitted ({@link CallManager.admit}) whose call has not started yet. */
  #admitted = 0;

  private constructor(opts: CallManagerOptions, shape: CallShape) {
    this.#cfg = opts.config;
    this.#sessions = opts.sessions;
    this.#log = opts.logger;
    this.#env = opts.env;
    this.#shape = shape;
    this.#metrics = opts.metrics;
    this.#providers = providerNames(opts.config);
    this.#tracing = opts.tracing;
    this.#errors = opts.errors;
    this.#tools = opts.tools;
    this.#shared = {
      providers: this.#providers,
      ...(opts.metrics !== undefined ? { metrics: opts.metrics } : {}),
    };
  }

  /** Load the configured pipeline's providers and read their keys once. */
  static async create(opts: CallManagerOptions): Promise<CallManager> {
    return new CallManager(opts, await loadCallShape(opts));
  }

  /** Calls running now. */
  get active(): number {
    return this.#tasks.size;
  }

  /** Run ids of the calls running now. */
  get runIds(): number[] {
    return [...this.#tasks.keys()];
  }

  /** True once {@link CallManager.drain} began. */
  get draining(): boolean {
    return this.#draining;
  }

  /** Why a new call cannot start now, or `undefined` when it can. */
  refusal(): string | undefined {
    if (this.#draining) return "server is draining";
    if (this.#tasks.size >= this.#cfg.limits.maxCalls) return "too many calls";
    return undefined;
  }

  /**
   * Admit a leg accepted now whose call starts later (a media socket waiting for its start
   * message): its call may start even if a drain begins meanwhile, and the drain waits for it.
   * Hand the ticket to {@link CallManager.run}, or release it when the leg never gets there.
   */
  admit(): CallTicket {
    this.#admitted++;
    let held = true;
    return {
      release: () => {
        if (held) this.#admitted--;
        held = false;
      },
    };
  }

  /**
   * Run a call on `transport` for `run` until it ends. Resolves with the finalize report
   * (`undefined` when the call could not start; the leg is closed then).
   */
  async run(
    transport: MediaTransport,
    run: RunRecord,
    watch: CallWatcher = {},
    ticket?: CallTicket,
  ): Promise<Finalize | undefined> {
    const refused = ticket === undefined
      ? this.refusal()
      : this.#tasks.size >= this.#cfg.limits.maxCalls
      ? "too many calls"
      : undefined;
    if (refused !== undefined) {
      ticket?.release();
      await transport.close?.();
      throw new FlowcatError("other", refused);
    }
    let brain: AgentBrain;
    try {
      brain = await this.#brain();
    } catch (err) {
      ticket?.release();
      // Said once, as any provider failure: the caller was hung up on at once.
      const id = callIdentity(run, transport);
      new CallFailures(
        withFields(this.#log, { ...id }),
        this.#providers,
        this.#metrics,
        this.#reportFatal(id, run.token),
      ).record(`brain unavailable: ${errorMessage(err)}`, true, "BrainProcessor");
      watch.onFailed?.(`The agent's brain is unavailable: ${errorMessage(err)}`);
      await transport.close?.();
      return undefined;
    }
    try {
      return this.#start(transport, run, watch, brain);
    } finally {
      ticket?.release(); // the call is counted in #tasks now
    }
  }

  /**
   * Build and run the call's task. The returned promise is the task's own chain (nothing stays
   * suspended per call while it runs).
   */
  #start(
    transport: MediaTransport,
    run: RunRecord,
    watch: CallWatcher,
    brain: AgentBrain,
  ): Promise<Finalize | undefined> {
    let report: Finalize | undefined;
    const id = callIdentity(run, transport);
    const log = withFields(this.#log, { runId: run.runId });
    const greeting = this.#greeting(brain);
    const traced = this.#trace(id);
    const task = this.#shape.build({
      transport,
      brain,
      session: this.#sessions,
      runId: run.runId,
      token: run.token,
      ...(greeting !== undefined ? { greeting } : {}),
      ...this.#answeringMachine(run),
      record: this.#cfg.recording.enabled,
      echoCancel: echoCancelFor(this.#cfg.audio.echoCancel, run.origin),
      onTranscript: watch.onTranscript,
      onFinalized: (r) => {
        report = r;
        watch.onFinalized?.(r);
      },
      logger: log,
      // Metrics on: the service processors report their time to first byte (once per request).
      taskParams: {
        idleTimeoutMs: idleTimeoutMs(this.#cfg),
        enableMetrics: true,
        ...(traced !== undefined ? { tracer: traced } : {}),
      },
    });
    const observed = watchCall(task, this.#shared, log, this.#reportFatal(id, run.token));
    traced?.attach(task);
    const onFailed = watch.onFailed;
    if (onFailed !== undefined) {
      // The fatal error frame comes before the task cancels and the leg closes, so the
      // reason still reaches the caller's screen.
      task.onError((message, fatal) => {
        if (fatal) onFailed(`The call failed: ${message}`);
      });
    }
    // An isolate-wide deadline: a runtime timer would hold about 0.4 KB for the whole call.
    const limit = scheduleDeadline(
      this.#cfg.limits.maxCallSeconds * 1000,
      () => task.cancel("call too long"),
    );
    const startedAt = performance.now();
    const ended = (stop: StopReason | undefined) => {
      cancelDeadline(limit);
      this.#tasks.delete(run.runId);
      const echoErleDb = echoOf(task)?.erleDb;
      this.#ended(log, run, transport, {
        stop,
        startedAt,
        watch: observed,
        report,
        traced,
        echoErleDb,
      });
      // run() resolves after finalize, so the report is set unless finalize threw.
      return report;
    };
    const done = task.run().then(ended, (err) => {
      observed.failures.record(`call failed: ${errorMessage(err)}`, true, undefined);
      return ended(undefined);
    });
    this.#tasks.set(run.runId, { task, done });
    this.#sessions.claim(run.runId);
    this.#metrics?.callsStarted.labels(id.transport).inc();
    this.#metrics?.activeCalls.labels().inc();
    this.#log.info("call started", callStartFields(id, this.#cfg.pipeline, this.#shape.models));
    return done;
  }

  /** The call-end line and counts. */
  #ended(
    log: Logger,
    run: RunRecord,
    transport: MediaTransport,
    c: {
      stop: StopReason | undefined;
      startedAt: number;
      watch: CallWatch;
      report: Finalize | undefined;
      traced: TracedCall | undefined;
      /** The echo canceller's ERLE; absent or NaN when it was off or heard no echo. */
      echoErleDb?: number;
    },
  ): void {
    const { stop, watch } = c;
    const id = callIdentity(run, transport);
    const detail = stopDetail(stop);
    const disposition = c.report?.disposition;
    const reason = endReason(stop, {
      fatalFromProvider: watch.failed?.fatalFromProvider ?? false,
      ...(disposition !== undefined ? { disposition } : {}),
    });
    // A model that closed on its own mid-call: that is the realtime provider's failure.
    if (reason === "model_error" && !watch.failed?.has("realtime") && stop?.kind === "end") {
      watch.failures.record(stop.reason ?? detail, true, "RealtimeProcessor");
    }
    const durationSeconds = Math.round((performance.now() - c.startedAt) / 100) / 10;
    const dropped = droppedMedia(transport, watch.bargeInFrames);
    const m = this.#metrics;
    if (m !== undefined) {
      m.activeCalls.labels().dec();
      m.callsEnded.labels(id.transport, reason).inc();
      m.callDuration.labels().observe(durationSeconds);
      for (const [why, n] of Object.entries(dropped ?? {})) m.framesDropped.labels(why).inc(n);
      if (Number.isFinite(c.echoErleDb)) m.echoErle.labels().observe(c.echoErleDb!);
    }
    c.traced?.end({
      reason,
      turns: watch.turns,
      failed: reason === "model_error" || reason === "error",
    });
    const mean = watch.meanLatency();
    const failed = watch.failed;
    log.info(
      "call ended",
      callEndFields(id, {
        durationSeconds,
        reason,
        detail,
        turns: watch.turns,
        ...(mean !== undefined ? { meanTurnLatencySeconds: mean } : {}),
        ...(c.report !== undefined ? { report: c.report } : {}),
        ...(failed !== undefined ? { failures: failed.counts } : {}),
        ...(dropped !== undefined ? { dropped } : {}),
        ...(Number.isFinite(c.echoErleDb)
          ? { echoErleDb: Math.round(c.echoErleDb! * 10) / 10 }
          : {}),
      }),
    );
  }

  /** Stop taking calls; let running ones finish for `ms`, then cancel them and wait. */
  async drain(ms: number = this.#cfg.limits.drainSeconds * 1000): Promise<void> {
    this.#draining = true;
    const deadline = performance.now() + ms;
    const all = () => Promise.all([...this.#tasks.values()].map((t) => t.done));
    // Calls admitted before the drain may start during it: wait for those too.
    while (this.#tasks.size > 0 || this.#admitted > 0) {
      const left = deadline - performance.now();
      if (left <= 0) break;
      if (this.#tasks.size === 0) await new Promise((r) => setTimeout(r, Math.min(50, left)));
      else await settlesWithin(all(), left);
    }
    if (this.#tasks.size > 0) {
      for (const t of this.#tasks.values()) t.task.cancel("server shutting down");
      await all();
    }
  }

  /** Where a call's fatal failures go, when the server reports errors. */
  #reportFatal(id: CallIdentity, token: string): ((f: CallFailureReport) => void) | undefined {
    const errors = this.#errors;
    if (errors === undefined) return undefined;
    const call = { ...id, pipeline: this.#cfg.pipeline, models: this.#shape.models, token };
    return (f) => errors.callFailure(call, f);
  }

  /** The call's tracer, when the server traces calls. */
  #trace(id: CallIdentity): TracedCall | undefined {
    return this.#tracing?.startCall({
      callId: String(id.runId),
      ...(id.callId !== undefined ? { legId: id.callId } : {}),
      transport: id.transport,
      direction: id.direction,
      pipeline: this.#cfg.pipeline,
      providers: this.#providers,
      models: this.#shape.serviceModels,
    });
  }

  async #brain(): Promise<AgentBrain> {
    const brain = await this.#ownBrain();
    if (this.#tools === undefined) return brain;
    this.#tools.refresh?.();
    return withExtraTools(brain, this.#tools);
  }

  async #ownBrain(): Promise<AgentBrain> {
    const a = this.#cfg.agent;
    if (a.kind === "graph") return new GraphBrain(a.spec, { vars: a.vars });
    const headers: Record<string, string> = {};
    if (a.tokenEnv !== undefined) {
      const token = this.#env(a.tokenEnv);
      if (token) headers.authorization = `Bearer ${token}`;
    }
    return await RemoteBrain.connect(a.url, a.brainConfig, this.#shape.provider, {
      timeoutMs: a.timeoutMs,
      logger: this.#log,
      headers,
    });
  }

  /** Answering-machine detection for a call this server placed, when the config turns it on. */
  #answeringMachine(run: RunRecord): Pick<CallBase, "answeringMachine"> {
    const amd = this.#cfg.telephony.answeringMachine;
    const placed = run.origin === "outbound" || (run.origin === "sip" && run.to !== undefined);
    if (!amd.enabled || !placed) return {};
    const transcript = amd.useTranscript;
    return {
      answeringMachine: {
        waitForBeep: amd.waitForBeep,
        ...(transcript !== undefined ? { transcript } : {}),
      },
    };
  }

  #greeting(brain: AgentBrain): string | undefined {
    const a = this.#cfg.agent;
    if (a.greeting === undefined) return undefined;
    return a.kind === "graph" ? interpolate(a.greeting, brain.collectedVars()) : a.greeting;
  }
}

/** The idle timeout of each call, ms (`null`: none, with `limits.idle_timeout_seconds: 0`). */
function idleTimeoutMs(config: AgentServerConfig): number | null {
  const s = config.limits.idleTimeoutSeconds;
  return s > 0 ? s * 1000 : null;
}

/** The provider each service of `config` uses, for log lines and metric labels. */
export function providerNames(config: AgentServerConfig): ProviderNames {
  const p = config.providers;
  const out: ProviderNames = { brain: config.agent.kind === "remote" ? "remote" : "graph" };
  if (p.realtime !== undefined) out.realtime = p.realtime.name;
  if (p.stt !== undefined) out.stt = p.stt.name;
  if (p.llm !== undefined) out.llm = p.llm.name;
  if (p.tts !== undefined) out.tts = p.tts.name;
  return out;
}

/** The call's echo canceller, when its builder added one (the parts ride on the task). */
function echoOf(task: PipelineTask): EchoCancelProcessor | undefined {
  const parts = (task as PipelineTask & { parts?: { echoCancel?: unknown } }).parts;
  return parts?.echoCancel instanceof EchoCancelProcessor ? parts.echoCancel : undefined;
}
