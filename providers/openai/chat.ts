// Over 400 lines: one wire format: request mapping, stream reading and client together.
/**
 * OpenAI-compatible chat-completions language model: `POST {baseUrl}/chat/completions` with
 * `stream: true`, answered as Server-Sent Events of `chat.completion.chunk` objects ending in
 * `data: [DONE]`. Most hosted and local model servers speak it (OpenAI, Groq, Together,
 * Fireworks, DeepSeek, Mistral, OpenRouter, Ollama, llama.cpp, vLLM...), so one client serves
 * them all; each wrapper provider only differs in base URL, key and default model.
 *
 * @example
 * ```ts
 * import { createOpenAIChatLlm } from "@flowcat/flowcat/llm/openai-chat";
 * declare const key: string;
 * const GROQ_URL = "https://api.groq.com/openai/v1";
 * const llm = createOpenAIChatLlm({ provider: "groq", apiKey: key, baseUrl: GROQ_URL });
 * for await (const f of llm.runLlm({ messages: [{ role: "user", content: "hi" }], tools: [] })) {
 *   if (f.kind === "LlmText") console.log(f.text);
 * }
 * ```
 *
 * Permissions: `--allow-net=<the service's host>` (`api.openai.com:443` by default).
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import {
  type Frame,
  type FunctionCall,
  type LlmContext,
  type LlmTokenUsage,
  makeFrame,
  type StartParams,
  type ToolDecl,
} from "../../core/frames.ts";
import { type Logger, silentLogger } from "../../core/log.ts";
import type { LlmService } from "../../core/seams.ts";
import { providerFetch, readSse, type SseEvent } from "../http.ts";

export type { SseEvent } from "../http.ts";
import type { ServiceOptions } from "../service_options.ts";
import { OPENAI_CHAT_DEFAULT_BASE_URL, OPENAI_CHAT_DEFAULT_MODEL } from "./defaults.ts";
export { OPENAI_CHAT_DEFAULT_BASE_URL, OPENAI_CHAT_DEFAULT_MODEL } from "./defaults.ts";

export type { ServiceOptions } from "../service_options.ts";

/** A tool call inside an assistant message, as the wire spells it. */
export type OpenAIChatToolCall = { id: string; type: "function"; function: OpenAIChatFunction };
/** The function part of a tool call: arguments as a JSON string. */
export type OpenAIChatFunction = { name: string; arguments: string };

/** One chat message, as the wire spells it. */
export type OpenAIChatMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string }
  | { role: "assistant"; content: string | null; tool_calls?: OpenAIChatToolCall[] }
  | { role: "tool"; tool_call_id: string; content: string };

