// Over 400 lines: one wire format: request mapping, stream reading and client together.
/**
 * Gemini API (Google AI Studio) language-model client, streaming:
 * `POST {baseUrl}/v1beta/models/{model}:streamGenerateContent?alt=sse`.
 *
 * Wire facts (ai.google.dev "Generating content", "Function calling", "Thought signatures"):
 * the key goes in the `x-goog-api-key` header, never the `?key=` query (URLs end up in logs);
 * the body is `{systemInstruction, contents, tools:[{functionDeclarations}], generationConfig}`
 * with roles `user`/`model`; a call is a model `functionCall {name, args}` part, its result a
 * user `functionResponse {name, response}` part (response must be an object). Each SSE `data:`
 * is a whole GenerateContentResponse (`candidates[0].content.parts[]` text or complete
 * functionCall; cumulative `usageMetadata`); the stream just ends, with no sentinel.
 *
 * Gemini gives calls no id, so one is made (`call_<n>`, unique per client). Gemini 3 models
 * attach an opaque `thoughtSignature` to a call and refuse a history without it, so signatures
 * are kept by call id and sent back; a call this client never saw gets Google's placeholder.
 * A wrong key answers HTTP 400 "API key not valid": an auth error here, like 401/403.
 *
 * @example
 * ```ts
 * import { createGeminiLlm } from "@flowcat/flowcat/llm/gemini";
 * declare const key: string;
 * const llm = createGeminiLlm({ provider: "gemini", apiKey: key });
 * for await (const f of llm.runLlm({ messages: [{ role: "user", content: "Hi" }], tools: [] })) {
 *   if (f.kind === "LlmText") console.log(f.text);
 * }
 * ```
 *
 * Permissions: `--allow-net=generativelanguage.googleapis.com:443` (or the `url` given).
 * @module
 */

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
import { providerFetch, type ProviderFetchOptions, readSse } from "../http.ts";
import type { ServiceOptions } from "../service_options.ts";
import { GEMINI_DEFAULT_BASE_URL, GEMINI_DEFAULT_MODEL } from "./defaults.ts";
export { GEMINI_DEFAULT_BASE_URL, GEMINI_DEFAULT_MODEL } from "./defaults.ts";

export type { ServiceOptions } from "../service_options.ts";

/** The user line sent in front of a conversation the bot opens (Gemini wants user first). */
export const CONVERSATION_START = "(The call has started.)";
/** Google's documented stand-in for a thought signature the client does not have. */
export const SKIP_SIGNATURE = "skip_thought_signature_validator";

/** One part of a Gemini content. */
export interface GeminiPart {
  /** Plain text. */
  text?: string;
  /** True when the text is the model's visible reasoning, not its answer. */
  thought?: boolean;
  /** A tool call the model made. */
  functionCall?: { name: string; args: Record<string, unknown>; id?: string };
  /** The result of a tool call, sent back to the model. */
  functionResponse?: { name: string; response: Record<string, unknown>; id?: string };
  /** Opaque signature of the model's reasoning; must be sent back with the call turn. */
  thoughtSignature?: string;
}

/** One Gemini content (a turn). */
export interface GeminiContent {
  /** Who speaks: the caller's side or the model. */
  role: "user" | "model";
  /** The turn's parts. */
  parts: GeminiPart[];
}

/** What this client remembers of a call: its `thoughtSignature` and Gemini's own id, if any. */
export interface CallMemo {
  /** The call's `thoughtSignature`, to send back with it. */
  signature?: string;
  /** Gemini's own id of the call, when it gave one. */
  wireId?: string;
}

/**
 * How {@link geminiContents} maps a context: `memo` looks calls up by tool call id,
 * `placeholderSignatures` puts {@link SKIP_SIGNATURE} on call turns with none known (Gemini 3+),
 * `onOrphan` hears of each tool result dropped because its call is not in the context.
 */
export interface ContentsOptions {
  /** Looks up what is remembered of a call by its tool call id. */
  memo?: (toolCallId: string) => CallMemo | undefined;
  /** Put {@link SKIP_SIGNATURE} on call turns with no signature known (Gemini 3+). */
  placeholderSignatures?: boolean;
  /** Hears of each tool result dropped because its call is not in the context. */
  onOrphan?: (toolCallId: string) => void;
}

/**
 * Map an {@link LlmContext}'s messages to `systemInstruction` text and Gemini contents.
 * Consecutive same-role turns are merged; a tool result finds its function name from the
 * assistant call with the same id (results without one are dropped).
 */
