/**
 * RemoteBrain: an {@link AgentBrain} that asks a brain server over the remote-brain HTTP
 * contract (`POST /session`, `POST /tool-call`; docs/remote-brain.md).
 *
 * - {@link RemoteBrain.connect} fails with a {@link FlowcatError} when the session cannot start:
 *   without a first prompt there is no call.
 * - Once the call runs, a failing brain never drops it: {@link RemoteBrain.onToolCall} logs the
 *   fault and returns `stay` with {@link BRAIN_UNAVAILABLE} as the tool result, so the model
 *   stays on its node and may try again.
 * - Tool calls are sent one at a time, in order, each with the node and variables left by the
 *   one before (a model may emit parallel calls).
 *
 * @example
 * ```ts
 * import { RemoteBrain } from "@flowcat/flowcat/agent";
 * const brain = await RemoteBrain.connect("http://127.0.0.1:8080", { variables: {} }, "gemini", {
 *   timeoutMs: 3000,
 *   headers: { authorization: "Bearer <BRAIN_TOKEN>" },
 * });
 * const action = await brain.onToolCall("wants_booking", {});
 * ```
 * @module
 */

import type { AgentBrain, ToolDecl } from "../seams.ts";
import { errorMessage, FlowcatError } from "../errors.ts";
import { readCapped } from "../read_capped.ts";
import { type Logger, silentLogger } from "../log.ts";
import { type Validator, zodProblems } from "./problems.ts";
import {
  actionFromWire,
  sessionResponseSchema,
  toolCallResponseSchema,
  toolsFromWire,
  type WireAction,
} from "./brain_wire.ts";

/** Default time allowed for one brain request, response body included. */
export const DEFAULT_BRAIN_TIMEOUT_MS = 5000;

/** Largest reply body accepted from a brain. */
export const MAX_BRAIN_REPLY_BYTES = 1024 * 1024;

/** Tool result given to the model when the brain cannot be reached or answers out of contract. */
export const BRAIN_UNAVAILABLE: Readonly<{ error: string }> = Object.freeze({
  error: "brain unavailable; the tool failed, stay on this node",
});

/** A `fetch`-compatible function (inject one in tests or to add a proxy or TLS client). */
export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

/**
 * Options of {@link RemoteBrain.connect} (its fourth argument; every field is optional).
 */
export interface RemoteBrainOptions {
  /** Time allowed for each request, body included, in ms. Default {@link DEFAULT_BRAIN_TIMEOUT_MS}. */
  timeoutMs?: number;
  /** Replaces the global `fetch`. */
  fetch?: FetchLike;
  /** Where brain faults are logged. Default: silent. */
  logger?: Logger;
  /** Extra request headers, e.g. `authorization: Bearer <token>`. Never logged. */
  headers?: Record<string, string>;
}

interface ResolvedOptions {
  timeoutMs: number;
  logger: Logger;
  headers: Record<string, string>;
  fetch: FetchLike;
}

interface State {
  systemPrompt: string;
  tools: ToolDecl[];
  nodeId: string;
  vars: Record<string, unknown>;
}

/** An {@link AgentBrain} backed by a remote brain server. Make one with {@link RemoteBrain.connect}. */
export class RemoteBrain implements AgentBrain {
  readonly #base: string;
  readonly #options: ResolvedOptions;
  #state: State;
  #finished = false;
  #disposition: string | undefined;
  #tail: Promise<unknown> = Promise.resolve();

  private constructor(base: string, options: ResolvedOptions, state: State) {
    this.#base = base;
    this.#options = options;
    this.#state = state;
  }

  /**
   * Start a session: `POST {baseUrl}/session` with `brain_config` and `provider`.
   * Throws a {@link FlowcatError} (`config` for a bad URL, `timeout`, `protocol` for an HTTP
   * error or a reply out of contract, `other` when the server cannot be reached).
   */
  static async connect(
    baseUrl: string | URL,
    brainConfig: Record<string, unknown>,
    provider: string,
    options: RemoteBrainOptions = {},
  ): Promise<RemoteBrain> {
    const base = normalizeBase(baseUrl);
    const opts: ResolvedOptions = {
      timeoutMs: options.timeoutMs ?? DEFAULT_BRAIN_TIMEOUT_MS,
      logger: options.logger ?? silentLogger,
      headers: { ...options.headers },
      fetch: options.fetch ?? ((input: string, init: RequestInit) => fetch(input, init)),
    };
    if (!(opts.timeoutMs > 0)) {
      throw new FlowcatError("config", "remote brain: timeoutMs must be > 0");
    }
    const body = { brain_config: brainConfig, provider };
    const reply = await postJson(base, "/session", body, sessionResponseSchema, opts);
    return new RemoteBrain(base, opts, {
      systemPrompt: reply.system_prompt,
      tools: toolsFromWire(reply.tools),
      nodeId: reply.node_id,
      vars: reply.collected_vars,
    });
  }

  /** Prompt of the current node, as the brain last gave it. */
  systemPrompt(): string {
    return this.#state.systemPrompt;
  }

