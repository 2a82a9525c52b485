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
import {
  createCallToken,
  signCallToken,
  timingSafeEqual,
  verifyCallToken,
} from "../telephony/security.ts";

/** How a run started. */
export type RunOrigin = "browser" | "carrier" | "sip" | "outbound";

/** One call the server knows about. */
export interface RunRecord {
  /** Run id, unique within this server process (and across its workers). */
  runId: number;
  /** Secret call token the carrier or browser presents for this run. */
  token: string;
  /** How the run started. */
  origin: RunOrigin;
  /** Carrier name for carrier calls. */
  carrier?: string;
  /** Number dialled for outbound calls. */
  to?: string;
  /** When the run was created, ms since the Unix epoch. */
  createdAt: number;
  /** When its call started ({@link MemorySessionSource.claim}); unset while none has. */
  startedAt?: number;
  /** Set once the call was completed. */
  finalize?: Finalize;
  /** Set once a media socket was accepted for the run: its token opens no second one. */
  mediaBound?: boolean;
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
  /**
   * Seconds a run may wait for its call to start (default 600): an answer webhook whose media
   * socket never comes, a browser offer never connected. After that the run and its token are
   * forgotten, so unconnected runs cannot pile up in memory.
   */
  unclaimedTtlSeconds?: number;
  /** Clock in ms since the Unix epoch (default `Date.now`; tests move it). */
  now?: () => number;
  /**
   * Set when several workers share one listening port (`--workers`): call tokens are signed
   * (HMAC-SHA256 over run id and expiry, {@link signCallToken}) with the secret all workers
   * share, run ids are `k * count + index`, and a worker adopts a run another worker created
   * when its token checks out.
   */
  cluster?: SessionCluster;
}

/** This worker's place among the workers sharing one port. */
export interface SessionCluster {
  /** Secret shared by every worker (at least 16 bytes), made fresh at each start. */
  secret: Uint8Array;
  /** This worker's index, 0-based. */
  index: number;
  /** How many workers there are. */
  count: number;
  /** Lifetime of a call token in seconds (default 3600). */
  tokenTtlSeconds?: number;
  /**
   * Set when several hosts share the secret (`server.cluster_secret_env`): a run's media socket
   * may land on any host, so run ids are drawn at random (a restarted host must not reuse an id
   * another host still holds) and any host adopts a run it does not hold when the token checks
   * out, whatever the id.
   */
  hosts?: boolean;
}

/** Random run ids stay below 2^36 times the worker count: 15 digits, the routes' id limit. */
const RANDOM_ID_SPACE = 2 ** 36;

const EXT: Record<ArtifactKind, string> = { recording: "wav", transcript: "json" };

/** In-memory runs with tokens; artifacts on disk or in memory. */
export class MemorySessionSource implements SessionSource {
  readonly #runs = new Map<number, RunRecord>();
  readonly #memory = new Map<string, Uint8Array>();
  readonly #opts: MemorySessionOptions;
  readonly #now: () => number;
  #nextId = 1;
  #lastSweep = 0;

  /** A store for one server. */
  constructor(opts: MemorySessionOptions) {
    const c = opts.cluster;
    if (c !== undefined && !(Number.isInteger(c.index) && c.index >= 0 && c.index < c.count)) {
      throw new FlowcatError("config", `session cluster index ${c.index} of ${c.count}`);
    }
    this.#opts = opts;
    this.#now = opts.now ?? Date.now;
  }

  /** This worker's index when several share one port, else `undefined`. */
  get worker(): number | undefined {
    return this.#opts.cluster?.index;
  }