/** One tool declaration, as the wire spells it. */
export interface OpenAIChatTool {
  /** Always `function`. */
  type: "function";
  /** The function's name, description and JSON-schema parameters. */
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/** What {@link parseChatCompletionStream} makes of a stream. */
export type ChatStreamEvent =
  | { type: "text"; text: string }
  | { type: "calls"; calls: FunctionCall[] }
  | { type: "usage"; tokens: LlmTokenUsage };

// Sampling options copied from `ServiceOptions.options` into the request when present.
const SAMPLING_OPTIONS = ["temperature", "top_p", "max_tokens", "max_completion_tokens"]
  .concat(["frequency_penalty", "presence_penalty", "seed", "stop"]);
const MAX_DETAIL = 300;

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** The context's messages in the chat-completions shape (tool calls with JSON-string arguments). */
export function toOpenAIChatMessages(context: LlmContext): OpenAIChatMessage[] {
  return context.messages.map((m): OpenAIChatMessage => {
    switch (m.role) {
      case "system":
      case "user":
        return { role: m.role, content: m.content };
      case "tool":
        return { role: "tool", tool_call_id: m.toolCallId, content: m.content };
      case "assistant": {
        const calls = m.toolCalls ?? [];
        if (calls.length === 0) return { role: "assistant", content: m.content };
        return {
          role: "assistant",
          // Servers expect null, not "", beside tool calls when the model said nothing.
          content: m.content === "" ? null : m.content,
          tool_calls: calls.map((c) => ({
            id: c.toolCallId,
            type: "function",
            function: { name: c.functionName, arguments: JSON.stringify(c.arguments) },
          })),
        };
      }
    }
  });
}

/** Tool declarations in the chat-completions `tools` shape. */
export function toOpenAIChatTools(tools: readonly ToolDecl[]): OpenAIChatTool[] {
  return tools.map((t) => ({
    type: "function",
    function: { name: t.name, description: t.description, parameters: t.params },
  }));
}

/**
 * The streaming request body. `options` may hold sampling fields (temperature, top_p,
 * max_tokens, ...), `stream_usage: false` for servers that reject `stream_options` (Mistral
 * answers 422 to it) and `extra_body`, an object of provider-specific fields merged in last.
 */
export function buildChatCompletionBody(
  model: string,
  context: LlmContext,
  tools: readonly ToolDecl[],
  options: Record<string, unknown> = {},
): Record<string, unknown> {
  const body: Json = { model, messages: toOpenAIChatMessages(context), stream: true };
  if (options.stream_usage !== false) body.stream_options = { include_usage: true };
  // An empty tools array is rejected by some servers, so the field is left out instead.
  if (tools.length > 0) body.tools = toOpenAIChatTools(tools);
  for (const key of SAMPLING_OPTIONS) if (options[key] !== undefined) body[key] = options[key];
  if (isObject(options.extra_body)) {
    const { model: _m, messages: _ms, stream: _s, ...extra } = options.extra_body;
    Object.assign(body, extra);
  }
  return body;
}

/**
 * Text deltas, then (once the stream is complete) the assembled tool calls and the usage, from
 * the SSE events of a chat-completions stream. Data that is not JSON is skipped with a warning;
 * an in-stream `{"error": ...}`, tool-call arguments that are not a JSON object, or a stream that
 * ends before `[DONE]` and before any `finish_reason` throw a {@link FlowcatError}.
 */
export async function* parseChatCompletionStream(
  provider: string,
  events: AsyncIterable<SseEvent>,
  logger: Logger = silentLogger,
): AsyncGenerator<ChatStreamEvent> {
  const calls = new ToolCallAssembler(provider);
  let usage: LlmTokenUsage | undefined;
  let complete = false;
  for await (const ev of events) {
    if (ev.data.trim() === "[DONE]") {
      complete = true;
      break;
    }
    let chunk: unknown;
    try {
      chunk = JSON.parse(ev.data);
    } catch {
      logger.warn(`${provider}: skipped a stream chunk that is not JSON`, {
        start: ev.data.slice(0, 60),
      });
      continue;
    }
    if (!isObject(chunk)) continue;
    if (chunk.error !== undefined && chunk.error !== null) throw streamError(provider, chunk.error);
    usage = maxUsage(usage, readUsage(chunk));
    const choice = Array.isArray(chunk.choices) ? chunk.choices[0] : undefined;
    if (!isObject(choice)) continue;
    const delta = isObject(choice.delta) ? choice.delta : {};
    if (typeof delta.content === "string" && delta.content !== "") {
      yield { type: "text", text: delta.content };
    }
    if (Array.isArray(delta.tool_calls)) calls.add(delta.tool_calls);
    if (typeof choice.finish_reason === "string") complete = true;
  }
  if (!complete) throw new FlowcatError("closed", `${provider}: stream ended before [DONE]`);
  const done = calls.finish();
  if (done.length > 0) yield { type: "calls", calls: done };
  if (usage !== undefined) yield { type: "usage", tokens: usage };
}

type PartialCall = { id: string; name: string; args: string[] };

/** Joins streamed tool-call fragments (keyed by `index`) into whole calls. */
class ToolCallAssembler {
  readonly #provider: string;
  readonly #atIndex = new Map<number, PartialCall>();
  readonly #calls: PartialCall[] = [];

  constructor(provider: string) {
    this.#provider = provider;
  }

  add(deltas: unknown[]): void {
    deltas.forEach((d, position) => {
      if (!isObject(d)) return;
      const index = typeof d.index === "number" ? d.index : position;
      const id = typeof d.id === "string" && d.id !== "" ? d.id : undefined;
      const fn = isObject(d.function) ? d.function : {};
      let call = this.#atIndex.get(index);
      // Ollama numbers every call of a parallel batch 0 and tells them apart only by id.
      if (call === undefined || (id !== undefined && call.id !== "" && call.id !== id)) {
        call = { id: "", name: "", args: [] };
        this.#atIndex.set(index, call);
        this.#calls.push(call);
      }
      if (id !== undefined && call.id === "") call.id = id;
      if (typeof fn.name === "string" && call.name === "") call.name = fn.name;
      if (typeof fn.arguments === "string") call.args.push(fn.arguments);
      else if (isObject(fn.arguments)) call.args.push(JSON.stringify(fn.arguments));
    });
  }

