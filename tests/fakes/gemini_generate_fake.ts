/**
 * A local Gemini API `streamGenerateContent` server for tests: HTTP on 127.0.0.1 speaking the
 * real wire protocol (ai.google.dev "Generating content", "Function calling", "Thought
 * signatures"; error bodies as google.rpc.Status). It records every request and checks what
 * the real API checks: the path `/v1beta/models/{model}:streamGenerateContent` with `alt=sse`,
 * the `x-goog-api-key` header (missing: 403 PERMISSION_DENIED; wrong: 400 API_KEY_INVALID),
 * user/model roles, as many function responses as the model turn before had calls, and, for
 * Gemini 3 models, a `thoughtSignature` on the first call of each model turn. Replies are SSE
 * `data:` lines each holding a GenerateContentResponse, separated by CRLF as Google sends them.
 *
 * @example
 * ```ts
 * import { createGeminiLlm } from "@flowcat/flowcat/llm/gemini";
 * const fake = await new GeminiGenerateFake().start();
 * fake.reply({ chunks: geminiStream({ text: ["Hel", "lo"] }) });
 * const llm = createGeminiLlm({ provider: "gemini", apiKey: fake.apiKey, baseUrl: fake.url });
 * await fake.close();
 * ```
 * @module
 */

import { pacedStream } from "./_paced_stream.ts";

/** A request the fake received. */
export interface RecordedRequest {
  method: string;
  /** The full request URL (path and query). */
  url: URL;
  headers: Headers;
  /** The JSON body (undefined when it was not JSON). */
  body: Record<string, unknown> | undefined;
}

/** A scripted answer. */
export type FakeReply =
  | { status: number; body?: unknown; headers?: Record<string, string> }
  | {
    /** GenerateContentResponse objects, one per SSE event. */
    chunks: Record<string, unknown>[];
    /** Pause between chunks, ms (default 0). */
    gapMs?: number;
    /** Keep the stream open after the last chunk until the client goes away. */
    hang?: boolean;
  };

/** A google.rpc.Status error body. */
export function googleError(code: number, status: string, message: string, reason?: string) {
  const details = reason
    ? [{
      "@type": "type.googleapis.com/google.rpc.ErrorInfo",
      reason,
      domain: "googleapis.com",
      metadata: { service: "generativelanguage.googleapis.com" },
    }]
    : [];
  return { error: { code, message, status, details } };
}

/** What {@link geminiStream} builds a reply from. */
export interface StreamScript {
  /** Text of successive chunks. */
  text?: string[];
  /** Calls, all in the last chunk; `signature` goes on the part as `thoughtSignature`. */
  calls?: { name: string; args: Record<string, unknown>; signature?: string }[];
  promptTokens?: number;
  outputTokens?: number;
  cachedTokens?: number;
  thoughtsTokens?: number;
}

/** The chunks the real API streams for this content (usage on every chunk, final on the last). */
export function geminiStream(s: StreamScript): Record<string, unknown>[] {
  const prompt = s.promptTokens ?? 12;
  const texts = s.text ?? [];
  const chunks: { parts: Record<string, unknown>[] }[] = texts.map((t) => ({
    parts: [{ text: t }],
  }));
  const callParts = (s.calls ?? []).map((c) => {
    const part: Record<string, unknown> = { functionCall: { name: c.name, args: c.args } };
    if (c.signature) part.thoughtSignature = c.signature;
    return part;
  });
  if (callParts.length > 0 || chunks.length === 0) chunks.push({ parts: callParts });
  return chunks.map((c, i) => {
    const last = i === chunks.length - 1;
    const usage: Record<string, unknown> = { promptTokenCount: prompt };
    if (last) {
      const out = s.outputTokens ?? 8;
      usage.candidatesTokenCount = out;
      usage.totalTokenCount = prompt + out + (s.thoughtsTokens ?? 0);
      if (s.cachedTokens) usage.cachedContentTokenCount = s.cachedTokens;
      if (s.thoughtsTokens) usage.thoughtsTokenCount = s.thoughtsTokens;
    } else {
      usage.totalTokenCount = prompt;
    }
    const candidate: Record<string, unknown> = {
      content: { parts: c.parts, role: "model" },
      index: 0,
    };
    if (last) candidate.finishReason = "STOP";
    return {
      candidates: [candidate],
      usageMetadata: usage,
      modelVersion: "gemini-fake",
      responseId: "r1",
    };
  });
}

