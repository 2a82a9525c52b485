/**
 * Reference remote-brain server: serves one graph spec over the remote-brain HTTP contract
 * (`POST /session`, `POST /tool-call`; docs/remote-brain.md) with a {@link GraphBrain}.
 *
 * It keeps no session state: `/tool-call` carries `node_id` and `collected_vars`, and the brain
 * is rebuilt from them per request ({@link GraphBrain.at}). Seed variables sent at `/session` in
 * `brain_config.variables` come back in `collected_vars`, so they travel with the call too.
 *
 * Run (npm:yaml reads LOG_TOKENS/LOG_STREAM while parsing, hence `--ignore-env`):
 * ```sh
 * deno run --allow-net=127.0.0.1:8080 --allow-read=. --ignore-env=LOG_TOKENS,LOG_STREAM \
 *   server/brain_server.ts [--graph examples/graph.yaml] [--port 8080]
 * ```
 *
 * Permissions: `--allow-net=<listen address>` and `--allow-read` of the graph file.
 *
 * @example
 * ```ts
 * import { serveBrain } from "@flowcat/flowcat/brain-server";
 * import { parseGraphSpec } from "@flowcat/flowcat/agent";
 * const parsed = parseGraphSpec(await Deno.readTextFile("examples/graph.yaml"));
 * if (parsed.ok) serveBrain({ spec: parsed.spec, port: 0 });
 * ```
 * @module
 */

/** Port the reference brain listens on. */
export const BRAIN_PORT = 8080;
/** Address the reference brain listens on (loopback only). */
export const BRAIN_HOST = "127.0.0.1";
/** Largest request body accepted, in bytes; larger ones get 413. */
export const MAX_BODY_BYTES = 64 * 1024;
/** Graph served when `--graph` is not given. */
export const DEFAULT_GRAPH = "examples/graph.yaml";

import { readCapped } from "../core/read_capped.ts";
import { parseArgs } from "node:util";
import { extname } from "node:path";
import {
  actionToWire,
  formatPath,
  GraphBrain,
  type GraphSpec,
  parseGraphSpec,
  type Problem,
  sessionRequestSchema,
  type SessionResponse,
  toolCallRequestSchema,
  zodProblems,
} from "../core/agent/mod.ts";
import { errorMessage } from "../core/errors.ts";
import { consoleLogger, type Logger, silentLogger } from "../core/log.ts";

/** A reply before it becomes a Response: status and JSON body. */
export interface Reply {
  /** HTTP status code. */
  status: number;
  /** Body, sent as JSON. */
  body: unknown;
  /** Extra response headers (Content-Type is always JSON). */
  headers?: Record<string, string>;
}

/** The JSON error body every non-2xx reply carries. */
export interface ErrorBody {
  /** What went wrong, one line. */
  error: string;
  /** Problems found, each with its path (`nodes[2].id`; empty for the root) and message. */
  issues: { path: string; message: string }[];
}

function fail(status: number, error: string, issues: readonly Problem[] = []): Reply {
  const body: ErrorBody = {
    error,
    issues: issues.map((p) => ({ path: p.path, message: p.message })),
  };
  return { status, body };
}

// ---------------------------------------------------------------- pure handlers

/**
 * `POST /session`: the start node's prompt and tools. `brain_config.variables` (optional object)
 * seeds declared variables and is echoed as `collected_vars`.
 */
export function sessionReply(spec: GraphSpec, body: unknown): Reply {
  const req = sessionRequestSchema.safeParse(body);
  if (!req.success) return fail(400, "invalid /session request", zodProblems(req.error));
  const seeds = req.data.brain_config.variables;
  const issues: Problem[] = [];
  let vars: Record<string, unknown> = {};
  if (seeds !== undefined) {
    if (typeof seeds !== "object" || seeds === null || Array.isArray(seeds)) {
      issues.push({
        path: "brain_config.variables",
        message: "expected an object of variable values",
      });
    } else {
      vars = { ...seeds as Record<string, unknown> };
      for (const name of Object.keys(vars)) {
        if (!Object.hasOwn(spec.variables, name)) {
          issues.push({
            path: formatPath(["brain_config", "variables", name]),
            message: `unknown variable "${name}"`,
          });
        }
      }
    }
  }
  if (issues.length > 0) return fail(400, "invalid /session request", issues);
  const brain = new GraphBrain(spec, { vars });
  const reply: SessionResponse = {
    system_prompt: brain.systemPrompt(),
    tools: brain.tools(),
    node_id: brain.currentNodeId(),
    collected_vars: brain.collectedVars(),
  };
  return { status: 200, body: reply };
}