  finish(): FunctionCall[] {
    return this.#calls.map((c, i) => {
      if (c.name === "") {
        throw new FlowcatError("protocol", `${this.#provider}: tool call without a name`);
      }
      const text = c.args.join("").trim();
      let args: unknown;
      try {
        args = text === "" ? {} : JSON.parse(text);
      } catch { /* reported below */ }
      if (!isObject(args)) {
        const what = args === undefined ? "JSON" : "a JSON object";
        throw new FlowcatError(
          "protocol",
          `${this.#provider}: tool call ${c.name} arguments are not ${what}`,
        );
      }
      return { toolCallId: c.id || `call_${i}`, functionName: c.name, arguments: args };
    });
  }
}

/** Token usage of a chunk: `usage`, or Groq's older `x_groq.usage`. */
function readUsage(chunk: Json): LlmTokenUsage | undefined {
  const u = isObject(chunk.usage)
    ? chunk.usage
    : isObject(chunk.x_groq) && isObject(chunk.x_groq.usage)
    ? chunk.x_groq.usage
    : undefined;
  if (u === undefined) return undefined;
  const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : undefined);
  const detail = (o: unknown, k: string) => (isObject(o) ? num(o[k]) : undefined);
  const promptTokens = num(u.prompt_tokens) ?? 0;
  const completionTokens = num(u.completion_tokens) ?? 0;
  const tokens: LlmTokenUsage = {
    promptTokens,
    completionTokens,
    totalTokens: num(u.total_tokens) ?? promptTokens + completionTokens,
  };
  const cached = detail(u.prompt_tokens_details, "cached_tokens");
  if (cached !== undefined) tokens.cacheReadInputTokens = cached;
  const reasoning = detail(u.completion_tokens_details, "reasoning_tokens");
  if (reasoning !== undefined) tokens.reasoningTokens = reasoning;
  return tokens;
}

/** Field-wise max: xAI, Perplexity and NVIDIA repeat a growing usage on many chunks. */
function maxUsage(a: LlmTokenUsage | undefined, b: LlmTokenUsage | undefined) {
  if (a === undefined || b === undefined) return b ?? a;
  const out = { ...a, ...b };
  for (const k of Object.keys(out) as (keyof LlmTokenUsage)[]) {
    out[k] = Math.max(a[k] ?? 0, b[k] ?? 0);
  }
  out.totalTokens = Math.max(out.totalTokens, out.promptTokens + out.completionTokens);
  return out;
}

/** The error for an in-stream `{"error": {...}}` chunk. */
function streamError(provider: string, error: unknown): FlowcatError {
  const message = isObject(error) && typeof error.message === "string"
    ? error.message
    : JSON.stringify(error);
  return new FlowcatError("protocol", `${provider}: stream error: ${message.slice(0, MAX_DETAIL)}`);
}

/** Aborts `signal` when no stream data arrives for `ms`; paused while the consumer holds a frame. */
class IdleDeadline {
  readonly #ctl = new AbortController();
  readonly signal: AbortSignal = this.#ctl.signal;
  #timer: ReturnType<typeof setTimeout> | undefined;
  fired = false;

  constructor(readonly ms: number) {}

  arm(): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.fired = true;
      this.#ctl.abort();
    }, this.ms);
  }

  pause(): void {
    clearTimeout(this.#timer);
  }

  async *watch<T>(source: AsyncIterable<T>): AsyncGenerator<T> {
    this.arm();
    for await (const item of source) {
      this.pause();
      yield item;
      this.arm();
    }
  }
}

/**
 * Where a chat-completions request goes when it is not `{baseUrl}/chat/completions` with a
 * bearer key: Azure OpenAI's deployment URL and `api-key` header.
 */
export interface ChatEndpoint {
  /** The full request URL. */
  url: string;
  /** The auth headers for a key. */
  auth(key: string): Record<string, string>;
}

/** Language model over an OpenAI-compatible chat-completions endpoint. */
export class OpenAIChatLlm implements LlmService {
  readonly #opts: ServiceOptions;
  readonly #url: string;
  readonly #auth: (key: string) => Record<string, string>;
  readonly #model: string;
  readonly #logger: Logger;
  #tools: ToolDecl[] = [];