  /** Tools of the current node, as the brain last gave them (a fresh array). */
  tools(): ToolDecl[] {
    return [...this.#state.tools];
  }

  /** Id of the current node. */
  currentNodeId(): string {
    return this.#state.nodeId;
  }

  /** True once the brain answered `end`. */
  isFinished(): boolean {
    return this.#finished;
  }

  /** Variables as the brain last gave them (a copy). */
  collectedVars(): Record<string, unknown> {
    return { ...this.#state.vars };
  }

  /** Disposition of the `end` answer, if any. */
  disposition(): string | undefined {
    return this.#disposition;
  }

  /** Ask the brain; never rejects (a failure is `stay` with {@link BRAIN_UNAVAILABLE}). */
  onToolCall(name: string, args: Record<string, unknown>): Promise<WireAction> {
    const run = this.#tail.then(() => this.#toolCall(name, args));
    this.#tail = run.catch(() => {});
    return run;
  }

  async #toolCall(name: string, args: Record<string, unknown>): Promise<WireAction> {
    if (this.#finished) return { type: "stay", result: { error: "the call has ended" } };
    const body = {
      node_id: this.#state.nodeId,
      tool: { name, args: args ?? {} },
      collected_vars: this.#state.vars,
    };
    let reply;
    try {
      reply = await postJson(this.#base, "/tool-call", body, toolCallResponseSchema, this.#options);
    } catch (err) {
      this.#options.logger.error("remote brain failed; staying on node", {
        tool: name,
        nodeId: this.#state.nodeId,
        error: errorMessage(err),
      });
      return { type: "stay", result: BRAIN_UNAVAILABLE };
    }
    const action = actionFromWire(reply);
    if (reply.action === "transition") {
      this.#state = {
        systemPrompt: reply.system_prompt,
        tools: action.type === "transition" ? action.tools : [],
        nodeId: reply.node_id,
        vars: reply.collected_vars,
      };
    } else {
      if (reply.collected_vars) this.#state = { ...this.#state, vars: reply.collected_vars };
      if (reply.action === "end") {
        this.#finished = true;
        this.#disposition = typeof reply.disposition === "string" ? reply.disposition : undefined;
        if (reply.node_id) this.#state = { ...this.#state, nodeId: reply.node_id };
      }
    }
    return action;
  }
}

function normalizeBase(baseUrl: string | URL): string {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new FlowcatError("config", `remote brain: invalid base URL "${String(baseUrl)}"`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new FlowcatError(
      "config",
      `remote brain: base URL must be http or https, got ${url.protocol}`,
    );
  }
  if (url.username || url.password) {
    throw new FlowcatError(
      "config",
      "remote brain: put credentials in options.headers, not in the URL",
    );
  }
  return url.origin + url.pathname.replace(/\/+$/, "");
}

async function postJson<T>(
  base: string,
  path: string,
  body: unknown,
  schema: Validator<T>,
  opts: { timeoutMs: number; headers: Record<string, string>; fetch: FetchLike },
): Promise<T> {
  const url = base + path;
  const where = `remote brain POST ${url}`;
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), opts.timeoutMs);
  // Race the abort too: an injected fetch may ignore the signal.
  let onAbort = () => {};
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(new Error("aborted"));
    ctl.signal.addEventListener("abort", onAbort, { once: true });
  });
  aborted.catch(() => {});
  let text: string;
  let status: number;
  try {
    const exchange = (async () => {
      const res = await opts.fetch(url, {
        method: "POST",
        headers: {
          ...opts.headers,
          "content-type": "application/json",
          accept: "application/json",
        },
        body: JSON.stringify(body),
        signal: ctl.signal,
      });
      return { status: res.status, text: await readReply(res, where) };
    })();
    exchange.catch(() => {}); // the loser of the race must not reject unhandled
    ({ status, text } = await Promise.race([exchange, aborted]));
  } catch (err) {
    if (ctl.signal.aborted) {
      throw new FlowcatError("timeout", `${where}: no reply within ${opts.timeoutMs} ms`, {
        cause: err,
      });
    }
    if (err instanceof FlowcatError) throw err;
    throw new FlowcatError("other", `${where}: request failed: ${errorMessage(err)}`, {
      cause: err,
    });
  } finally {
    clearTimeout(timer);
    ctl.signal.removeEventListener("abort", onAbort);
  }
  if (status < 200 || status > 299) {
    throw new FlowcatError("protocol", `${where}: HTTP ${status}: ${text.slice(0, 200)}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new FlowcatError(
      "protocol",
      `${where}: reply is not JSON: ${JSON.stringify(text.slice(0, 80))}`,
    );
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const problems = zodProblems(parsed.error).map((p) => `${p.path || "(root)"}: ${p.message}`);
    throw new FlowcatError("protocol", `${where}: reply out of contract: ${problems.join("; ")}`);
  }
  return parsed.data;
}

async function readReply(res: Response, where: string): Promise<string> {
  const declared = Number(res.headers.get("content-length") ?? "0");
  if (declared > MAX_BRAIN_REPLY_BYTES) {
    await res.body?.cancel();
    throw new FlowcatError(
      "protocol",
      `${where}: reply of ${declared} bytes exceeds ${MAX_BRAIN_REPLY_BYTES}`,
    );
  }
  const bytes = await readCapped(res.body, MAX_BRAIN_REPLY_BYTES);
  if (bytes === undefined) {
    throw new FlowcatError("protocol", `${where}: reply exceeds ${MAX_BRAIN_REPLY_BYTES} bytes`);
  }
  return new TextDecoder().decode(bytes);
}
