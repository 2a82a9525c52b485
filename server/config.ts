/**
 * The agent server config: load a YAML or JSON file, validate it with its graph, and return a
 * typed, camelCase {@link AgentServerConfig}, or every problem at once as `path: message (hint)`.
 * The server prints the problems and exits with code 2. Field reference: docs/config.md.
 * A config written in code goes through {@link parseConfig}, with the same checks.
 *
 * Permissions: {@link loadConfig} reads the config and its graph file (`--allow-read` of both)
 * and parses YAML with npm `yaml`, which reads `LOG_TOKENS` and `LOG_STREAM`
 * (`--ignore-env=LOG_TOKENS,LOG_STREAM`); {@link parseConfig} of an object needs nothing, or
 * `--allow-read` of a graph file it names.
 *
 * @example
 * ```ts
 * import { formatConfigProblems, loadConfig } from "@flowcat/flowcat/server/config";
 * const res = await loadConfig("examples/agent.yaml");
 * if (!res.ok) {
 *   console.error(formatConfigProblems(res.problems, "examples/agent.yaml"));
 *   Deno.exit(2);
 * }
 * res.config.server.port; // 6210
 * ```
 * @module
 */

import { dirname, extname } from "node:path";
import { parse as parseYaml } from "npm:yaml@^2.9.1";
import { type GraphSpec, parseGraphSpec, validateGraphSpec } from "../core/agent/graph_spec.ts";
import { formatProblems, type Problem } from "../core/agent/problems.ts";
import { templatePlaceholders, VARIABLE_NAME_RE } from "../core/agent/interpolate.ts";
import { errorMessage, FlowcatError } from "../core/errors.ts";
import { configSchema } from "./config_schema.ts";
import { configProblem, crossFieldProblems } from "./config_checks.ts";
import { schemaProblems } from "./config_issues.ts";
import { describeType, suggestionHint } from "./config_suggest.ts";
import { type AgentServerConfig, resolveFrom, toServerConfig } from "./config_types.ts";

export type * from "./config_types.ts";
export type * from "./config_document.ts";
export type {
  McpHttpServer,
  McpServerConfig,
  McpServerDocument,
  McpStdioServer,
  ToolsConfig,
  ToolsDocument,
} from "./config_tools.ts";
export { DEFAULT_MCP_TIMEOUT_MS } from "./config_tools.ts";
export { checkEnv, type EnvRequirement, requiredEnv } from "./config_env.ts";
export { DEFAULT_HOST, DEFAULT_PORT, PIPELINE_KINDS } from "./config_schema.ts";
export type { Problem };

/** Outcome of loading a config: the config (and its graph for graph agents), or all problems. */
export type ConfigResult =
  | { ok: true; config: AgentServerConfig; graph?: GraphSpec }
  | { ok: false; problems: Problem[] };

/** Text format of a config or graph file. */
export type ConfigFormat = "yaml" | "json";

/** Reads a text file (injectable for tests). */
export type ReadTextFile = (path: string) => Promise<string>;

/** Options of {@link loadConfig} and {@link parseConfigText}. */
export interface LoadConfigOptions {
  /** Replaces `Deno.readTextFile` (for the config and the graph file). */
  readFile?: ReadTextFile;
}

/** The format named by a file's extension, or undefined (then the content decides). */
export function formatOfPath(path: string): ConfigFormat | undefined {
  const ext = extname(path).toLowerCase();
  if (ext === ".yaml" || ext === ".yml") return "yaml";
  if (ext === ".json") return "json";
  return undefined;
}

function sniffFormat(text: string): ConfigFormat {
  return text.trimStart().startsWith("{") ? "json" : "yaml";
}

type Parsed = { ok: true; doc: unknown } | { ok: false; problem: Problem };

function parseText(text: string, format: ConfigFormat): Parsed {
  try {
    return { ok: true, doc: format === "json" ? JSON.parse(text) : parseYaml(text) };
  } catch (err) {
    const msg = errorMessage(err);
    if (/LOG_TOKENS|LOG_STREAM/.test(msg)) {
      const hint = "npm:yaml reads LOG_TOKENS and LOG_STREAM; run with --ignore-env";
      return { ok: false, problem: configProblem("", "cannot parse YAML here", hint) };
    }
    const pos = (err as { linePos?: { line: number; col: number }[] }).linePos?.[0];
    if (format === "yaml" && pos !== undefined) {
      const first = msg.split("\n")[0].replace(/ at line \d+, column \d+:?$/, "");
      const message = `YAML syntax error at line ${pos.line}, column ${pos.col}: ${first}`;
      return { ok: false, problem: configProblem("", message) };
    }
    const label = format === "json" ? "JSON" : "YAML";
    return {
      ok: false,
      problem: configProblem("", `${label} syntax error: ${msg.split("\n")[0]}`),
    };
  }
}

