/**
 * Anthropic Messages API client, streaming (`POST {baseUrl}/v1/messages` with `stream: true`).
 *
 * Wire facts (docs.anthropic.com / platform.claude.com "Messages" and "Streaming messages"):
 * headers `x-api-key` and `anthropic-version: 2023-06-01`; the system prompt is a top-level
 * `system` field, not a message; `messages` must alternate user/assistant, so consecutive
 * same-role messages are merged into one message with several content blocks; a tool call is an
 * assistant `tool_use` block `{id, name, input}` and its result a user `tool_result` block
 * `{tool_use_id, content}`. The stream is named SSE events: `message_start` (usage.input_tokens),
 * `content_block_start` (a `text` or `tool_use` block), `content_block_delta` (`text_delta` or
 * `input_json_delta` fragments of the tool input), `content_block_stop`, `message_delta`
 * (cumulative usage.output_tokens, stop_reason), `message_stop`, `ping`, and `error`
 * (`{type:"error", error:{type, message}}`, e.g. `overloaded_error` mid-stream).
 * HTTP 529 means "overloaded": it is retried like a 503.
 *
 * @example
 * ```ts
 * import { createAnthropicLlm } from "@flowcat/flowcat/llm/anthropic";
 * declare const key: string;
 * const llm = createAnthropicLlm({ provider: "anthropic", apiKey: key });
 * for await (const f of llm.runLlm({ messages: [{ role: "user", content: "Hi" }], tools: [] })) {
 *   if (f.kind === "LlmText") console.log(f.text);
 * }
 * ```
 *
 * Permissions: `--allow-net=api.anthropic.com:443` (or the `url` given).
 * @module
 */

// Same imports and service skeleton as llm/gemini.ts: two wire formats behind one LlmService;
// what they share at the wire (fetch, retries, SSE) is providers/http.ts.
import { FlowcatError } from "../../core/errors.ts";
import {
  type Frame,
  type FunctionCall,
  type LlmContext,
  type LlmMessage,
  type LlmTokenUsage,
  makeFrame,
  type StartParams,
  type ToolDecl,
} from "../../core/frames.ts";
import type { LlmService } from "../../core/seams.ts";
import { type Logger, silentLogger } from "../../core/log.ts";
import { providerFetch, readSse } from "../http.ts";
import type { ServiceOptions } from "../service_options.ts";
import { ANTHROPIC_DEFAULT_BASE_URL, ANTHROPIC_DEFAULT_MODEL } from "./defaults.ts";
export { ANTHROPIC_DEFAULT_BASE_URL, ANTHROPIC_DEFAULT_MODEL } from "./defaults.ts";

export type { ServiceOptions } from "../service_options.ts";

/** The API version header value this client speaks. */
export const ANTHROPIC_VERSION = "2023-06-01";
/** `max_tokens` is required by the API; this is used when options.max_tokens is absent. */
export const ANTHROPIC_DEFAULT_MAX_TOKENS = 1024;

/** The user line sent in front of a conversation the bot opens (the API needs one). */
export const CONVERSATION_START = "(The call has started.)";

// Sampling options passed through unchanged when the config sets them.
const PASSTHROUGH_OPTIONS = ["temperature", "top_p", "top_k", "stop_sequences"] as const;

/** One content block of a request message. */
export type AnthropicBlock =
  | { type: "text"; text: string }
  | { type: "tool_use"; id: string; name: string; input: Record<string, unknown> }
  | { type: "tool_result"; tool_use_id: string; content: string };

/** One request message (always the block form, so merging is uniform). */
export interface AnthropicMessage {
  /** Who speaks: the caller's side or the model. */
  role: "user" | "assistant";
  /** The message's content blocks. */
  content: AnthropicBlock[];
}

/** A tool as the Messages API declares it. */
export interface AnthropicTool {
  /** Tool name the model calls. */
  name: string;
  /** What the tool does, shown to the model. */
  description: string;
  /** JSON schema of the tool's arguments. */
  input_schema: Record<string, unknown>;
}

