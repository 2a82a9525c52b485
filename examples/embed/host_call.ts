/**
 * What an embedding host brings to Flowcat, shared by the two example hosts (ws_host.ts,
 * sip_host.ts): its own control plane ({@link HostSessions}, a {@link SessionSource}), its own
 * conversation logic ({@link DeskBrain}, an {@link AgentBrain}), and {@link runEchoCall}, which
 * runs one call on any media leg with the local echo model (no key, no network).
 *
 * Imports go through the package's entry points only (relative paths here; an embedder writes
 * `@flowcat/flowcat`, `@flowcat/flowcat/realtime/echo`, `@flowcat/flowcat/telephony/security`).
 * @module
 */

import {
  type AgentBrain,
  type ArtifactKind,
  type BrainAction,
  buildS2sTask,
  type Finalize,
  FlowcatError,
  type Logger,
  type MediaTransport,
  type ResolvedCall,
  type SessionSource,
  silentLogger,
  type ToolDecl,
  type UploadTarget,
} from "../../mod.ts";
import { EchoRealtime } from "../../providers/realtime/echo.ts";
import { createCallToken, timingSafeEqual } from "../../telephony/security.ts";

/** The one tool the desk offers: the model hangs up with it (the echo model on keypad `#`). */
export const END_CALL: ToolDecl = Object.freeze({
  name: "end_call",
  description: "End the call when the caller is done.",
  params: Object.freeze({
    type: "object",
    properties: { disposition: { type: "string", description: "Outcome of the call." } },
  }),
});

/**
 * A one-node brain written by the host: it offers `end_call` and ends the call with the
 * disposition the model gives (default `completed`). Any other tool is answered with an error,
 * and the node does not change.
 */
export class DeskBrain implements AgentBrain {
  #finished = false;
  readonly #vars: Record<string, unknown> = {};

  /** The instructions the model is connected with. */
  systemPrompt(): string {
    return "You are the front desk. Greet the caller, help briefly, then call end_call.";
  }

  /** `end_call` until the call is over, then nothing. */
  tools(): ToolDecl[] {
    return this.#finished ? [] : [END_CALL];
  }

  /** The desk has one node. */
  currentNodeId(): string {
    return "desk";
  }

  /** `end_call` ends the call; anything else stays with an error for the model. */
  onToolCall(name: string, args: Record<string, unknown>): BrainAction {
    if (this.#finished) return { type: "stay", result: { error: "the call is over" } };
    if (name !== END_CALL.name) return { type: "stay", result: { error: `no tool ${name}` } };
    this.#finished = true;
    const disposition = typeof args.disposition === "string" ? args.disposition : "completed";
    this.#vars.disposition = disposition;
    return { type: "end", disposition };
  }

  /** True once `end_call` was called. */
  isFinished(): boolean {
    return this.#finished;
  }

  /** What the call collected (the disposition, once ended). */
  collectedVars(): Record<string, unknown> {
    return { ...this.#vars };
  }
}

/** A run the host opened: the id and the secret the media leg must present. */
export interface HostRun {
  runId: number;
  token: string;
}

/** One run's state in {@link HostSessions}. */
interface RunState {
  token: string;
  finalized: PromiseWithResolvers<Finalize>;
  isCompleted: boolean;
}

/**
 * The host's control plane, in memory: runs with random tokens (checked in constant time),
 * artifacts kept as bytes under `memory:` URLs, and a promise per run that settles with the
 * finalize report. A real host would keep runs in its database and upload to its storage.
 */
export class HostSessions implements SessionSource {
  readonly #runs = new Map<number, RunState>();
  readonly #artifacts = new Map<string, Uint8Array>();
  #lastRunId = 0;

  /** Open a run for a new call. */
  open(): HostRun {
    const runId = ++this.#lastRunId;
    const token = createCallToken();
    this.#runs.set(runId, { token, finalized: Promise.withResolvers(), isCompleted: false });
    return { runId, token };
  }

  /** Settles with the run's finalize report once the call is over. */
  finished(runId: number): Promise<Finalize> {
    return this.#run(runId).finalized.promise;
  }

  /** Bytes of an artifact by the `publicUrl` reported in {@link Finalize}. */
  artifact(url: string): Uint8Array | undefined {
    return this.#artifacts.get(url);
  }

  /** The call's provider and brain config, or an `auth` error for a bad run or token. */
  resolve(runId: number, token: string): Promise<ResolvedCall> {
    return settle(() => {
      const run = this.#checked(runId, token);
      return { provider: "echo", brainConfig: {}, isCompleted: run.isCompleted };
    });
  }

  /** Record the report; the run's {@link finished} promise settles with it. */
  complete(runId: number, token: string, finalize: Finalize): Promise<void> {
    return settle(() => {
      const run = this.#checked(runId, token);
      run.isCompleted = true;
      run.finalized.resolve(finalize);
    });
  }

  /** Artifacts stay in memory: the upload URL is also the public one. */
  artifactUploadUrl(runId: number, token: string, kind: ArtifactKind): Promise<UploadTarget> {
    return settle(() => {
      this.#checked(runId, token);
      const url = `memory:run-${runId}-${kind}`;
      return { uploadUrl: url, publicUrl: url };
    });
  }

  /** Keep an artifact's bytes. */
  putBytes(url: string, bytes: Uint8Array, _contentType: string): Promise<void> {
    this.#artifacts.set(url, bytes);
    return Promise.resolve();
  }

  /** The desk's brain offers its tools itself; the host adds none per node. */
  nodeTools(runId: number, token: string, _nodeId: string): Promise<ToolDecl[]> {
    return settle(() => {
      this.#checked(runId, token);
      return [];
    });
  }

  /** The desk has no workflow tools (the brain answers `end_call`). */
  toolCall(runId: number, token: string, _nodeId: string, tool: string): Promise<string> {
    return settle(() => {
      this.#checked(runId, token);
      return JSON.stringify({ error: `the host has no tool ${tool}` });
    });
  }

  #run(runId: number): RunState {
    const run = this.#runs.get(runId);
    if (run === undefined) throw new FlowcatError("auth", `no run ${runId}`);
    return run;
  }

  #checked(runId: number, token: string): RunState {
    const run = this.#run(runId);
    if (!timingSafeEqual(run.token, token)) throw new FlowcatError("auth", "bad call token");
    return run;
  }
}

/** `fn()` as a promise: a throw becomes a rejection, as the async seam expects. */
function settle<T>(fn: () => T): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (err) {
    return Promise.reject(err);
  }
}

/** Inputs of {@link runEchoCall}. */
export interface EchoCallOptions {
  transport: MediaTransport;
  sessions: HostSessions;
  run: HostRun;
  logger?: Logger;
}

/**
 * Run one call on `transport` with the host's brain and the local echo model (it greets with a
 * chime, says back each caller turn, and calls `end_call` on keypad `#`). Resolves once the
 * call is over and finalized.
 */
export async function runEchoCall(opts: EchoCallOptions): Promise<void> {
  const task = buildS2sTask({
    transport: opts.transport,
    realtime: new EchoRealtime(),
    model: "echo",
    brain: new DeskBrain(),
    session: opts.sessions,
    runId: opts.run.runId,
    token: opts.run.token,
    logger: opts.logger ?? silentLogger,
    taskParams: { idleTimeoutMs: 120_000 },
  });
  await task.run();
}