/** Why a file could not be read, in words (never a stack trace). */
async function readText(
  path: string,
  readFile: ReadTextFile,
): Promise<{ ok: true; text: string } | { ok: false; reason: string }> {
  try {
    return { ok: true, text: await readFile(path) };
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return { ok: false, reason: "not found" };
    if (err instanceof Deno.errors.IsADirectory) return { ok: false, reason: "is a directory" };
    if (err instanceof Deno.errors.NotCapable || err instanceof Deno.errors.PermissionDenied) {
      return { ok: false, reason: `not readable (run with --allow-read=${path})` };
    }
    return { ok: false, reason: errorMessage(err) };
  }
}

type GraphOutcome = { problems: Problem[]; graph?: { spec: GraphSpec; file?: string } };

/** Problem paths inside the graph, prefixed with where the graph came from. */
function prefixed(problems: readonly Problem[], prefix: string): Problem[] {
  return problems.map((p) => ({
    ...p,
    path: p.path === "" ? prefix : `${prefix}.${p.path}`,
    message: p.message.split("\n")[0].replace(/:$/, ""),
  }));
}

async function resolveGraph(
  raw: unknown,
  baseDir: string,
  readFile: ReadTextFile,
): Promise<GraphOutcome> {
  if (raw === undefined || raw === null) return { problems: [] };
  if (typeof raw === "string") {
    if (raw.trim() === "") return { problems: [configProblem("agent.graph", "must not be empty")] };
    const file = resolveFrom(baseDir, raw);
    const read = await readText(file, readFile);
    if (!read.ok) {
      const hint = `paths are relative to the config file's directory "${baseDir}"`;
      return {
        problems: [configProblem("agent.graph", `graph file "${file}" ${read.reason}`, hint)],
      };
    }
    const res = parseGraphSpec(read.text, formatOfPath(file));
    if (!res.ok) return { problems: prefixed(res.problems, `agent.graph(${file})`) };
    return { problems: [], graph: { spec: res.spec, file } };
  }
  if (typeof raw === "object" && !Array.isArray(raw)) {
    const res = validateGraphSpec(raw);
    if (!res.ok) return { problems: prefixed(res.problems, "agent.graph") };
    return { problems: [], graph: { spec: res.spec } };
  }
  const hint = "a graph file path such as graph.yaml, or an inline graph mapping";
  return { problems: [configProblem("agent.graph", `got ${describeType(raw)}`, hint)] };
}

/** Seed variables and greeting placeholders must name the graph's variables. */
function graphUseProblems(agent: Record<string, unknown>, spec: GraphSpec | undefined): Problem[] {
  const out: Problem[] = [];
  const declared = spec === undefined ? undefined : Object.keys(spec.variables);
  const vars = agent.vars;
  if (declared !== undefined && typeof vars === "object" && vars !== null) {
    for (const name of Object.keys(vars)) {
      // A malformed name is the schema's problem; an undeclared one is a likely typo.
      if (declared.includes(name) || !VARIABLE_NAME_RE.test(name)) continue;
      const hint = declared.length > 0
        ? suggestionHint(name, declared)
        : "declare it under variables: in the graph";
      out.push(
        configProblem(`agent.vars.${name}`, `the graph declares no variable "${name}"`, hint),
      );
    }
  }
  if (typeof agent.greeting !== "string") return out;
  for (const ph of templatePlaceholders(agent.greeting)) {
    if (!ph.valid) {
      out.push(
        configProblem("agent.greeting", `malformed placeholder {{${ph.name.slice(0, 40)}}}`),
      );
    } else if (declared === undefined && agent.remote !== undefined) {
      const hint = "a remote brain's greeting is spoken as written";
      out.push(configProblem("agent.greeting", `{{${ph.name}}} needs a graph agent`, hint));
    } else if (declared !== undefined && !declared.includes(ph.name)) {
      const hint = suggestionHint(ph.name, declared);
      out.push(configProblem("agent.greeting", `unknown variable {{${ph.name}}}`, hint));
    }
  }
  return out;
}