/**
 * Map an {@link LlmContext}'s messages to `system` plus alternating Messages API messages.
 * Tool results whose call is not in the context (e.g. trimmed away) are dropped: the API
 * rejects a `tool_result` without its `tool_use`. When the conversation does not start with a
 * user line (the bot speaks first) a {@link CONVERSATION_START} user message is put in front.
 */
export function anthropicMessages(
  messages: readonly LlmMessage[],
  onOrphan: (toolCallId: string) => void = () => {},
): { system: string; messages: AnthropicMessage[] } {
  const system: string[] = [];
  const out: AnthropicMessage[] = [];
  const knownCalls = new Set<string>();
  const push = (role: AnthropicMessage["role"], blocks: AnthropicBlock[]) => {
    if (blocks.length === 0) return;
    const last = out.at(-1);
    if (last?.role === role) last.content.push(...blocks);
    else out.push({ role, content: blocks });
  };
  for (const m of messages) {
    switch (m.role) {
      case "system":
        if (m.content) system.push(m.content);
        break;
      case "user":
        // The API rejects empty text blocks.
        if (m.content) push("user", [{ type: "text", text: m.content }]);
        break;
      case "assistant": {
        const blocks: AnthropicBlock[] = m.content ? [{ type: "text", text: m.content }] : [];
        for (const c of m.toolCalls ?? []) {
          knownCalls.add(c.toolCallId);
          blocks.push({
            type: "tool_use",
            id: c.toolCallId,
            name: c.functionName,
            input: c.arguments,
          });
        }
        push("assistant", blocks);
        break;
      }
      case "tool":
        if (!knownCalls.has(m.toolCallId)) onOrphan(m.toolCallId);
        else push("user", [{ type: "tool_result", tool_use_id: m.toolCallId, content: m.content }]);
        break;
    }
  }
  // A call the bot opens has no user line yet, and the API wants a user message first.
  if (out[0]?.role !== "user") {
    out.unshift({ role: "user", content: [{ type: "text", text: CONVERSATION_START }] });
  }
  return { system: system.join("\n\n"), messages: out };
}

/** Map tool declarations to the Messages API's `tools`. */
export function anthropicTools(tools: readonly ToolDecl[]): AnthropicTool[] {
  return tools.map((t) => ({
    name: t.name,
    description: t.description,
    input_schema: Object.keys(t.params).length > 0 ? t.params : { type: "object", properties: {} },
  }));
}

/** Usage counters as the stream reports them (each field cumulative). */
interface AnthropicUsage {
  input_tokens?: number;
  output_tokens?: number;
  cache_read_input_tokens?: number;
  cache_creation_input_tokens?: number;
}

/** A content block being streamed. */
type OpenBlock = { type: "text" } | { type: "tool_use"; id: string; name: string; json: string };

/** Anthropic Messages API language-model client (see the module doc). */
export class AnthropicLlm implements LlmService {
  readonly #provider: string;
  readonly #url: string;
  readonly #apiKey: string | undefined;
  readonly #model: string;
  readonly #options: Record<string, unknown>;
  readonly #timeoutMs: number | undefined;
  readonly #fetch: typeof fetch;
  readonly #log: Logger;
  #tools: ToolDecl[] = [];

  /** Build a client from service options (see {@link createAnthropicLlm}). */
  constructor(opts: ServiceOptions) {
    this.#provider = opts.provider;
    const base = (opts.baseUrl || ANTHROPIC_DEFAULT_BASE_URL).replace(/\/+$/, "");
    this.#url = `${base}/v1/messages`;
    this.#apiKey = opts.apiKey || undefined;
    this.#model = opts.model || ANTHROPIC_DEFAULT_MODEL;
    this.#options = opts.options ?? {};
    this.#timeoutMs = opts.timeoutMs;
    this.#fetch = opts.fetch ?? fetch;
    this.#log = opts.logger ?? silentLogger;
    const maxTokens = this.#options.max_tokens;
    if (maxTokens !== undefined && (!Number.isInteger(maxTokens) || (maxTokens as number) < 1)) {
      throw new FlowcatError("config", `${this.#provider}: options.max_tokens must be >= 1`);
    }
  }