  /**
   * A client for `opts.provider` at `opts.baseUrl` (default OpenAI) with `opts.model`;
   * `endpoint` replaces the URL and the auth header.
   */
  constructor(opts: ServiceOptions, endpoint?: ChatEndpoint) {
    this.#opts = opts;
    const root = (opts.baseUrl ?? OPENAI_CHAT_DEFAULT_BASE_URL).replace(/\/+$/, "");
    this.#url = endpoint?.url ?? `${root}/chat/completions`;
    this.#auth = endpoint?.auth ?? ((key) => ({ authorization: `Bearer ${key}` }));
    this.#model = opts.model ?? OPENAI_CHAT_DEFAULT_MODEL;
    this.#logger = opts.logger ?? silentLogger;
  }

  /** The provider's name from the options. */
  name(): string {
    return this.#opts.provider;
  }

  /** Nothing to open: every turn is its own request. */
  start(_params: StartParams): Promise<void> {
    return Promise.resolve();
  }

  /** Tools offered when the context carries none. */
  setTools(tools: ToolDecl[]): void {
    this.#tools = [...tools];
  }

  /**
   * One streamed completion: LlmResponseStart (once the server accepted the request), LlmText per
   * delta, FunctionCallsStarted, Metrics (usage) and LlmResponseEnd. Aborting `signal` closes the
   * connection and ends the iterator without LlmResponseEnd.
   */
  async *runLlm(context: LlmContext, signal?: AbortSignal): AsyncGenerator<Frame> {
    const provider = this.#opts.provider;
    const timeoutMs = this.#opts.timeoutMs ?? 15000;
    const tools = context.tools.length > 0 ? context.tools : this.#tools;
    const body = buildChatCompletionBody(this.#model, context, tools, this.#opts.options);
    const headers: Record<string, string> = {
      "content-type": "application/json",
      accept: "text/event-stream",
    };
    if (this.#opts.apiKey) Object.assign(headers, this.#auth(this.#opts.apiKey));
    let res: Response;
    try {
      res = await providerFetch(
        provider,
        this.#url,
        { method: "POST", headers, body: JSON.stringify(body) },
        { timeoutMs, signal, ...(this.#opts.fetch ? { fetch: this.#opts.fetch } : {}) },
      );
    } catch (err) {
      if (signal?.aborted) return;
      throw this.#withoutKey(err);
    }
    if (res.body === null) throw new FlowcatError("protocol", `${provider}: empty response`);
    if ((res.headers.get("content-type") ?? "").includes("application/json")) {
      const text = (await res.text()).slice(0, MAX_DETAIL);
      throw this.#withoutKey(
        new FlowcatError("protocol", `${provider}: answered JSON, not an event stream: ${text}`),
      );
    }
    const idle = new IdleDeadline(timeoutMs);
    const stop = signal ? AbortSignal.any([signal, idle.signal]) : idle.signal;
    try {
      yield makeFrame("LlmResponseStart", {});
      const events = idle.watch(readSse(res.body, stop));
      for await (const ev of parseChatCompletionStream(provider, events, this.#logger)) {
        if (ev.type === "text") yield makeFrame("LlmText", { text: ev.text });
        else if (ev.type === "calls") yield makeFrame("FunctionCallsStarted", { calls: ev.calls });
        else {
          const usage = { type: "llm_usage" as const, processor: provider, model: this.#model };
          yield makeFrame("Metrics", { data: [{ ...usage, tokens: ev.tokens }] });
        }
      }
    } catch (err) {
      if (signal?.aborted) return;
      if (idle.fired) {
        throw new FlowcatError("timeout", `${provider}: no stream data within ${timeoutMs} ms`);
      }
      throw this.#withoutKey(err);
    } finally {
      idle.pause();
      // Reading locks the body and readSse cancels it; a consumer gone before that leaves it here.
      if (!res.body.locked) await res.body.cancel().catch(() => {});
    }
    if (signal?.aborted) return;
    yield makeFrame("LlmResponseEnd", {});
  }

  /** `err` with the API key masked out of its message, should a server have echoed it. */
  #withoutKey(err: unknown): unknown {
    const key = this.#opts.apiKey;
    if (!key || !(err instanceof FlowcatError) || !err.message.includes(key)) return err;
    return new FlowcatError(err.kind, err.message.replaceAll(key, "***"));
  }
}

/** An {@link LlmService} for any OpenAI-compatible chat-completions provider. */
export function createOpenAIChatLlm(opts: ServiceOptions): LlmService {
  return new OpenAIChatLlm(opts);
}
