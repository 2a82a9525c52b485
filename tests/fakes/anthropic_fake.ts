/**
 * A local Anthropic Messages API server for tests: HTTP on 127.0.0.1 speaking the real wire
 * protocol (docs.anthropic.com "Messages", "Streaming messages", "Errors"). It records every
 * request, checks what the real API checks (`x-api-key`, `anthropic-version`, `max_tokens`,
 * user/assistant alternation, each `tool_result` answering a `tool_use` of the message before)
 * and answers with scripted replies: named SSE events, or an HTTP error with Anthropic's error
 * body `{"type":"error","error":{"type","message"}}`.
 *
 * @example
 * ```ts
 * import { createAnthropicLlm } from "@flowcat/flowcat/llm/anthropic";
 * const fake = await new AnthropicFake().start();
 * fake.reply({ events: anthropicStream({ text: ["Hel", "lo"] }) });
 * const llm = createAnthropicLlm({ provider: "anthropic", apiKey: fake.apiKey, baseUrl: fake.url });
 * await fake.close();
 * ```
 * @module
 */

import { pacedStream } from "./_paced_stream.ts";

/** A request the fake received. */
export interface RecordedRequest {
  method: string;
  /** Path without the query. */
  path: string;
  headers: Headers;
  /** The JSON body (undefined when it was not JSON). */
  body: Record<string, unknown> | undefined;
}

/** One SSE event to send: `event:` name and the JSON `data`. */
export interface SseEventSpec {
  event: string;
  data: Record<string, unknown>;
}

/** A scripted answer. */
export type FakeReply =
  | { status: number; body?: unknown; headers?: Record<string, string> }
  | {
    events: SseEventSpec[];
    /** Pause between events, ms (default 0). */
    gapMs?: number;
    /** Keep the stream open after the last event until the client goes away. */
    hang?: boolean;
  };

/** Body of an Anthropic API error. */
export function anthropicError(type: string, message: string): Record<string, unknown> {
  return { type: "error", error: { type, message }, request_id: "req_fake" };
}

/** What {@link anthropicStream} builds a reply from. */
export interface StreamScript {
  /** Text deltas of one text block (omitted: no text block). */
  text?: string[];
  /** Tool-use blocks: `json` is the input JSON split into `input_json_delta` fragments. */
  tools?: { id: string; name: string; json: string[] }[];
  inputTokens?: number;
  outputTokens?: number;
  cacheReadTokens?: number;
  stopReason?: string;
}

/** The event sequence the real API streams for a message with this content. */
export function anthropicStream(s: StreamScript): SseEventSpec[] {
  const ev: SseEventSpec[] = [];
  const add = (event: string, data: Record<string, unknown>) =>
    ev.push({ event, data: { type: event, ...data } });
  add("message_start", {
    message: {
      id: "msg_fake",
      type: "message",
      role: "assistant",
      model: "claude-fake",
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: {
        input_tokens: s.inputTokens ?? 25,
        output_tokens: 1,
        cache_read_input_tokens: s.cacheReadTokens ?? 0,
        cache_creation_input_tokens: 0,
      },
    },
  });
  let index = 0;
  if (s.text) {
    add("content_block_start", { index, content_block: { type: "text", text: "" } });
    add("ping", {});
    for (const t of s.text) {
      add("content_block_delta", { index, delta: { type: "text_delta", text: t } });
    }
    add("content_block_stop", { index });
    index++;
  }
  for (const t of s.tools ?? []) {
    add("content_block_start", {
      index,
      content_block: { type: "tool_use", id: t.id, name: t.name, input: {} },
    });
    add("content_block_delta", { index, delta: { type: "input_json_delta", partial_json: "" } });
    for (const j of t.json) {
      add("content_block_delta", { index, delta: { type: "input_json_delta", partial_json: j } });
    }
    add("content_block_stop", { index });
    index++;
  }
  add("message_delta", {
    delta: {
      stop_reason: s.stopReason ?? (s.tools?.length ? "tool_use" : "end_turn"),
      stop_sequence: null,
    },
    usage: { output_tokens: s.outputTokens ?? 15 },
  });
  add("message_stop", {});
  return ev;
}