  /** The provider's name as configured. */
  name(): string {
    return this.#provider;
  }

  /** Nothing to open: every turn is its own HTTP request. */
  async start(_params: StartParams): Promise<void> {}

  /** Replace the tools offered when the context carries none. */
  setTools(tools: ToolDecl[]): void {
    this.#tools = [...tools];
  }

  /** The request body for `context` (exposed for tests and debugging). */
  requestBody(context: LlmContext): Record<string, unknown> {
    const { system, messages } = anthropicMessages(
      context.messages,
      (id) => this.#log.warn(`${this.#provider}: dropped a tool result with no tool call`, { id }),
    );
    const tools = context.tools.length > 0 ? context.tools : this.#tools;
    const body: Record<string, unknown> = {
      model: this.#model,
      max_tokens: this.#options.max_tokens ?? ANTHROPIC_DEFAULT_MAX_TOKENS,
    };
    if (system) body.system = system;
    body.messages = messages;
    if (tools.length > 0) body.tools = anthropicTools(tools);
    for (const key of PASSTHROUGH_OPTIONS) {
      if (this.#options[key] !== undefined) body[key] = this.#options[key];
    }
    body.stream = true;
    return body;
  }

  /** LlmResponseStart, LlmText..., FunctionCallsStarted?, Metrics?, LlmResponseEnd. */
  async *runLlm(context: LlmContext, signal?: AbortSignal): AsyncGenerator<Frame> {
    const res = await this.#post(JSON.stringify(this.requestBody(context)), signal);
    if (!res.body) throw new FlowcatError("protocol", `${this.#provider}: empty response body`);
    yield makeFrame("LlmResponseStart", {});
    const blocks = new Map<number, OpenBlock>();
    const calls: FunctionCall[] = [];
    const usage: AnthropicUsage = {};
    let stopped = false;
    for await (const ev of readSse(res.body, signal)) {
      const data = this.#parse(ev.data);
      const type = ev.event ?? (typeof data.type === "string" ? data.type : "");
      if (type === "error" || data.type === "error") throw this.#streamError(data);
      if (type === "message_start") {
        Object.assign(usage, (data.message as { usage?: AnthropicUsage } | undefined)?.usage);
      } else if (type === "content_block_start") {
        const block = data.content_block as Record<string, unknown> | undefined;
        const index = data.index as number;
        if (block?.type === "tool_use") {
          blocks.set(index, {
            type: "tool_use",
            id: String(block.id),
            name: String(block.name),
            json: "",
          });
        } else if (block?.type === "text") {
          blocks.set(index, { type: "text" });
          if (typeof block.text === "string" && block.text) {
            yield makeFrame("LlmText", { text: block.text });
          }
        }
      } else if (type === "content_block_delta") {
        const delta = data.delta as Record<string, unknown> | undefined;
        const open = blocks.get(data.index as number);
        if (delta?.type === "text_delta" && typeof delta.text === "string" && delta.text) {
          yield makeFrame("LlmText", { text: delta.text });
        } else if (delta?.type === "input_json_delta" && open?.type === "tool_use") {
          open.json += typeof delta.partial_json === "string" ? delta.partial_json : "";
        }
      } else if (type === "content_block_stop") {
        const open = blocks.get(data.index as number);
        blocks.delete(data.index as number);
        if (open?.type === "tool_use") calls.push(this.#toCall(open));
      } else if (type === "message_delta") {
        Object.assign(usage, data.usage as AnthropicUsage | undefined);
        const reason = (data.delta as { stop_reason?: unknown } | undefined)?.stop_reason;
        if (reason === "max_tokens") this.#log.warn(`${this.#provider}: reply cut at max_tokens`);
      } else if (type === "message_stop") {
        stopped = true;
        break;
      }
      // `ping` and unknown (future) event types are ignored, as the API docs ask.
    }
    if (signal?.aborted) return;
    if (!stopped) {
      throw new FlowcatError("closed", `${this.#provider}: stream ended before message_stop`);
    }
    if (calls.length > 0) yield makeFrame("FunctionCallsStarted", { calls });
    const tokens = usageTokens(usage);
    if (tokens) {
      yield makeFrame("Metrics", {
        data: [{ type: "llm_usage", processor: this.#provider, model: this.#model, tokens }],
      });
    }
    yield makeFrame("LlmResponseEnd", {});
  }

  /** POST with providerFetch's deadline and retries (529 "overloaded" included). */
  async #post(body: string, signal: AbortSignal | undefined): Promise<Response> {
    const headers: Record<string, string> = {
      "content-type": "application/json",
      "anthropic-version": ANTHROPIC_VERSION,
      accept: "text/event-stream",
    };
    if (this.#apiKey) headers["x-api-key"] = this.#apiKey;
    try {
      return await providerFetch(this.#provider, this.#url, { method: "POST", headers, body }, {
        timeoutMs: this.#timeoutMs,
        signal,
        fetch: this.#fetch,
      });
    } catch (err) {
      throw withoutSecret(err, this.#apiKey);
    }
  }

  #parse(data: string): Record<string, unknown> {
    try {
      const v = JSON.parse(data);
      if (v && typeof v === "object") return v as Record<string, unknown>;
    } catch { /* reported below */ }
    throw new FlowcatError("protocol", `${this.#provider}: malformed stream event`);
  }

  #streamError(data: Record<string, unknown>): FlowcatError {
    const e = (data.error ?? {}) as { type?: unknown; message?: unknown };
    const type = typeof e.type === "string" ? e.type : "error";
    const msg = typeof e.message === "string" ? e.message : "stream error";
    const auth = type === "authentication_error" || type === "permission_error";
    const err = new FlowcatError(auth ? "auth" : "protocol", `${this.#provider}: ${type}: ${msg}`);
    return withoutSecret(err, this.#apiKey);
  }

  #toCall(block: { id: string; name: string; json: string }): FunctionCall {
    let args: unknown;
    try {
      args = block.json.trim() ? JSON.parse(block.json) : {};
    } catch { /* reported below */ }
    if (!args || typeof args !== "object" || Array.isArray(args)) {
      throw new FlowcatError("protocol", `${this.#provider}: tool ${block.name}: bad input JSON`);
    }
    const input = args as Record<string, unknown>;
    return { toolCallId: block.id, functionName: block.name, arguments: input };
  }
}

/**
 * Token usage in Flowcat's terms. Anthropic's `input_tokens` excludes cached input, so the
 * cache reads and writes are added back: `promptTokens` then counts every input token, as
 * OpenAI's `prompt_tokens` does.
 */
function usageTokens(u: AnthropicUsage): LlmTokenUsage | undefined {
  if (u.input_tokens === undefined && u.output_tokens === undefined) return undefined;
  const cacheRead = u.cache_read_input_tokens ?? 0;
  const cacheWrite = u.cache_creation_input_tokens ?? 0;
  const prompt = (u.input_tokens ?? 0) + cacheRead + cacheWrite;
  const completion = u.output_tokens ?? 0;
  const tokens: LlmTokenUsage = {
    promptTokens: prompt,
    completionTokens: completion,
    totalTokens: prompt + completion,
  };
  if (cacheRead) tokens.cacheReadInputTokens = cacheRead;
  if (cacheWrite) tokens.cacheCreationInputTokens = cacheWrite;
  return tokens;
}

/** The same error with every occurrence of `secret` masked (provider bodies may echo input). */
function withoutSecret<E>(err: E, secret: string | undefined): E | FlowcatError {
  if (!secret || !(err instanceof FlowcatError) || !err.message.includes(secret)) return err;
  return new FlowcatError(err.kind, err.message.replaceAll(secret, "[redacted]"));
}

/** Make an Anthropic Messages API client from service options. */
export function createAnthropicLlm(opts: ServiceOptions): AnthropicLlm {
  return new AnthropicLlm(opts);
}