/** `POST /tool-call`: rebuild the brain at `node_id`, apply the call, encode the action. */
export function toolCallReply(spec: GraphSpec, body: unknown): Reply {
  const req = toolCallRequestSchema.safeParse(body);
  if (!req.success) return fail(400, "invalid /tool-call request", zodProblems(req.error));
  const { node_id, tool, collected_vars } = req.data;
  if (!spec.nodes.some((n) => n.id === node_id)) {
    return fail(400, "invalid /tool-call request", [{
      path: "node_id",
      message: `unknown node "${node_id}"`,
    }]);
  }
  const brain = GraphBrain.at(spec, node_id, collected_vars);
  const action = brain.onToolCall(tool.name, tool.args);
  return { status: 200, body: actionToWire(action, brain.currentNodeId(), brain.collectedVars()) };
}

/** `GET /health`: liveness. */
export function healthReply(spec: GraphSpec): Reply {
  return { status: 200, body: { ok: true, nodes: spec.nodes.length } };
}

// ---------------------------------------------------------------- routing

interface Route {
  pattern: URLPattern;
  method: "GET" | "POST";
  /** True when the handler takes a JSON body. */
  json: boolean;
  handle: (spec: GraphSpec, body: unknown) => Reply;
}

const ROUTES: readonly Route[] = [
  {
    pattern: new URLPattern({ pathname: "/session" }),
    method: "POST",
    json: true,
    handle: sessionReply,
  },
  {
    pattern: new URLPattern({ pathname: "/tool-call" }),
    method: "POST",
    json: true,
    handle: toolCallReply,
  },
  {
    pattern: new URLPattern({ pathname: "/health" }),
    method: "GET",
    json: false,
    handle: healthReply,
  },
];

function respond(reply: Reply): Response {
  return new Response(JSON.stringify(reply.body), {
    status: reply.status,
    headers: { ...reply.headers, "content-type": "application/json; charset=utf-8" },
  });
}

/** Options of {@link createBrainHandler}. */
export interface BrainHandlerOptions {
  /** Largest request body in bytes (default {@link MAX_BODY_BYTES}). */
  maxBodyBytes?: number;
  /** Where internal errors are logged (default: silent). */
  logger?: Logger;
}

/**
 * A `Deno.serve` handler serving `spec`: 404 for unknown paths, 405 for a wrong method, 415 for
 * a non-JSON content type, 413 for a body over the limit, 400 for bad JSON or a body out of
 * contract; every error body is JSON `{error, issues: [{path, message}]}`.
 *
 * @example
 * ```ts
 * import { createBrainHandler } from "@flowcat/flowcat/brain-server";
 * import type { GraphSpec } from "@flowcat/flowcat/agent";
 * declare const spec: GraphSpec;
 * const server = Deno.serve({ hostname: "127.0.0.1", port: 0 }, createBrainHandler(spec));
 * ```
 */
export function createBrainHandler(
  spec: GraphSpec,
  options: BrainHandlerOptions = {},
): (req: Request) => Promise<Response> {
  const max = options.maxBodyBytes ?? MAX_BODY_BYTES;
  const log = options.logger ?? silentLogger;
  return async (req) => {
    const matching = ROUTES.filter((r) => r.pattern.test(req.url));
    if (matching.length === 0) {
      return respond(fail(404, `no route for ${new URL(req.url).pathname}`));
    }
    const route = matching.find((r) => r.method === req.method);
    if (!route) {
      const allow = matching.map((r) => r.method).join(", ");
      return respond({
        ...fail(405, `method ${req.method} not allowed; use ${allow}`),
        headers: { allow },
      });
    }
    try {
      if (!route.json) return respond(route.handle(spec, undefined));
      const type = req.headers.get("content-type") ?? "";
      if (!/^application\/json\b/i.test(type)) {
        return respond(fail(415, "content-type must be application/json"));
      }
      if (Number(req.headers.get("content-length") ?? "0") > max) {
        return respond(fail(413, `body exceeds ${max} bytes`));
      }
      const bytes = await readCapped(req.body, max);
      if (!bytes) return respond(fail(413, `body exceeds ${max} bytes`));
      let body: unknown;
      try {
        body = JSON.parse(new TextDecoder().decode(bytes));
      } catch (err) {
        return respond(
          fail(400, "body is not valid JSON", [{ path: "", message: errorMessage(err) }]),
        );
      }
      return respond(route.handle(spec, body));
    } catch (err) {
      log.error("brain request failed", {
        path: new URL(req.url).pathname,
        error: errorMessage(err),
      });
      return respond(fail(500, "internal error"));
    }
  };
}

