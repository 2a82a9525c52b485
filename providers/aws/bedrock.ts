/**
 * Amazon Bedrock language models through `ConverseStream`
 * (`POST https://bedrock-runtime.<region>.amazonaws.com/model/<modelId>/converse-stream`),
 * signed with SigV4 (signing name `bedrock`). The answer is an event stream
 * (`application/vnd.amazon.eventstream`) whose messages carry `:event-type` `messageStart`,
 * `contentBlockStart` (a `toolUse` block's id and name), `contentBlockDelta` (`delta.text`, or
 * `delta.toolUse.input` fragments of a tool's JSON input), `contentBlockStop`, `messageStop`
 * (`stopReason`) and `metadata` (`usage`, `metrics.latencyMs`); a failure mid-stream is an
 * `exception` message (`throttlingException`, `modelStreamErrorException`, ...). Wire shapes:
 * bedrock_wire.ts and docs/providers/aws.md.
 *
 * @example
 * ```ts
 * import { createBedrockLlm } from "@flowcat/flowcat/llm/bedrock";
 * declare const id: string, secret: string;
 * const llm = createBedrockLlm({
 *   provider: "bedrock",
 *   credentials: { AWS_ACCESS_KEY_ID: id, AWS_SECRET_ACCESS_KEY: secret, AWS_REGION: "us-east-1" },
 * });
 * for await (const f of llm.runLlm({ messages: [{ role: "user", content: "Hi" }], tools: [] })) {
 *   if (f.kind === "LlmText") console.log(f.text);
 * }
 * ```
 *
 * Permissions: `--allow-net=bedrock-runtime.<region>.amazonaws.com:443` (or the `url` given).
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import {
  type Frame,
  type FunctionCall,
  type LlmContext,
  makeFrame,
  type StartParams,
  type ToolDecl,
} from "../../core/frames.ts";
import { type Logger, silentLogger } from "../../core/log.ts";
import type { LlmService } from "../../core/seams.ts";
import type { ServiceOptions } from "../service_options.ts";
import { positiveOption } from "../tts/_shared.ts";
import {
  converseMessages,
  converseTools,
  type ConverseUsage,
  converseUsage,
} from "./bedrock_wire.ts";
import { type AwsAccess, awsAccess, BEDROCK, BEDROCK_DEFAULT_MODEL } from "./defaults.ts";
import { headerString, readEventStream } from "./event_stream.ts";
import { eventStreamError, signedPost } from "./signed_http.ts";

export type { ServiceOptions } from "../service_options.ts";

/** `inferenceConfig` fields taken from the provider options (snake case in the config). */
const INFERENCE_OPTIONS = {
  max_tokens: "maxTokens",
  temperature: "temperature",
  top_p: "topP",
  stop_sequences: "stopSequences",
} as const;

/** A tool-use block being streamed. */
interface OpenToolUse {
  id: string;
  name: string;
  json: string;
}

/** Bedrock ConverseStream client; one per call (see the module doc). */
export class BedrockLlm implements LlmService {
  readonly #provider: string;
  readonly #access: AwsAccess;
  readonly #base: string;
  readonly #model: string;
  readonly #options: Record<string, unknown>;
  readonly #opts: ServiceOptions;
  readonly #log: Logger;
  #tools: ToolDecl[] = [];

