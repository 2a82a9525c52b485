/**
 * A local fake of an OpenAI-compatible chat-completions server for tests. It speaks the real
 * wire: `POST /v1/chat/completions` answered with `text/event-stream`, each event a
 * `data: {chat.completion.chunk}` line and the stream closed by `data: [DONE]`; the usage chunk
 * of `stream_options.include_usage` carries `choices: []`; errors are `{"error": {message, type,
 * param, code}}` (facts from the OpenAI API reference for chat completions and its streaming
 * and error-code guides). It records every request (path, headers, parsed body), replays
 * scripted replies in order, and notes when a client drops a stream.
 *
 * @example
 * ```ts
 * import { createOpenAIChatLlm } from "@flowcat/flowcat/llm/openai-chat";
 * import type { LlmContext } from "@flowcat/flowcat";
 * declare const context: LlmContext;
 * const fake = new OpenAIChatFake();
 * fake.reply(streamReply([textChunk("Hi"), finishChunk("stop")]));
 * const llm = createOpenAIChatLlm({ provider: "openai", apiKey: "k", baseUrl: fake.baseUrl });
 * for await (const f of llm.runLlm(context)) console.log(f.kind);
 * await fake.close();
 * ```
 * @module
 */

import { pacedStream } from "./_paced_stream.ts";

/** One request as the fake saw it. */
export interface RecordedRequest {
  method: string;
  path: string;
  /** The URL query. */
  query: Record<string, string>;
  /** Header names lower-case. */
  headers: Record<string, string>;
  /** The parsed JSON body (`{}` when it was not JSON). */
  body: Record<string, unknown>;
}

/** A scripted answer. */
export type FakeReply =
  | { kind: "json"; status: number; body: unknown }
  | {
    kind: "stream";
    /** SSE `data:` payloads, sent in order (JSON text, `[DONE]`, or anything malformed). */
    events: string[];
    /** Pause before each event after the first, ms (default 0). */
    gapMs?: number;
    /** Keep the connection open after the last event until the client drops it. */
    hold?: boolean;
  };

let chunkSeq = 0;

/** A `chat.completion.chunk` payload with one choice holding `delta`. */
export function deltaChunk(
  delta: Record<string, unknown>,
  finishReason: string | null = null,
): string {
  return JSON.stringify({
    id: `chatcmpl-fake${++chunkSeq}`,
    object: "chat.completion.chunk",
    created: 1_700_000_000,
    model: "gpt-4o-mini-2024-07-18",
    system_fingerprint: "fp_fake",
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
  });
}

/** A text delta chunk. */
export function textChunk(text: string): string {
  return deltaChunk({ content: text });
}

/** A tool-call fragment; OpenAI sends `id`, `type` and `name` only on a call's first fragment. */
export function toolCallChunk(
  index: number,
  part: { id?: string; name?: string; arguments?: string },
): string {
  const call: Record<string, unknown> = { index };
  if (part.id !== undefined) Object.assign(call, { id: part.id, type: "function" });
  const fn: Record<string, unknown> = { arguments: part.arguments ?? "" };
  if (part.name !== undefined) fn.name = part.name;
  call.function = fn;
  return deltaChunk({ tool_calls: [call] });
}

/** The last choice chunk: empty delta and a finish reason (`stop`, `tool_calls`, `length`). */
export function finishChunk(reason: string): string {
  return deltaChunk({}, reason);
}

/** The `include_usage` chunk: empty `choices` and the usage of the whole request. */
export function usageChunk(usage: Record<string, unknown>): string {
  return JSON.stringify({
    id: `chatcmpl-fake${++chunkSeq}`,
    object: "chat.completion.chunk",
    created: 1_700_000_000,
    model: "gpt-4o-mini-2024-07-18",
    choices: [],
    usage,
  });
}

/** An in-stream error event, shaped like the API's error bodies. */
export function errorChunk(message: string, type = "server_error"): string {
  return JSON.stringify({ error: { message, type, param: null, code: null } });
}

/** A streamed reply ending in `[DONE]` (unless `hold` keeps it open instead). */
export function streamReply(
  events: string[],
  opts: { gapMs?: number; hold?: boolean } = {},
): FakeReply {
  return { kind: "stream", events: opts.hold ? events : [...events, "[DONE]"], ...opts };
}