/** The fake server. Public fields are knobs a test may change at any time. */
export class AnthropicFake {
  /** The key the fake accepts in `x-api-key`. */
  apiKey = "sk-ant-fake-0123456789";
  /** Every request, in arrival order. */
  readonly requests: RecordedRequest[] = [];
  /** SSE streams the client abandoned before the fake finished them. */
  cancelledStreams = 0;
  readonly #replies: FakeReply[] = [];
  readonly #open = new Set<() => void>();
  readonly #abort = new AbortController();
  #server: Deno.HttpServer<Deno.NetAddr> | undefined;

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
    const text = await req.text();
    let body: Record<string, unknown> | undefined;
    try {
      body = JSON.parse(text);
    } catch { /* recorded as undefined */ }
    this.requests.push({ method: req.method, path: url.pathname, headers: req.headers, body });
    if (req.method !== "POST" || url.pathname !== "/v1/messages") {
      return json(404, anthropicError("not_found_error", "Not found"));
    }
    if (req.headers.get("x-api-key") !== this.apiKey) {
      return json(401, anthropicError("authentication_error", "invalid x-api-key"));
    }
    if (!req.headers.get("anthropic-version")) {
      return json(
        400,
        anthropicError("invalid_request_error", "anthropic-version: header is required"),
      );
    }
    const invalid = body ? validate(body) : "body: not JSON";
    if (invalid) return json(400, anthropicError("invalid_request_error", invalid));
    const reply = this.#replies.shift() ?? { events: anthropicStream({ text: ["Hi"] }) };
    if ("status" in reply) return json(reply.status, reply.body ?? {}, reply.headers);
    return this.#stream(reply);
  }

  #stream(reply: Extract<FakeReply, { events: unknown }>): Response {
    const frames = reply.events.map((e) =>
      `event: ${e.event}\ndata: ${JSON.stringify(e.data)}\n\n`
    );
    const paced = pacedStream(frames, {
      gapMs: reply.gapMs,
      hold: reply.hang,
      onCancel: () => this.cancelledStreams++,
      onDone: () => this.#open.delete(paced.stop),
    });
    this.#open.add(paced.stop);
    return new Response(paced.body, {
      headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" },
    });
  }
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

/** What the real API rejects with invalid_request_error (the subset these tests can hit). */
function validate(body: Record<string, unknown>): string | undefined {
  if (typeof body.model !== "string") return "model: Field required";
  if (typeof body.max_tokens !== "number") return "max_tokens: Field required";
  const messages = body.messages;
  if (!Array.isArray(messages) || messages.length === 0) {
    return "messages: at least one message is required";
  }
  let prevRole = "";
  let prevToolUses = new Set<string>();
  for (const [i, m] of messages.entries()) {
    if (m.role !== "user" && m.role !== "assistant") {
      return `messages.${i}.role: must be user or assistant`;
    }
    if (i === 0 && m.role !== "user") return 'messages: first message must use the "user" role';
    if (m.role === prevRole) return 'messages: roles must alternate between "user" and "assistant"';
    const blocks = typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content;
    if (!Array.isArray(blocks) || blocks.length === 0) {
      return `messages.${i}: content must be non-empty`;
    }
    const toolUses = new Set<string>();
    for (const b of blocks) {
      if (b.type === "text" && !b.text) {
        return `messages.${i}: text content blocks must be non-empty`;
      }
      if (b.type === "tool_use") toolUses.add(b.id);
      if (b.type === "tool_result" && !prevToolUses.has(b.tool_use_id)) {
        return `messages.${i}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${b.tool_use_id}`;
      }
    }
    prevRole = m.role;
    prevToolUses = toolUses;
  }
  return undefined;
}