export function geminiContents(
  messages: readonly LlmMessage[],
  opts: ContentsOptions = {},
): { system: string; contents: GeminiContent[] } {
  const system: string[] = [];
  const contents: GeminiContent[] = [];
  const callNames = new Map<string, string>();
  const push = (role: GeminiContent["role"], parts: GeminiPart[]) => {
    if (parts.length === 0) return;
    const last = contents.at(-1);
    if (last?.role === role) last.parts.push(...parts);
    else contents.push({ role, parts });
  };
  for (const m of messages) {
    if (m.role === "system") {
      if (m.content) system.push(m.content);
    } else if (m.role === "user") {
      if (m.content) push("user", [{ text: m.content }]);
    } else if (m.role === "assistant") {
      const parts: GeminiPart[] = m.content ? [{ text: m.content }] : [];
      (m.toolCalls ?? []).forEach((c, i) => {
        callNames.set(c.toolCallId, c.functionName);
        const memo = opts.memo?.(c.toolCallId);
        const part: GeminiPart = { functionCall: { name: c.functionName, args: c.arguments } };
        if (memo?.wireId) part.functionCall!.id = memo.wireId;
        // Parallel calls: only the first carries a signature.
        const signature = memo?.signature ??
          (i === 0 && opts.placeholderSignatures ? SKIP_SIGNATURE : undefined);
        if (signature) part.thoughtSignature = signature;
        parts.push(part);
      });
      push("model", parts);
    } else {
      const name = callNames.get(m.toolCallId);
      if (name === undefined) {
        opts.onOrphan?.(m.toolCallId);
        continue;
      }
      const response: GeminiPart["functionResponse"] = { name, response: toolResponse(m.content) };
      const wireId = opts.memo?.(m.toolCallId)?.wireId;
      if (wireId) response.id = wireId;
      push("user", [{ functionResponse: response }]);
    }
  }
  if (contents[0]?.role !== "user") {
    contents.unshift({ role: "user", parts: [{ text: CONVERSATION_START }] });
  }
  return { system: system.join("\n\n"), contents };
}

// The OpenAPI-subset Schema fields `parameters` accepts; anything else (`additionalProperties`,
// `$schema`, ...) is refused with HTTP 400 "Unknown name", so it is left out.
const SCHEMA_FIELDS = new Set(
  ("type format title description nullable enum maxItems minItems properties required " +
    "minProperties maxProperties minLength maxLength pattern example anyOf propertyOrdering " +
    "default items minimum maximum").split(" "),
);

/** A JSON schema cut down to what Gemini's `parameters` accepts. */
export function geminiSchema(schema: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (!SCHEMA_FIELDS.has(key)) continue;
    if (key === "type" && Array.isArray(value)) {
      // JSON Schema's ["string", "null"] is Gemini's {type: "string", nullable: true}.
      const types = value.filter((t) => t !== "null");
      if (types.length > 0) out.type = types[0];
      if (types.length < value.length) out.nullable = true;
    } else if (key === "properties" && isObject(value)) {
      out.properties = Object.fromEntries(
        Object.entries(value).map(([k, v]) => [k, isObject(v) ? geminiSchema(v) : v]),
      );
    } else if (key === "items" && isObject(value)) {
      out.items = geminiSchema(value);
    } else if (key === "anyOf" && Array.isArray(value)) {
      out.anyOf = value.map((v) => isObject(v) ? geminiSchema(v) : v);
    } else {
      out[key] = value;
    }
  }
  return out;
}

