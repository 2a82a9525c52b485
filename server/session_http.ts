/**
 * HttpSessionSource: the {@link SessionSource} seam over HTTP, for embedders whose control plane
 * runs elsewhere. Every request is JSON, carries the call token in the body (never in a URL, so
 * it stays out of access logs) and a service bearer token in `Authorization` when one is given.
 *
 * | seam operation         | request                                                                  | response                         |
 * | ---------------------- | ------------------------------------------------------------------------ | -------------------------------- |
 * | `resolve`              | `POST {base}/runs/{runId}/resolve` `{token}`                             | `{provider, brain_config, is_completed}` |
 * | `complete`             | `POST {base}/runs/{runId}/complete` `{token, finalize}`                  | any 2xx                          |
 * | `artifactUploadUrl`    | `POST {base}/runs/{runId}/artifacts` `{token, kind}`                     | `{upload_url, public_url, headers?}` |
 * | `putBytes`             | `PUT {upload_url}` with the bytes and `Content-Type`                     | any 2xx                          |
 * | `nodeTools`            | `POST {base}/runs/{runId}/node-tools` `{token, node_id}`                 | `{tools: [{name, description, params}]}` |
 * | `toolCall`             | `POST {base}/runs/{runId}/tool-call` `{token, node_id, tool, args}`      | `{result: string}`               |
 *
 * Non-2xx answers and malformed bodies become `FlowcatError`s (`auth` for 401/403, `protocol`
 * otherwise); replies are read with a size cap and a timeout.
 * @module
 */

import { errorMessage, FlowcatError } from "../core/errors.ts";
import type { ToolDecl } from "../core/frames.ts";
import { readCapped } from "../core/read_capped.ts";
import type {
  ArtifactKind,
  Finalize,
  ResolvedCall,
  SessionSource,
  UploadTarget,
} from "../core/seams.ts";

/** Options of {@link HttpSessionSource}. */
export interface HttpSessionOptions {
  /** Service credential for the control plane (`Authorization: Bearer ...`). Never logged. */
  bearer?: string;
  /** Per-request time limit (default 5000 ms). */
  timeoutMs?: number;
  /** Replaces the global fetch (tests). */
  fetch?: typeof fetch;
  /** Largest reply read (default 1 MiB). */
  maxReplyBytes?: number;
}

type Json = Record<string, unknown>;

/** The session-source seam spoken over HTTP. */
export class HttpSessionSource implements SessionSource {
  readonly #base: string;
  readonly #opts: HttpSessionOptions;

  /** Talk to the control plane at `baseUrl` (e.g. `https://cp.internal/flowcat`). */
  constructor(baseUrl: string, opts: HttpSessionOptions = {}) {
    if (!/^https?:\/\//.test(baseUrl)) {
      throw new FlowcatError("config", "session source URL must be http(s)");
    }
    this.#base = baseUrl.replace(/\/+$/, "");
    this.#opts = opts;
  }

  /** `POST /runs/{id}/resolve`. */
  async resolve(runId: number, token: string): Promise<ResolvedCall> {
    const r = await this.#post(runId, "resolve", { token });
    if (typeof r.provider !== "string" || typeof r.is_completed !== "boolean") {
      throw new FlowcatError("protocol", "resolve: reply lacks provider / is_completed");
    }
    const cfg = r.brain_config;
    return {
      provider: r.provider,
      brainConfig: typeof cfg === "object" && cfg !== null && !Array.isArray(cfg)
        ? cfg as Json
        : {},
      isCompleted: r.is_completed,
    };
  }

  /** `POST /runs/{id}/complete`. */
  async complete(runId: number, token: string, finalize: Finalize): Promise<void> {
    await this.#post(runId, "complete", { token, finalize });
  }

  /** `POST /runs/{id}/artifacts`. */
  async artifactUploadUrl(runId: number, token: string, kind: ArtifactKind): Promise<UploadTarget> {
    const r = await this.#post(runId, "artifacts", { token, kind });
    if (typeof r.upload_url !== "string" || typeof r.public_url !== "string") {
      throw new FlowcatError("protocol", "artifacts: reply lacks upload_url / public_url");
    }
    const out: UploadTarget = { uploadUrl: r.upload_url, publicUrl: r.public_url };
    if (typeof r.headers === "object" && r.headers !== null) {
      out.headers = r.headers as Record<string, string>;
    }
    return out;
  }

  /** `PUT` the bytes to a URL the control plane handed out. */
  async putBytes(url: string, bytes: Uint8Array, contentType: string): Promise<void> {
    if (!/^https?:\/\//.test(url)) throw new FlowcatError("protocol", "upload URL must be http(s)");
    const res = await this.#fetch(url, {
      method: "PUT",
      headers: { "content-type": contentType },
      body: bytes as Uint8Array<ArrayBuffer>,
    });
    await res.body?.cancel();
    if (!res.ok) throw new FlowcatError("protocol", `upload failed: HTTP ${res.status}`);
  }

  /** `POST /runs/{id}/node-tools`. */
  async nodeTools(runId: number, token: string, nodeId: string): Promise<ToolDecl[]> {
    const r = await this.#post(runId, "node-tools", { token, node_id: nodeId });
    if (!Array.isArray(r.tools)) throw new FlowcatError("protocol", "node-tools: no tools list");
    return r.tools.map((t: Json) =>
      ({
        name: String(t.name),
        description: String(t.description ?? ""),
        params: (t.params ?? t.parameters ?? { type: "object", properties: {} }) as Json,
      }) as ToolDecl
    );
  }

  /** `POST /runs/{id}/tool-call`. */
  async toolCall(
    runId: number,
    token: string,
    nodeId: string,
    tool: string,
    args: Record<string, unknown>,
  ): Promise<string> {
    const r = await this.#post(runId, "tool-call", { token, node_id: nodeId, tool, args });
    if (typeof r.result !== "string") throw new FlowcatError("protocol", "tool-call: no result");
    return r.result;
  }

  async #post(runId: number, op: string, body: Json): Promise<Json> {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (this.#opts.bearer) headers.authorization = `Bearer ${this.#opts.bearer}`;
    const res = await this.#fetch(`${this.#base}/runs/${runId}/${op}`, {
      method: "POST",
      headers,
      body: JSON.stringify(body),
    });
    const bytes = await readCapped(res.body, this.#opts.maxReplyBytes ?? 1024 * 1024);
    if (res.status === 401 || res.status === 403) {
      throw new FlowcatError("auth", `${op}: refused by the control plane (HTTP ${res.status})`);
    }
    if (!res.ok) throw new FlowcatError("protocol", `${op}: HTTP ${res.status}`);
    if (bytes === undefined) throw new FlowcatError("protocol", `${op}: reply too large`);
    if (bytes.length === 0) return {};
    try {
      const v = JSON.parse(new TextDecoder().decode(bytes));
      if (typeof v === "object" && v !== null && !Array.isArray(v)) return v;
    } catch { /* below */ }
    throw new FlowcatError("protocol", `${op}: reply is not a JSON object`);
  }

  async #fetch(url: string, init: RequestInit): Promise<Response> {
    const f = this.#opts.fetch ?? fetch;
    try {
      return await f(url, { ...init, signal: AbortSignal.timeout(this.#opts.timeoutMs ?? 5000) });
    } catch (err) {
      const timeout = err instanceof DOMException && err.name === "TimeoutError";
      throw new FlowcatError(
        timeout ? "timeout" : "closed",
        `control plane unreachable: ${timeout ? "timed out" : errorMessage(err)}`,
      );
    }
  }
}