  /** Create a run and its call token. */
  async createRun(
    origin: RunOrigin,
    meta: { carrier?: string; to?: string } = {},
  ): Promise<RunRecord> {
    const c = this.#opts.cluster;
    const runId = c === undefined ? this.#nextId++ : this.#clusterRunId(c);
    const token = c === undefined
      ? createCallToken()
      : await signCallToken(c.secret, { runId, ttlSeconds: c.tokenTtlSeconds ?? 3600 });
    const now = this.#now();
    const rec: RunRecord = { runId, token, origin, createdAt: now, artifacts: {}, ...meta };
    this.#runs.set(rec.runId, rec);
    if (now - this.#lastSweep >= 10_000) this.#sweepUnclaimed(now);
    return rec;
  }

  /**
   * Take the run's one media socket: true the first time, false when a socket was already
   * accepted for it or its call has ended (a token opens one live socket, once).
   */
  bindMedia(rec: RunRecord): boolean {
    if (rec.mediaBound || rec.finalize !== undefined) return false;
    rec.mediaBound = true;
    return true;
  }

  /** Record that the run's call has started: it no longer expires unclaimed. */
  claim(runId: number): void {
    const rec = this.#runs.get(runId);
    if (rec !== undefined) rec.startedAt ??= this.#now();
  }

  /**
   * The run when `token` is its token (constant-time compare), else `undefined`. In a cluster,
   * a run another worker created is adopted (as `adopt` describes it) when its signed token
   * checks out.
   */
  async verify(
    runId: number,
    token: string,
    adopt: { origin: RunOrigin; carrier?: string } = { origin: "carrier" },
  ): Promise<RunRecord | undefined> {
    let rec = this.#runs.get(runId);
    if (rec !== undefined && this.#expired(rec, this.#now())) {
      this.#runs.delete(runId);
      rec = undefined;
    }
    const c = this.#opts.cluster;
    if (rec === undefined && c !== undefined && (c.hosts === true || runId % c.count !== c.index)) {
      const verdict = await verifyCallToken(c.secret, token, { runId });
      if (!verdict.ok) return undefined;
      const adopted: RunRecord = { runId, token, createdAt: this.#now(), artifacts: {}, ...adopt };
      this.#runs.set(runId, adopted);
      return adopted;
    }
    // Compare against a dummy for unknown runs too, so timing says nothing about which exist.
    const expected = rec?.token ?? "x".repeat(token.length || 1);
    return timingSafeEqual(expected, token) && rec !== undefined ? rec : undefined;
  }

  #clusterRunId(c: SessionCluster): number {
    if (c.hosts !== true) return this.#nextId++ * c.count + c.index;
    for (;;) {
      const k = 1 + Math.floor(Math.random() * (RANDOM_ID_SPACE - 1));
      const id = k * c.count + c.index;
      if (!this.#runs.has(id)) return id;
    }
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
  async resolve(runId: number, token: string): Promise<ResolvedCall> {
    const rec = await this.#check(runId, token);
    return {
      provider: this.#opts.provider,
      brainConfig: { ...(this.#opts.brainConfig ?? {}) },
      isCompleted: rec.finalize !== undefined,
    };
  }

  /** Record the finalize report (the first one wins). */
  async complete(runId: number, token: string, finalize: Finalize): Promise<void> {
    const rec = await this.#check(runId, token);
    rec.finalize ??= finalize;
    this.#forgetOld();
  }

  /**
   * Where an artifact goes: `artifact:<name>` (the bytes land in the artifact directory, or in
   * memory without one). The public URL is the file's path, or the same `artifact:` name.
   */
  async artifactUploadUrl(
    runId: number,
    token: string,
    kind: ArtifactKind,
  ): Promise<UploadTarget> {
    await this.#check(runId, token);
    const name = `run-${runId}-${kind}.${EXT[kind]}`;
    const dir = this.#opts.artifactDir;
    return {
      uploadUrl: `artifact:${name}`,
      publicUrl: dir === undefined ? `artifact:${name}` : join(dir, name),
    };
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
    // Callers' voices and words: readable by the server's user only.
    await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
    const path = join(dir, m[1]);
    await Deno.writeFile(path, bytes, { mode: 0o600 });
    rec.artifacts[kind] = path;
  }

  /** The built-in server has no workflow tools beyond the graph's own. */
  async nodeTools(runId: number, token: string, _nodeId: string): Promise<ToolDecl[]> {
    await this.#check(runId, token);
    return [];
  }

  /** Workflow tools are an embedder's; the built-in store answers with an error result. */
  async toolCall(runId: number, token: string, _n: string, tool: string): Promise<string> {
    await this.#check(runId, token);
    return JSON.stringify({ error: `no handler for workflow tool ${tool}` });
  }

  async #check(runId: number, token: string): Promise<RunRecord> {
    const rec = await this.verify(runId, token);
    if (rec === undefined) throw new FlowcatError("auth", "unknown run or bad call token");
    return rec;
  }

  #expired(rec: RunRecord, now: number): boolean {
    const ttl = (this.#opts.unclaimedTtlSeconds ?? 600) * 1000;
    return rec.startedAt === undefined && rec.finalize === undefined && now - rec.createdAt > ttl;
  }

  #sweepUnclaimed(now: number): void {
    this.#lastSweep = now;
    for (const rec of this.#runs.values()) {
      if (this.#expired(rec, now)) this.#runs.delete(rec.runId);
    }
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