const PATH = /^\/v1beta\/models\/([^/:]+):streamGenerateContent$/;
// Vertex AI serves the same wire under a project and location, with an OAuth bearer.
const VERTEX_PATH =
  /^\/v1\/projects\/([^/]+)\/locations\/([^/]+)\/publishers\/google\/models\/([^/:]+):streamGenerateContent$/;

/** Vertex AI mode: the path and credential Vertex wants instead of the Gemini API's. */
export interface VertexMode {
  /** Checks a bearer token (as the token fake issued it). */
  acceptToken(token: string): boolean;
}

/** The fake server. Public fields are knobs a test may change at any time. */
export class GeminiGenerateFake {
  /** The key the fake accepts in `x-goog-api-key`. */
  apiKey = "AIzaFAKE-0123456789abcdef";
  /** Every request, in arrival order. */
  readonly requests: RecordedRequest[] = [];
  /** SSE streams the client abandoned before the fake finished them. */
  cancelledStreams = 0;
  readonly #replies: FakeReply[] = [];
  readonly #open = new Set<() => void>();
  readonly #abort = new AbortController();
  #server: Deno.HttpServer<Deno.NetAddr> | undefined;
  readonly #vertex: VertexMode | undefined;

  /** A Gemini API fake, or a Vertex AI one when `vertex` is given. */
  constructor(vertex?: VertexMode) {
    this.#vertex = vertex;
  }

  /** Listen on an ephemeral 127.0.0.1 port. */
  start(): Promise<this> {
    this.#server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, signal: this.#abort.signal, onListen() {} },
      (req) => this.#handle(req),
    );
    return Promise.resolve(this);
  }

  /** Base URL to give the client (`baseUrl`). */
  get url(): string {
    return `http://127.0.0.1:${this.#server!.addr.port}`;
  }

  /** Queue answers for the next requests, in order. With none queued the fake says "Hi". */
  reply(...replies: FakeReply[]): void {
    this.#replies.push(...replies);
  }

  /** Stop every open stream and the server. */
  async close(): Promise<void> {
    for (const stop of this.#open) stop();
    this.#abort.abort();
    await this.#server?.finished;
  }

  async #handle(req: Request): Promise<Response> {
    const url = new URL(req.url);
    let body: Record<string, unknown> | undefined;
    try {
      body = JSON.parse(await req.text());
    } catch { /* recorded as undefined */ }
    this.requests.push({ method: req.method, url, headers: req.headers, body });
    const vertexPath = this.#vertex ? VERTEX_PATH.exec(url.pathname) : null;
    const path = this.#vertex
      ? (vertexPath && [vertexPath[0], vertexPath[3]])
      : PATH.exec(url.pathname);
    if (req.method !== "POST" || !path) {
      return json(404, googleError(404, "NOT_FOUND", "Not found"));
    }
    if (this.#vertex) {
      const bearer = /^Bearer (.+)$/.exec(req.headers.get("authorization") ?? "")?.[1];
      if (!bearer || !this.#vertex.acceptToken(bearer)) {
        return json(
          401,
          googleError(401, "UNAUTHENTICATED", "Request had invalid authentication credentials."),
        );
      }
    }
    const key = this.#vertex ? this.apiKey : req.headers.get("x-goog-api-key") ??
      url.searchParams.get("key");
    if (!key) {
      return json(
        403,
        googleError(403, "PERMISSION_DENIED", "Method doesn't allow unregistered callers"),
      );
    }
    if (key !== this.apiKey) {
      return json(
        400,
        googleError(
          400,
          "INVALID_ARGUMENT",
          "API key not valid. Please pass a valid API key.",
          "API_KEY_INVALID",
        ),
      );
    }
    if (url.searchParams.get("alt") !== "sse") {
      return json(400, googleError(400, "INVALID_ARGUMENT", "this fake only streams with alt=sse"));
    }
    const invalid = body ? validate(body, decodeURIComponent(path[1])) : "Invalid JSON payload";
    if (invalid) return json(400, googleError(400, "INVALID_ARGUMENT", invalid));
    const reply = this.#replies.shift() ?? { chunks: geminiStream({ text: ["Hi"] }) };
    if ("status" in reply) return json(reply.status, reply.body ?? {}, reply.headers);
    return this.#stream(reply);
  }

  #stream(reply: Extract<FakeReply, { chunks: unknown }>): Response {
    const frames = reply.chunks.map((c) => `data: ${JSON.stringify(c)}\r\n\r\n`);
    const paced = pacedStream(frames, {
      gapMs: reply.gapMs,
      hold: reply.hang,
      onCancel: () => this.cancelledStreams++,
      onDone: () => this.#open.delete(paced.stop),
    });
    this.#open.add(paced.stop);
    return new Response(paced.body, { headers: { "content-type": "text/event-stream" } });
  }
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json; charset=UTF-8", ...headers },
  });
}

