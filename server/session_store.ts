/**
 * The agent server's built-in {@link SessionSource}: runs live in memory, each with a random
 * call token (checked in constant time); artifacts (WAV recording, transcript JSON) are
 * written under one configured directory, or kept in memory when there is none.
 *
 * Embedders whose control plane lives elsewhere use {@link HttpSessionSource}
 * (server/session_http.ts) instead.
 * @module
 */

import { join } from "node:path";
import { FlowcatError } from "../core/errors.ts";
import type { ToolDecl } from "../core/frames.ts";
import type {
  ArtifactKind,
  Finalize,
  ResolvedCall,
  SessionSource,
  UploadTarget,
} from "../core/seams.ts";
import { createCallToken, timingSafeEqual } from "../telephony/security.ts";

/** How a run started. */
export type RunOrigin = "browser" | "carrier" | "sip" | "outbound";

/** One call the server knows about. */
export interface RunRecord {
  runId: number;
  token: string;
  origin: RunOrigin;
  /** Carrier name for carrier calls. */
  carrier?: string;
  /** Number dialled for outbound calls. */
  to?: string;
  createdAt: number;
  /** Set once the call was completed. */
  finalize?: Finalize;
  /** Artifacts written for the run: kind -> file path or memory key. */
  artifacts: Partial<Record<ArtifactKind, string>>;
}

/** Options of a {@link MemorySessionSource}. */
export interface MemorySessionOptions {
  /** Realtime provider name reported by `resolve`. */
  provider: string;
  /** Opaque brain config handed to the brain (graph spec, vars). */
  brainConfig?: Record<string, unknown>;
  /** Directory for recordings and transcripts; memory when absent. */
  artifactDir?: string;
  /** Completed runs kept for inspection (default 200); older ones are forgotten. */
  keepCompleted?: number;
}

const EXT: Record<ArtifactKind, string> = { recording: "wav", transcript: "json" };

/** In-memory runs with tokens; artifacts on disk or in memory. */
export class MemorySessionSource implements SessionSource {
  readonly #runs = new Map<number, RunRecord>();
  readonly #memory = new Map<string, Uint8Array>();
  readonly #opts: MemorySessionOptions;
  #nextId = 1;

  /** A store for one server. */
  constructor(opts: MemorySessionOptions) {
    this.#opts = opts;
  }

  /** Create a run and its call token. */
  createRun(origin: RunOrigin, meta: { carrier?: string; to?: string } = {}): RunRecord {
    const rec: RunRecord = {
      runId: this.#nextId++,
      token: createCallToken(),
      origin,
      createdAt: Date.now(),
      artifacts: {},
      ...meta,
    };
    this.#runs.set(rec.runId, rec);
    return rec;
  }

  /** The run when `token` is its token (constant-time compare), else `undefined`. */
  verify(runId: number, token: string): RunRecord | undefined {
    const rec = this.#runs.get(runId);
    // Compare against a dummy for unknown runs too, so timing says nothing about which exist.
    const expected = rec?.token ?? "x".repeat(token.length || 1);
    return timingSafeEqual(expected, token) && rec !== undefined ? rec : undefined;
  }

  /** A run by id (no token check: for the server's own bookkeeping). */
  get(runId: number): RunRecord | undefined {
    return this.#runs.get(runId);
  }

  /** Runs not yet completed. */
  active(): RunRecord[] {
    return [...this.#runs.values()].filter((r) => r.finalize === undefined);
  }

  /** Artifact bytes kept in memory (when no directory is configured). */
  memoryArtifact(key: string): Uint8Array | undefined {
    return this.#memory.get(key);
  }

  /** Resolve a run; a wrong token is an auth error. */
  resolve(runId: number, token: string): Promise<ResolvedCall> {
    const rec = this.#check(runId, token);
    return Promise.resolve({
      provider: this.#opts.provider,
      brainConfig: { ...(this.#opts.brainConfig ?? {}) },
      isCompleted: rec.finalize !== undefined,
    });
  }

  /** Record the finalize report (the first one wins). */
  complete(runId: number, token: string, finalize: Finalize): Promise<void> {
    const rec = this.#check(runId, token);
    rec.finalize ??= finalize;
    this.#forgetOld();
    return Promise.resolve();
  }

  /**
   * Where an artifact goes: `artifact:<name>` (the bytes land in the artifact directory, or in
   * memory without one). The public URL is the file's path, or the same `artifact:` name.
   */
  artifactUploadUrl(runId: number, token: string, kind: ArtifactKind): Promise<UploadTarget> {
    this.#check(runId, token);
    const name = `run-${runId}-${kind}.${EXT[kind]}`;
    const dir = this.#opts.artifactDir;
    return Promise.resolve({
      uploadUrl: `artifact:${name}`,
      publicUrl: dir === undefined ? `artifact:${name}` : join(dir, name),
    });
  }

  /** Store bytes at a URL this store handed out; anything else is refused. */
  async putBytes(url: string, bytes: Uint8Array, _contentType: string): Promise<void> {
    const m = /^artifact:(run-(\d+)-(recording|transcript)\.(?:wav|json))$/.exec(url);
    if (m === null) throw new FlowcatError("auth", "refusing to write outside the artifact store");
    const rec = this.#runs.get(Number(m[2]));
    if (rec === undefined) throw new FlowcatError("auth", "no such run");
    const kind = m[3] as ArtifactKind;
    const dir = this.#opts.artifactDir;
    if (dir === undefined) {
      this.#memory.set(m[1], bytes);
      rec.artifacts[kind] = url;
      return;
    }
    await Deno.mkdir(dir, { recursive: true });
    const path = join(dir, m[1]);
    await Deno.writeFile(path, bytes);
    rec.artifacts[kind] = path;
  }

  /** The built-in server has no workflow tools beyond the graph's own. */
  nodeTools(runId: number, token: string, _nodeId: string): Promise<ToolDecl[]> {
    this.#check(runId, token);
    return Promise.resolve([]);
  }

  /** Workflow tools are an embedder's; the built-in store answers with an error result. */
  toolCall(runId: number, token: string, _n: string, tool: string): Promise<string> {
    this.#check(runId, token);
    return Promise.resolve(JSON.stringify({ error: `no handler for workflow tool ${tool}` }));
  }

  #check(runId: number, token: string): RunRecord {
    const rec = this.verify(runId, token);
    if (rec === undefined) throw new FlowcatError("auth", "unknown run or bad call token");
    return rec;
  }

  #forgetOld(): void {
    const keep = this.#opts.keepCompleted ?? 200;
    const done = [...this.#runs.values()].filter((r) => r.finalize !== undefined);
    for (let i = 0; i < done.length - keep; i++) {
      this.#runs.delete(done[i].runId);
      for (const kind of ["recording", "transcript"] as const) {
        this.#memory.delete(`run-${done[i].runId}-${kind}.${EXT[kind]}`);
      }
    }
  }
}