/** Options of {@link serveBrain}. */
export interface ServeBrainOptions extends BrainHandlerOptions {
  /** The graph spec to serve. */
  spec: GraphSpec;
  /** Default {@link BRAIN_PORT}; 0 picks a free port. */
  port?: number;
  /** Default {@link BRAIN_HOST}. */
  hostname?: string;
  /** Aborting it shuts the server down. */
  signal?: AbortSignal;
  /** Called once listening (default: silent). */
  onListen?: (addr: Deno.NetAddr) => void;
}

/**
 * Serve `spec` over HTTP. Returns the server (`server.addr.port`, `await server.shutdown()`).
 *
 * @example
 * ```ts
 * import { serveBrain } from "@flowcat/flowcat/brain-server";
 * import type { GraphSpec } from "@flowcat/flowcat/agent";
 * declare const spec: GraphSpec;
 * const server = serveBrain({ spec, port: 0 });
 * console.log(`brain on http://127.0.0.1:${server.addr.port}`);
 * ```
 */
export function serveBrain(options: ServeBrainOptions): Deno.HttpServer<Deno.NetAddr> {
  return Deno.serve({
    hostname: options.hostname ?? BRAIN_HOST,
    port: options.port ?? BRAIN_PORT,
    signal: options.signal,
    onListen: options.onListen ?? (() => {}),
  }, createBrainHandler(options.spec, options));
}

// ---------------------------------------------------------------- command line

/** Usage text printed by `--help`. */
export const USAGE = `Flowcat reference brain server (remote-brain HTTP contract)

usage: deno run --allow-net=${BRAIN_HOST}:${BRAIN_PORT} --allow-read=. --ignore-env=LOG_TOKENS,LOG_STREAM \\
         server/brain_server.ts [--graph FILE] [--port N]

  --graph FILE  graph spec to serve, YAML or JSON (default ${DEFAULT_GRAPH})
  --port N      port on ${BRAIN_HOST} (default ${BRAIN_PORT}; --allow-net must name it)
  -h, --help    print this help

routes: POST /session, POST /tool-call, GET /health (see docs/remote-brain.md)`;

/** Where {@link main} writes. */
export interface MainIo {
  /** Print a line to standard output. */
  out(line: string): void;
  /** Print a line to standard error. */
  err(line: string): void;
}

const consoleIo: MainIo = { out: (l) => console.log(l), err: (l) => console.error(l) };

/**
 * Command-line entry point; resolves to the exit code once the server stops (0), or at once
 * for `--help` (0) and for bad arguments or a bad graph file (2, every problem printed).
 */
export async function main(
  args: string[],
  io: MainIo = consoleIo,
  signal?: AbortSignal,
): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      options: {
        graph: { type: "string" },
        port: { type: "string" },
        help: { type: "boolean", short: "h" },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    io.err(`brain server: ${errorMessage(err)}\n\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    io.out(USAGE);
    return 0;
  }
  const port = values.port === undefined ? BRAIN_PORT : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    io.err(`brain server: --port must be an integer 0-65535, got "${values.port}"`);
    return 2;
  }
  const file = values.graph ?? DEFAULT_GRAPH;
  let text: string;
  try {
    text = await Deno.readTextFile(file);
  } catch (err) {
    io.err(`brain server: cannot read graph ${file}: ${errorMessage(err)}`);
    return 2;
  }
  const res = parseGraphSpec(text, extname(file).toLowerCase() === ".json" ? "json" : "yaml");
  if (!res.ok) {
    io.err(`brain server: ${file} is not a valid graph spec (${res.problems.length} problem(s)):`);
    for (const p of res.problems) io.err(`  ${p.path === "" ? "(root)" : p.path}: ${p.message}`);
    return 2;
  }
  let server;
  try {
    server = serveBrain({
      spec: res.spec,
      port,
      signal,
      logger: consoleLogger("info", "brain"),
      onListen: (addr) =>
        io.out(`brain server: serving ${file} on http://${addr.hostname}:${addr.port}`),
    });
  } catch (err) {
    io.err(`brain server: cannot listen on ${BRAIN_HOST}:${port}: ${errorMessage(err)}`);
    return 2;
  }
  await server.finished;
  return 0;
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