/** Problems sorted by the position of their top-level key in the document (stable). */
function inDocumentOrder(problems: Problem[], keys: readonly string[]): Problem[] {
  const rank = (p: Problem) => {
    const i = keys.indexOf(p.path.split(/[.[(]/)[0]);
    return i < 0 ? keys.length : i;
  };
  return problems.map((p, i) => ({ p, i })).sort((a, b) => rank(a.p) - rank(b.p) || a.i - b.i)
    .map((x) => x.p);
}

/**
 * Validate config text. Relative paths in it (the graph file, the recording directory) resolve
 * against `baseDir`. Without `format` the content decides (`{` first means JSON).
 */
export async function parseConfigText(
  text: string,
  format: ConfigFormat | undefined,
  baseDir: string,
  opts: LoadConfigOptions & { configFile?: string } = {},
): Promise<ConfigResult> {
  const parsed = parseText(text, format ?? sniffFormat(text));
  if (!parsed.ok) return { ok: false, problems: [parsed.problem] };
  return await validateConfigDocument(parsed.doc, baseDir, opts);
}

/**
 * Validate a parsed config document (snake_case, as the YAML file reads): the checks and
 * defaults of {@link parseConfigText}, without the text.
 */
export async function validateConfigDocument(
  doc: unknown,
  baseDir: string,
  opts: LoadConfigOptions & { configFile?: string } = {},
): Promise<ConfigResult> {
  const readFile = opts.readFile ?? ((p: string) => Deno.readTextFile(p));
  if (doc === null || doc === undefined) {
    const hint = "start from examples/agent.yaml";
    return { ok: false, problems: [configProblem("", "the config is empty", hint)] };
  }
  if (typeof doc !== "object" || Array.isArray(doc)) {
    const message = `expected a mapping of settings, got ${describeType(doc)}`;
    return { ok: false, problems: [configProblem("", message)] };
  }
  const raw = doc as Record<string, unknown>;
  const checked = configSchema.safeParse(raw);
  const problems = checked.success ? [] : schemaProblems(checked.error, raw);
  problems.push(...crossFieldProblems(raw));
  const agent = typeof raw.agent === "object" && raw.agent !== null
    ? raw.agent as Record<string, unknown>
    : {};
  const outcome = await resolveGraph(agent.graph, baseDir, readFile);
  problems.push(...outcome.problems);
  problems.push(...graphUseProblems(agent, outcome.graph?.spec));
  if (problems.length > 0 || !checked.success) {
    return { ok: false, problems: inDocumentOrder(problems, Object.keys(raw)) };
  }
  const config = toServerConfig(checked.data, baseDir, outcome.graph, opts.configFile);
  return outcome.graph === undefined
    ? { ok: true, config }
    : { ok: true, config, graph: outcome.graph.spec };
}

/** Options of {@link parseConfig}. */
export interface ParseConfigOptions extends LoadConfigOptions {
  /**
   * Directory that relative paths in the config (a graph file, the recording directory)
   * resolve against (default `"."`, the working directory).
   */
  baseDir?: string;
}

/** A config that failed validation: the message lists every problem as the server prints them. */
export class ConfigError extends FlowcatError {
  /** Every problem found, as `{ path, message, hint }`. */
  readonly problems: readonly Problem[];

  /** An error listing `problems`. */
  constructor(problems: readonly Problem[]) {
    super("config", formatConfigProblems(problems));
    this.name = "ConfigError";
    this.problems = problems;
  }
}

/**
 * Validate a config written in code, snake_case as in a YAML file (docs/config.md), and return
 * it typed, with every default filled in. The checks and messages are those of the config
 * file; a config with problems throws a {@link ConfigError} listing all of them.
 *
 * @example
 * ```ts
 * const config = await parseConfig({
 *   pipeline: "s2s",
 *   providers: { realtime: { name: "echo", options: { tts: "none" } } },
 *   agent: { graph: "graph.yaml" },
 *   server: { port: 0 },
 * }, { baseDir: "./agents" });
 * config.server.host; // "127.0.0.1"
 * ```
 */
export async function parseConfig(
  document: Record<string, unknown>,
  opts: ParseConfigOptions = {},
): Promise<AgentServerConfig> {
  const res = await validateConfigDocument(document, opts.baseDir ?? ".", opts);
  if (!res.ok) throw new ConfigError(res.problems);
  return res.config;
}

/**
 * Load and validate the config file at `path` (YAML or JSON by extension, else by content),
 * with the graph file it names. Never throws for a bad or missing file: that is a problem too.
 */
export async function loadConfig(
  path: string,
  opts: LoadConfigOptions = {},
): Promise<ConfigResult> {
  const readFile = opts.readFile ?? ((p: string) => Deno.readTextFile(p));
  const read = await readText(path, readFile);
  if (!read.ok) {
    const hint = "pass --config <YAML or JSON file>; examples/agent.yaml is a working start";
    return {
      ok: false,
      problems: [configProblem("", `config file "${path}" ${read.reason}`, hint)],
    };
  }
  return await parseConfigText(read.text, formatOfPath(path), dirname(path), {
    readFile,
    configFile: path,
  });
}

/**
 * The problems as the server prints them: a heading, then one `path: message (hint)` line each.
 *
 * @example
 * ```ts
 * formatConfigProblems([{ path: "pipline", message: 'unknown key "pipline" (did you mean "pipeline"?)' }], "agent.yaml");
 * // 'config agent.yaml: 1 problem\n  pipline: unknown key "pipline" (did you mean "pipeline"?)'
 * ```
 */
export function formatConfigProblems(problems: readonly Problem[], configFile?: string): string {
  const n = problems.length;
  const head = `config${configFile === undefined ? "" : ` ${configFile}`}: ${n} problem${
    n === 1 ? "" : "s"
  }`;
  const lines = formatProblems(problems).split("\n").map((l) => `  ${l}`);
  return [head, ...lines].join("\n");
}
