/**
 * CallManager: turns a media leg (browser, carrier WebSocket, SIP) into a running call
 * (speech-to-speech or cascaded, see server/call_shapes.ts) for the agent server, and keeps the server's bounds: at most
 * `limits.max_calls` at once, each at most `limits.max_call_seconds`, and a graceful drain
 * (no new calls; running calls get `drain_seconds` to finish, then are cancelled).
 *
 * Per call it builds a fresh brain (the config's graph, or the remote brain) and fresh
 * provider clients from the registries, with the provider keys the server read at start.
 * @module
 */

import { GraphBrain } from "../core/agent/graph_brain.ts";
import { interpolate } from "../core/agent/interpolate.ts";
import { RemoteBrain } from "../core/agent/remote_brain.ts";
import { errorMessage, FlowcatError } from "../core/errors.ts";
import type { Logger } from "../core/log.ts";
import type { TranscriptLine } from "../core/processors/finalize.ts";
import type { AgentBrain, Finalize, MediaTransport } from "../core/seams.ts";
import type { PipelineTask } from "../core/task.ts";
import { settlesWithin } from "../core/wait.ts";
import type { RealtimeFactory } from "../providers/registry.ts";
import type { ServiceFactory, ServiceKind } from "../providers/service_registry.ts";
import { type CallShape, type EnvGet, loadCallShape } from "./call_shapes.ts";
import type { AgentServerConfig } from "./config.ts";
import type { MemorySessionSource, RunRecord } from "./session_store.ts";

export type { EnvGet } from "./call_shapes.ts";

/** Live view of a call, for the browser playground. */
export interface CallWatcher {
  /**
   * A new transcript line of the call (caller, agent or node change), at `index` in the call's
   * transcript; an agent line a barge-in cut comes again, same index, marked `interrupted`.
   */
  onTranscript?(line: TranscriptLine, index: number): void;
  /** The call ended; `report` is its finalize report. */
  onFinalized?(report: Finalize): void;
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
}

/** Runs the server's calls. */
export class CallManager {
  readonly #cfg: AgentServerConfig;
  readonly #sessions: MemorySessionSource;
  readonly #log: Logger;
  readonly #shape: CallShape;
  readonly #env: EnvGet;
  readonly #tasks = new Map<number, { task: PipelineTask; done: Promise<unknown> }>();
  #draining = false;

  private constructor(opts: CallManagerOptions, shape: CallShape) {
    this.#cfg = opts.config;
    this.#sessions = opts.sessions;
    this.#log = opts.logger;
    this.#env = opts.env;
    this.#shape = shape;
  }

  /** Load the configured pipeline's providers and read their keys once. */
  static async create(opts: CallManagerOptions): Promise<CallManager> {
    return new CallManager(opts, await loadCallShape(opts));
  }

  /** Calls running now. */
  get active(): number {
    return this.#tasks.size;
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
   * Run a call on `transport` for `run` until it ends. Resolves with the finalize report
   * (`undefined` when the call could not start; the leg is closed then).
   */
  async run(
    transport: MediaTransport,
    run: RunRecord,
    watch: CallWatcher = {},
  ): Promise<Finalize | undefined> {
    const refused = this.refusal();
    if (refused !== undefined) {
      await transport.close?.();
      throw new FlowcatError("other", refused);
    }
    let brain: AgentBrain;
    try {
      brain = await this.#brain();
    } catch (err) {
      this.#log.error("brain unavailable; call not started", {
        runId: run.runId,
        err: errorMessage(err),
      });
      await transport.close?.();
      return undefined;
    }
    return this.#start(transport, run, watch, brain);
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
    const greeting = this.#greeting(brain);
    const task = this.#shape.build({
      transport,
      brain,
      session: this.#sessions,
      runId: run.runId,
      token: run.token,
      ...(greeting !== undefined ? { greeting } : {}),
      record: this.#cfg.recording.enabled,
      onTranscript: watch.onTranscript,
      onFinalized: (r) => {
        report = r;
        watch.onFinalized?.(r);
      },
      logger: this.#log,
      taskParams: { idleTimeoutMs: 120_000 },
    });
    const limit = setTimeout(
      () => task.cancel("call too long"),
      this.#cfg.limits.maxCallSeconds * 1000,
    );
    const ended = () => {
      clearTimeout(limit);
      this.#tasks.delete(run.runId);
      // run() resolves after finalize, so the report is set unless finalize threw.
      return report;
    };
    const done = task.run().then(ended, (err) => {
      this.#log.error("call failed", { runId: run.runId, err: errorMessage(err) });
      return ended();
    });
    this.#tasks.set(run.runId, { task, done });
    this.#sessions.claim(run.runId);
    this.#log.info("call started", { runId: run.runId, origin: run.origin });
    return done;
  }

  /** Stop taking calls; let running ones finish for `ms`, then cancel them and wait. */
  async drain(ms: number = this.#cfg.limits.drainSeconds * 1000): Promise<void> {
    this.#draining = true;
    const all = () => Promise.all([...this.#tasks.values()].map((t) => t.done));
    if (!(await settlesWithin(all(), ms))) {
      for (const t of this.#tasks.values()) t.task.cancel("server shutting down");
      await all();
    }
  }

  async #brain(): Promise<AgentBrain> {
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

  #greeting(brain: AgentBrain): string | undefined {
    const a = this.#cfg.agent;
    if (a.greeting === undefined) return undefined;
    return a.kind === "graph" ? interpolate(a.greeting, brain.collectedVars()) : a.greeting;
  }
}