/** A JSON error reply with the API's error body. */
export function errorReply(
  status: number,
  message: string,
  type = "invalid_request_error",
): FakeReply {
  return { kind: "json", status, body: { error: { message, type, param: null, code: null } } };
}

/** The fake server; listens on 127.0.0.1 at an ephemeral port from construction. */
export class OpenAIChatFake {
  /** Every request, in order. */
  readonly requests: RecordedRequest[] = [];
  /** Streams the client dropped before the fake finished them. */
  dropped = 0;
  /** The Bearer key the fake accepts; another gets OpenAI's 401. Unset: no check. */
  apiKey: string | undefined;
  /** Where the key is read: `Authorization: Bearer` (OpenAI) or `api-key` (Azure OpenAI). */
  keyHeader: "authorization" | "api-key" = "authorization";

  readonly #server: Deno.HttpServer<Deno.NetAddr>;
  readonly #replies: FakeReply[] = [];
  readonly #waiters: (() => void)[] = [];

  /** Start listening. */
  constructor() {
    this.#server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      (req) => this.#handle(req),
    );
  }

  /** API root to give the client, e.g. `http://127.0.0.1:4711/v1`. */
  get baseUrl(): string {
    return `http://127.0.0.1:${this.#server.addr.port}/v1`;
  }

  /** Queue replies for the next requests; with none queued the fake answers 500. */
  reply(...replies: FakeReply[]): void {
    this.#replies.push(...replies);
  }

  /** Resolve once `n` streams were dropped by the client (reject after `ms`). */
  async waitDropped(n = 1, ms = 3000): Promise<void> {
    const end = Date.now() + ms;
    while (this.dropped < n) {
      if (Date.now() > end) throw new Error(`fake: ${this.dropped} of ${n} streams dropped`);
      await new Promise<void>((r) => {
        const t = setTimeout(r, 20);
        this.#waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
  }

  /** Stop listening. */
  async close(): Promise<void> {
    await this.#server.shutdown();
  }

  async #handle(req: Request): Promise<Response> {
    const text = await req.text();
    let body: Record<string, unknown> = {};
    try {
      const parsed = JSON.parse(text);
      if (typeof parsed === "object" && parsed !== null) body = parsed;
    } catch { /* recorded as {} */ }
    this.requests.push({
      method: req.method,
      path: new URL(req.url).pathname,
      query: Object.fromEntries(new URL(req.url).searchParams),
      headers: Object.fromEntries(req.headers),
      body,
    });
    const given = this.keyHeader === "api-key"
      ? req.headers.get("api-key") ?? ""
      : req.headers.get("authorization")?.replace(/^Bearer /, "") ?? "";
    if (this.apiKey !== undefined && given !== this.apiKey && this.keyHeader === "api-key") {
      // Azure OpenAI's answer to a refused key.
      const message = "Access denied due to invalid subscription key or wrong API endpoint.";
      return Response.json({ error: { code: "401", message } }, { status: 401 });
    }
    if (this.apiKey !== undefined && given !== this.apiKey) {
      // OpenAI shows only the key's ends in a 401.
      const shown = given.length > 8 ? `${given.slice(0, 3)}****${given.slice(-4)}` : "****";
      const error = {
        message: `Incorrect API key provided: ${shown}.`,
        type: "invalid_request_error",
        param: null,
        code: "invalid_api_key",
      };
      return Response.json({ error }, { status: 401 });
    }
    const reply = this.#replies.shift() ??
      errorReply(500, "fake: no reply scripted", "server_error");
    if (reply.kind === "json") {
      return Response.json(reply.body, { status: reply.status });
    }
    return this.#stream(reply);
  }

  #stream(reply: Extract<FakeReply, { kind: "stream" }>): Response {
    const paced = pacedStream(reply.events.map((e) => `data: ${e}\n\n`), {
      gapMs: reply.gapMs,
      hold: reply.hold,
      onCancel: () => {
        this.dropped++;
        for (const wake of this.#waiters.splice(0)) wake();
      },
    });
    return new Response(paced.body, {
      headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" },
    });
  }
}
