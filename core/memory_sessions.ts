/**
 * {@link InMemorySessions}: a {@link SessionSource} that keeps runs, finalize reports and
 * artifacts in memory, for embedders without a control plane of their own (tests, demos, a
 * small phone agent). Each run gets a random token, checked in constant time.
 *
 * @example
 * ```ts
 * const sessions = new InMemorySessions();
 * const run = sessions.open(); // { session, runId, token }: spread it into buildS2sTask
 * // buildS2sTask({ transport, realtime, brain, ...run }).run();
 * const report = await sessions.finished(run.runId); // the call's Finalize
 * ```
 * @module
 */

import { FlowcatError } from "./errors.ts";
import { createCallToken, timingSafeEqual } from "./secrets.ts";
import type {
  ArtifactKind,
  Finalize,
  ResolvedCall,
  SessionSource,
  ToolDecl,
  UploadTarget,
} from "./seams.ts";

/** A run opened by {@link InMemorySessions.open}: the fields a call builder takes. */
export interface SessionRun {
  /** The session source the run belongs to. */
  session: InMemorySessions;
  /** The run's id. */
  runId: number;
  /** The secret a media leg presents for this run. */
  token: string;
}

/** Options of {@link InMemorySessions}. */
export interface InMemorySessionsOptions {
  /** Provider name reported by `resolve` (default `"realtime"`). */
  provider?: string;
  /** Brain config reported by `resolve` (default `{}`). */
  brainConfig?: Record<string, unknown>;
}

interface RunState {
  token: string;
  finalized: PromiseWithResolvers<Finalize>;
  isCompleted: boolean;
}

/** `fn()` as a promise: a throw becomes a rejection, as the async seam expects. */
function settle<T>(fn: () => T): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (err) {
    return Promise.reject(err);
  }
}

/**
 * Runs with random tokens, artifacts kept as bytes under `memory:` URLs, and a promise per run
 * that settles with the finalize report. Nothing is persisted: a host with a database keeps
 * runs there instead (implement {@link SessionSource}), or uses `HttpSessionSource` from
 * `./server` to reach a control plane over HTTP.
 */
export class InMemorySessions implements SessionSource {
  readonly #runs = new Map<number, RunState>();
  readonly #artifacts = new Map<string, Uint8Array>();
  readonly #provider: string;
  readonly #brainConfig: Record<string, unknown>;
  #lastRunId = 0;

  /** An empty store. */
  constructor(opts: InMemorySessionsOptions = {}) {
    this.#provider = opts.provider ?? "realtime";
    this.#brainConfig = opts.brainConfig ?? {};
  }

  /** Open a run for a new call. */
  open(): SessionRun {
    const runId = ++this.#lastRunId;
    const token = createCallToken();
    this.#runs.set(runId, { token, finalized: Promise.withResolvers(), isCompleted: false });
    return { session: this, runId, token };
  }

  /** Settles with the run's finalize report once the call is over. */
  finished(runId: number): Promise<Finalize> {
    return settle(() => this.#run(runId)).then((run) => run.finalized.promise);
  }

  /** Bytes of an artifact by the URL reported in {@link Finalize}. */
  artifact(url: string): Uint8Array | undefined {
    return this.#artifacts.get(url);
  }

  /** The run's provider and brain config, or an `auth` error for a bad run or token. */
  resolve(runId: number, token: string): Promise<ResolvedCall> {
    return settle(() => {
      const run = this.#checked(runId, token);
      return {
        provider: this.#provider,
        brainConfig: this.#brainConfig,
        isCompleted: run.isCompleted,
      };
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

  /** No workflow tools beyond the brain's own. */
  nodeTools(runId: number, token: string, _nodeId: string): Promise<ToolDecl[]> {
    return settle(() => {
      this.#checked(runId, token);
      return [];
    });
  }

  /** There are no workflow tools here: the answer is an error for the model. */
  toolCall(
    runId: number,
    token: string,
    _nodeId: string,
    tool: string,
    _args: Record<string, unknown>,
  ): Promise<string> {
    return settle(() => {
      this.#checked(runId, token);
      return JSON.stringify({ error: `no tool ${tool}` });
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
