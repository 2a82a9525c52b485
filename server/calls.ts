/**
 * CallManager: turns a media leg (browser, carrier WebSocket, SIP) into a running
 * speech-to-speech call for the agent server, and keeps the server's bounds: at most
 * `limits.max_calls` at once, each at most `limits.max_call_seconds`, and a graceful drain
 * (no new calls; running calls get `drain_seconds` to finish, then are cancelled).
 *
 * Per call it builds a fresh brain (the config's graph, or the remote brain) and a fresh
 * realtime client from the registry, with the provider key the server read at start.
 * @module
 */

import { GraphBrain } from "../core/agent/graph_brain.ts";
import { interpolate } from "../core/agent/interpolate.ts";
import { RemoteBrain } from "../core/agent/remote_brain.ts";
import { buildS2sTask } from "../core/builders.ts";
import { errorMessage, FlowcatError } from "../core/errors.ts";
import type { Logger } from "../core/log.ts";
import type { TranscriptLine } from "../core/processors/finalize.ts";
import type { AgentBrain, Finalize, MediaTransport } from "../core/seams.ts";
import type { PipelineTask } from "../core/task.ts";
import {
  providerKeyEnv,
  REALTIME_PROVIDERS,
  type RealtimeFactory,
  type RealtimeProviderOptions,
} from "../providers/registry.ts";
import { realtimeEnvSettings, type RealtimeFamily } from "../providers/realtime/env.ts";
import type { AgentServerConfig } from "./config.ts";
import type { MemorySessionSource, RunRecord } from "./session_store.ts";

/** Reads one environment variable (injectable for tests). */
export type EnvGet = (name: string) => string | undefined;

/** Live view of a call, for the browser playground. */
export interface CallWatcher {
  onTranscript?(line: TranscriptLine): void;
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
}

/** Runs the server's calls. */
export class CallManager {
  readonly #cfg: AgentServerConfig;
  readonly #sessions: MemorySessionSource;
  readonly #log: Logger;
  readonly #factory: RealtimeFactory;
  readonly #providerOpts: RealtimeProviderOptions;
  readonly #family: RealtimeFamily;
  readonly #env: EnvGet;
  readonly #tasks = new Map<number, { task: PipelineTask; done: Promise<void> }>();
  #draining = false;

  private constructor(
    opts: CallManagerOptions,
    factory: RealtimeFactory,
    providerOpts: RealtimeProviderOptions,
  ) {
    this.#cfg = opts.config;
    this.#sessions = opts.sessions;
    this.#log = opts.logger;
    this.#env = opts.env;
    this.#factory = factory;
    this.#providerOpts = providerOpts;
    this.#family = opts.config.providers.realtime?.name === "openai" ? "openai" : "gemini";
  }

  /** Load the configured realtime provider and read its key once. */
  static async create(opts: CallManagerOptions): Promise<CallManager> {
    const p = opts.config.providers.realtime;
    if (opts.config.pipeline !== "s2s" || p === undefined) {
      throw new FlowcatError(
        "config",
        "pipeline: only `s2s` is served so far (the cascaded shape is not wired into the server yet)",
      );
    }
    const info = REALTIME_PROVIDERS[p.name];
    if (info === undefined) {
      throw new FlowcatError("config", `providers.realtime.name: unknown provider "${p.name}"`);
    }
    const factory = opts.realtimeFactory ?? await info.load();
    const providerOpts: RealtimeProviderOptions = {
      options: { ...p.options },
      logger: opts.logger,
    };
    if (p.model !== undefined) providerOpts.model = p.model;
    if (p.voice !== undefined) providerOpts.voice = p.voice;
    if (p.url !== undefined) providerOpts.url = p.url;
    if (info.needsKey) {
      const name = providerKeyEnv(p.name);
      const key = opts.env(name);
      if (key === undefined || key === "") {
        throw new FlowcatError("config", `${name} is not set (the key for provider ${p.name})`);
      }
      providerOpts.apiKey = key;
    }
    return new CallManager(opts, factory, providerOpts);
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
    const settings = realtimeEnvSettings(this.#family, this.#env, (l) => this.#log.warn(l));
    const greeting = this.#greeting(brain);
    const opts: RealtimeProviderOptions = { ...this.#providerOpts };
    opts.options = { ...opts.options };
    if (greeting !== undefined) opts.options.greeting = greeting;
    const realtime = this.#factory(opts);
    let report: Finalize | undefined;
    const task = buildS2sTask({
      transport,
      realtime,
      brain,
      session: this.#sessions,
      runId: run.runId,
      token: run.token,
      model: this.#providerOpts.model ?? this.#cfg.providers.realtime!.name,
      kickoff: greeting === undefined
        ? "The caller has joined. Greet them as your instructions say."
        : `The caller has joined. Start by saying: "${greeting}"`,
      voice: this.#providerOpts.voice ?? settings.voice,
      vad: settings.vad,
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
    const done = task.run().then(
      () => {},
      (err) => this.#log.error("call failed", { runId: run.runId, err: errorMessage(err) }),
    ).finally(() => {
      clearTimeout(limit);
      this.#tasks.delete(run.runId);
    });
    this.#tasks.set(run.runId, { task, done });
    this.#log.info("call started", { runId: run.runId, origin: run.origin });
    await done;
    // run() resolves after finalize, so the report is set unless finalize threw.
    return report;
  }

  /** Stop taking calls; let running ones finish for `ms`, then cancel them and wait. */
  async drain(ms = this.#cfg.limits.drainSeconds * 1000): Promise<void> {
    this.#draining = true;
    const all = () => Promise.all([...this.#tasks.values()].map((t) => t.done));
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = await Promise.race([
      all().then(() => false),
      new Promise<boolean>((r) => (timer = setTimeout(() => r(true), ms))),
    ]);
    clearTimeout(timer);
    if (timedOut) {
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
    return await RemoteBrain.connect(a.url, a.brainConfig, this.#cfg.providers.realtime!.name, {
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