/** Tool declarations as Gemini's `tools`; undefined when there are none. */
export function geminiTools(tools: readonly ToolDecl[]): Record<string, unknown>[] | undefined {
  if (tools.length === 0) return undefined;
  const functionDeclarations = tools.map((t) => {
    const decl: Record<string, unknown> = { name: t.name, description: t.description };
    const params = geminiSchema(t.params);
    // An OBJECT schema with no properties is refused ("properties: should be non-empty").
    if (isObject(params.properties) && Object.keys(params.properties).length > 0) {
      decl.parameters = params;
    }
    return decl;
  });
  return [{ functionDeclarations }];
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/** A tool result as the JSON object `functionResponse.response` must be. */
function toolResponse(content: string): Record<string, unknown> {
  let value: unknown = content;
  try {
    value = JSON.parse(content);
  } catch { /* plain text result */ }
  if (isObject(value)) return value;
  // Google's convention for a non-object result is an `output` field.
  return { output: value };
}

/** True for model ids of generation 3 and later (they require thought signatures). */
export function needsThoughtSignatures(model: string): boolean {
  const m = /^(?:models\/)?gemini-(\d+)/.exec(model);
  return m !== null && Number(m[1]) >= 3;
}

/** Gemini's usage counters. */
type UsageMetadata = Partial<Record<UsageField, number>>;
type UsageField = `${"prompt" | "candidates" | "total" | "cachedContent" | "thoughts"}TokenCount`;

/**
 * Where a Gemini-wire client posts and how it authenticates, for services that speak the same
 * generateContent wire behind another URL and credential (Vertex AI).
 */
export interface GeminiEndpoint {
  /** The full `...:streamGenerateContent?alt=sse` URL. */
  url: string;
  /** The auth headers of one request (e.g. a fresh OAuth bearer). */
  headers(signal?: AbortSignal): Promise<Record<string, string>>;
  /** The service refused those headers (HTTP 401/403). */
  refused?(): void;
}

/** Gemini generateContent language-model client (see the module doc). */
export class GeminiLlm implements LlmService {
  readonly #provider: string;
  readonly #url: string;
  readonly #apiKey: string | undefined;
  readonly #model: string;
  readonly #options: Record<string, unknown>;
  readonly #http: ProviderFetchOptions;
  readonly #log: Logger;
  readonly #endpoint: GeminiEndpoint | undefined;
  readonly #calls = new Map<string, CallMemo>();
  #callSeq = 0;
  #tools: ToolDecl[] = [];

  /** Build a client from service options (see {@link createGeminiLlm}); `endpoint` replaces URL and key. */
  constructor(opts: ServiceOptions, endpoint?: GeminiEndpoint) {
    this.#endpoint = endpoint;
    this.#provider = opts.provider;
    const base = (opts.baseUrl || GEMINI_DEFAULT_BASE_URL).replace(/\/+$/, "");
    this.#model = (opts.model || GEMINI_DEFAULT_MODEL).replace(/^models\//, "");
    const path = `/v1beta/models/${encodeURIComponent(this.#model)}:streamGenerateContent`;
    this.#url = endpoint?.url ?? `${base}${path}?alt=sse`;
    this.#apiKey = opts.apiKey || undefined;
    this.#options = opts.options ?? {};
    this.#http = { timeoutMs: opts.timeoutMs, fetch: opts.fetch ?? fetch };
    this.#log = opts.logger ?? silentLogger;
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
    const { system, contents } = geminiContents(context.messages, {
      memo: (id) => this.#calls.get(id),
      placeholderSignatures: needsThoughtSignatures(this.#model),
      onOrphan: (id) =>
        this.#log.warn(`${this.#provider}: dropped a tool result with no tool call`, { id }),
    });
    const body: Record<string, unknown> = {};
    if (system) body.systemInstruction = { parts: [{ text: system }] };
    body.contents = contents;
    const tools = geminiTools(context.tools.length > 0 ? context.tools : this.#tools);
    if (tools) body.tools = tools;
    const config = this.#generationConfig();
    if (Object.keys(config).length > 0) body.generationConfig = config;
    return body;
  }

  /** LlmResponseStart, LlmText..., FunctionCallsStarted?, Metrics?, LlmResponseEnd. */
  async *runLlm(context: LlmContext, signal?: AbortSignal): AsyncGenerator<Frame> {
    const res = await this.#post(JSON.stringify(this.requestBody(context)), signal);
    if (!res.body) throw new FlowcatError("protocol", `${this.#provider}: empty response body`);
    yield makeFrame("LlmResponseStart", {});
    const calls: FunctionCall[] = [];
    let usage: UsageMetadata | undefined;
    // Google ends every reply with a candidate's finishReason (or a promptFeedback block): a
    // stream that closes without one was cut, and its text must not pass for a whole answer.
    let finished = false;
    for await (const ev of readSse(res.body, signal)) {
      const chunk = this.#parse(ev.data);
      if (chunk.error) throw this.#streamError(chunk.error);
      if (chunk.usageMetadata) usage = chunk.usageMetadata as UsageMetadata;
      const blocked = (chunk.promptFeedback as { blockReason?: string } | undefined)?.blockReason;
      if (blocked) {
        finished = true;
        this.#log.warn(`${this.#provider}: prompt blocked`, { reason: blocked });
      }
      const candidate = (chunk.candidates as Record<string, unknown>[] | undefined)?.[0];
      const parts = (candidate?.content as { parts?: GeminiPart[] } | undefined)?.parts ?? [];
      for (const part of parts) {
        if (part.thought) continue; // thought summaries are not for the caller's ears
        if (typeof part.text === "string" && part.text) {
          yield makeFrame("LlmText", { text: part.text });
        }
        if (part.functionCall) calls.push(this.#toCall(part));
      }
      const finish = candidate?.finishReason;
      if (typeof finish === "string") finished = true;
      if (typeof finish === "string" && finish !== "STOP" && finish !== "MAX_TOKENS") {
        this.#log.warn(`${this.#provider}: reply ended early`, { finishReason: finish });
      }
    }
    if (signal?.aborted) return;
    if (!finished) {
      throw new FlowcatError(
        "closed",
        `${this.#provider}: the reply stream ended before it finished`,
      );
    }
    if (calls.length > 0) yield makeFrame("FunctionCallsStarted", { calls });
    const tokens = usage && usageTokens(usage);
    if (tokens) {
      yield makeFrame("Metrics", {
        data: [{ type: "llm_usage", processor: this.#provider, model: this.#model, tokens }],
      });
    }
    yield makeFrame("LlmResponseEnd", {});
  }

  /** generationConfig from the config's options (snake_case there, camelCase on the wire). */
  #generationConfig(): Record<string, unknown> {
    const o = this.#options;
    const pick = (pairs: [string, unknown][]) =>
      Object.fromEntries(pairs.filter(([, v]) => v !== undefined));
    const thinking = pick([["thinkingLevel", o.thinking_level]]);
    if (o.thinking_budget !== undefined) thinking.thinkingBudget = o.thinking_budget;
    return pick([
      ["temperature", o.temperature],
      ["maxOutputTokens", o.max_tokens ?? o.maxOutputTokens],
      ["topP", o.top_p],
      ["topK", o.top_k],
      ["thinkingConfig", Object.keys(thinking).length > 0 ? thinking : undefined],
    ]);
  }

  async #post(body: string, signal: AbortSignal | undefined): Promise<Response> {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (this.#endpoint) Object.assign(headers, await this.#endpoint.headers(signal));
    else if (this.#apiKey) headers["x-goog-api-key"] = this.#apiKey;
    const init = { method: "POST", headers, body };
    try {
      return await providerFetch(this.#provider, this.#url, init, { ...this.#http, signal });
    } catch (err) {
      if (!(err instanceof FlowcatError)) throw err;
      if (err.kind === "auth") this.#endpoint?.refused?.();
      const badKey = err.kind === "protocol" &&
        /API key not valid|API_KEY_INVALID/.test(err.message);
      const message = this.#apiKey
        ? err.message.replaceAll(this.#apiKey, "[redacted]")
        : err.message;
      if (!badKey && message === err.message) throw err;
      throw new FlowcatError(badKey ? "auth" : err.kind, message);
    }
  }

  #parse(data: string): Record<string, unknown> {
    let v: unknown;
    try {
      v = JSON.parse(data);
    } catch { /* reported below */ }
    if (isObject(v)) return v;
    throw new FlowcatError("protocol", `${this.#provider}: malformed stream chunk`);
  }

  #streamError(error: unknown): FlowcatError {
    const e = error as { code?: unknown; status?: unknown; message?: unknown };
    const status = typeof e.status === "string" ? e.status : String(e.code ?? "error");
    let message = typeof e.message === "string" ? e.message : "stream error";
    if (this.#apiKey) message = message.replaceAll(this.#apiKey, "[redacted]");
    const auth = e.code === 401 || e.code === 403 ||
      /^(UNAUTHENTICATED|PERMISSION_DENIED)$/.test(status);
    return new FlowcatError(auth ? "auth" : "protocol", `${this.#provider}: ${status}: ${message}`);
  }

  #toCall(part: GeminiPart): FunctionCall {
    const fc = part.functionCall!;
    const toolCallId = fc.id || `call_${++this.#callSeq}`;
    const memo: CallMemo = {};
    if (part.thoughtSignature) memo.signature = part.thoughtSignature;
    if (fc.id) memo.wireId = fc.id;
    this.#calls.set(toolCallId, memo);
    const args = fc.args ?? {};
    if (!isObject(args)) {
      throw new FlowcatError("protocol", `${this.#provider}: ${fc.name}: bad args`);
    }
    return { toolCallId, functionName: fc.name, arguments: args };
  }
}

/** Token usage in Flowcat's terms (thinking tokens count as completion, as OpenAI counts them). */
function usageTokens(u: UsageMetadata): LlmTokenUsage | undefined {
  if (u.promptTokenCount === undefined && u.candidatesTokenCount === undefined) return undefined;
  const prompt = u.promptTokenCount ?? 0;
  const thoughts = u.thoughtsTokenCount ?? 0;
  const completion = (u.candidatesTokenCount ?? 0) + thoughts;
  const tokens: LlmTokenUsage = {
    promptTokens: prompt,
    completionTokens: completion,
    totalTokens: u.totalTokenCount ?? prompt + completion,
  };
  if (u.cachedContentTokenCount) tokens.cacheReadInputTokens = u.cachedContentTokenCount;
  if (thoughts) tokens.reasoningTokens = thoughts;
  return tokens;
}

/** Make a Gemini generateContent client from service options. */
export function createGeminiLlm(opts: ServiceOptions): GeminiLlm {
  return new GeminiLlm(opts);
}