type Part = Record<string, unknown>;

/** What the real API rejects with INVALID_ARGUMENT (the subset these tests can hit). */
function validate(body: Record<string, unknown>, model: string): string | undefined {
  const contents = body.contents as { role?: string; parts?: Part[] }[] | undefined;
  if (!Array.isArray(contents) || contents.length === 0) {
    return "* contents: contents is not specified";
  }
  const unknown = unknownSchemaField(body.tools);
  if (unknown) return `Invalid JSON payload received. Unknown name "${unknown}"`;
  const gen3 = /^gemini-([3-9]|\d{2,})/.test(model);
  let lastCalls = 0;
  for (const [i, c] of contents.entries()) {
    if (c.role !== "user" && c.role !== "model") {
      return `contents[${i}].role: must be user or model`;
    }
    if (!Array.isArray(c.parts) || c.parts.length === 0) {
      return `contents[${i}].parts: must not be empty`;
    }
    const calls = c.parts.filter((p) => p.functionCall);
    const responses = c.parts.filter((p) => p.functionResponse);
    if (responses.length > 0 && responses.length !== lastCalls) {
      return "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.";
    }
    if (gen3 && calls.length > 0 && !calls[0].thoughtSignature) {
      return `Function call is missing a thought_signature in functionCall parts. position ${i}`;
    }
    for (const r of responses) {
      const fr = r.functionResponse as { name?: unknown; response?: unknown };
      if (typeof fr.name !== "string") return `contents[${i}]: functionResponse.name is required`;
      if (!fr.response || typeof fr.response !== "object" || Array.isArray(fr.response)) {
        return `contents[${i}]: functionResponse.response must be an object`;
      }
    }
    lastCalls = c.role === "model" ? calls.length : 0;
  }
  return undefined;
}

/** The first JSON-Schema-only field in any function's `parameters` (Gemini refuses them). */
function unknownSchemaField(tools: unknown): string | undefined {
  const find = (v: unknown): string | undefined => {
    if (!v || typeof v !== "object") return undefined;
    for (const [k, x] of Object.entries(v)) {
      if (k === "additionalProperties" || k === "$schema") return k;
      const inner = find(x);
      if (inner) return inner;
    }
    return undefined;
  };
  for (const t of Array.isArray(tools) ? tools : []) {
    for (
      const d
        of (t as { functionDeclarations?: { parameters?: unknown }[] }).functionDeclarations ?? []
    ) {
      const hit = find(d.parameters);
      if (hit) return hit;
    }
  }
  return undefined;
}