  /** Build a client; missing credentials or a bad region are `config` errors. */
  constructor(opts: ServiceOptions) {
    this.#provider = opts.provider;
    this.#access = awsAccess(opts);
    this.#base = (opts.baseUrl || `https://${BEDROCK.host(this.#access.region)}`)
      .replace(/:443$/, "").replace(/\/+$/, "");
    this.#model = opts.model || BEDROCK_DEFAULT_MODEL;
    this.#options = opts.options ?? {};
    this.#opts = opts;
    this.#log = opts.logger ?? silentLogger;
    positiveOption(this.#provider, this.#options, "max_tokens", true);
  }

  /** The provider's name as configured. */
  name(): string {
    return this.#provider;
  }

  /** Nothing to open: each turn is one HTTP request. */
  async start(_params: StartParams): Promise<void> {}

  /** Tools offered when the context carries none. */
  setTools(tools: ToolDecl[]): void {
    this.#tools = [...tools];
  }

  /** The `ConverseStream` request body for `context` (exposed for tests). */
  requestBody(context: LlmContext): Record<string, unknown> {
    const { system, messages } = converseMessages(
      context.messages,
      (id) => this.#log.warn(`${this.#provider}: dropped a tool result with no tool call`, { id }),
    );
    const body: Record<string, unknown> = { messages };
    if (system.length > 0) body.system = system;
    const inference: Record<string, unknown> = {};
    for (const [from, to] of Object.entries(INFERENCE_OPTIONS)) {
      if (this.#options[from] !== undefined) inference[to] = this.#options[from];
    }
    if (Object.keys(inference).length > 0) body.inferenceConfig = inference;
    const tools = context.tools.length > 0 ? context.tools : this.#tools;
    if (tools.length > 0) body.toolConfig = { tools: converseTools(tools) };
    return body;
  }

  /** The request URL: the model id is one path segment, percent-encoded (`:` as `%3A`). */
  url(): URL {
    return new URL(`${this.#base}/model/${encodeURIComponent(this.#model)}/converse-stream`);
  }

  /** LlmResponseStart, LlmText..., FunctionCallsStarted?, Metrics?, LlmResponseEnd. */
  async *runLlm(context: LlmContext, signal?: AbortSignal): AsyncGenerator<Frame> {
    const res = await signedPost(this.url(), JSON.stringify(this.requestBody(context)), {
      provider: this.#provider,
      service: BEDROCK,
      access: this.#access,
      timeoutMs: this.#opts.timeoutMs,
      signal,
      fetch: this.#opts.fetch,
      headers: { accept: "application/vnd.amazon.eventstream" },
    });
    if (!res.body) throw new FlowcatError("protocol", `${this.#provider}: empty response body`);
    yield makeFrame("LlmResponseStart", {});
    const open = new Map<number, OpenToolUse>();
    const calls: FunctionCall[] = [];
    let usage: ConverseUsage | undefined;
    let stopped = false;
    for await (const msg of readEventStream(res.body, signal, this.#provider)) {
      const err = eventStreamError(this.#provider, msg);
      if (err) throw err;
      const type = headerString(msg, ":event-type");
      const data = this.#json(msg.payload);
      const index = typeof data.contentBlockIndex === "number" ? data.contentBlockIndex : 0;
      if (type === "contentBlockStart") {
        const tool = (data.start as { toolUse?: { toolUseId?: unknown; name?: unknown } })
          ?.toolUse;
        if (tool) {
          open.set(index, { id: String(tool.toolUseId), name: String(tool.name), json: "" });
        }
      } else if (type === "contentBlockDelta") {
        const delta = data.delta as { text?: unknown; toolUse?: { input?: unknown } } | undefined;
        if (typeof delta?.text === "string" && delta.text) {
          yield makeFrame("LlmText", { text: delta.text });
        } else if (typeof delta?.toolUse?.input === "string") {
          const block = open.get(index);
          if (block) block.json += delta.toolUse.input;
        }
      } else if (type === "contentBlockStop") {
        const block = open.get(index);
        open.delete(index);
        if (block) calls.push(this.#toCall(block));
      } else if (type === "messageStop") {
        stopped = true;
        if (data.stopReason === "max_tokens") this.#log.warn(`${this.#provider}: reply cut short`);
      } else if (type === "metadata") {
        usage = data.usage as ConverseUsage | undefined;
      }
      // messageStart and unknown (future) events carry nothing Flowcat uses.
    }
    if (signal?.aborted) return;
    if (!stopped) {
      throw new FlowcatError("closed", `${this.#provider}: stream ended before messageStop`);
    }
    if (calls.length > 0) yield makeFrame("FunctionCallsStarted", { calls });
    const tokens = converseUsage(usage);
    if (tokens) {
      yield makeFrame("Metrics", {
        data: [{ type: "llm_usage", processor: this.#provider, model: this.#model, tokens }],
      });
    }
    yield makeFrame("LlmResponseEnd", {});
  }

  #json(payload: Uint8Array): Record<string, unknown> {
    try {
      const v = JSON.parse(new TextDecoder().decode(payload));
      if (v && typeof v === "object" && !Array.isArray(v)) return v as Record<string, unknown>;
    } catch { /* reported below */ }
    throw new FlowcatError("protocol", `${this.#provider}: malformed stream event`);
  }

  #toCall(block: OpenToolUse): FunctionCall {
    let input: unknown;
    try {
      input = block.json.trim() === "" ? {} : JSON.parse(block.json);
    } catch { /* reported below */ }
    if (!input || typeof input !== "object" || Array.isArray(input)) {
      throw new FlowcatError("protocol", `${this.#provider}: tool ${block.name}: bad input JSON`);
    }
    return {
      toolCallId: block.id,
      functionName: block.name,
      arguments: input as Record<string, unknown>,
    };
  }
}

/** Make a Bedrock ConverseStream client from service options. */
export function createBedrockLlm(opts: ServiceOptions): BedrockLlm {
  return new BedrockLlm(opts);
}
