/**
 * The three programs `deno task compile` and `deno task dist` ship (agent server, demo tool,
 * reference brain) with the permission flags each runs under. The server's flags come from
 * {@link permissionFlags} (what `--print-permissions` prints) for the chosen config; the paths in
 * them are then mapped to where the files live in the shipped layout.
 * @module
 */

import { errorMessage } from "../core/errors.ts";
import { BRAIN_HOST, BRAIN_PORT, DEFAULT_GRAPH } from "../server/brain_server.ts";
import { formatConfigProblems, loadConfig } from "../server/config.ts";
import type { AgentServerConfig } from "../server/config_types.ts";
import { implementationReads } from "../server/main.ts";
import { permissionFlags, SERVER_ENTRY } from "../server/permissions.ts";
import { ToolInputError } from "./tool_error.ts";

/** Name of a shipped program. */
export type EntryName = "server" | "demo" | "brain";

/** One shipped program: its module, the flags it runs under, the arguments baked in. */
export interface EntryPoint {
  name: EntryName;
  /** Entry module, project-relative. */
  module: string;
  /** `--allow-*` / `--ignore-env` flags. */
  flags: string[];
  /** Arguments always passed to the program (e.g. `--config`). */
  args: string[];
}

/**
 * Where a project-relative path the program reads or writes lives once shipped; `undefined`
 * drops the grant (the file is embedded in the executable and readable without one).
 */
export type PathMap = (path: string) => string | undefined;

/** Flags with path lists whose entries a {@link PathMap} rewrites. */
const PATH_FLAGS = ["--allow-read", "--allow-write"];

/** Rewrite the path lists of `--allow-read` / `--allow-write` through `map`. */
export function mapPathFlags(flags: readonly string[], map: PathMap): string[] {
  const out: string[] = [];
  for (const flag of flags) {
    const eq = flag.indexOf("=");
    const name = eq < 0 ? flag : flag.slice(0, eq);
    if (eq < 0 || !PATH_FLAGS.includes(name)) {
      out.push(flag);
      continue;
    }
    const paths = flag.slice(eq + 1).split(",").map(map).filter((p) => p !== undefined);
    if (paths.length > 0) out.push(`${name}=${[...new Set(paths)].join(",")}`);
  }
  return out;
}

/** The agent server for `config` (loaded from `configPath`), paths mapped by `map`. */
export function serverEntry(
  config: AgentServerConfig,
  configPath: string,
  map: PathMap,
): EntryPoint {
  // `--workers N` is chosen when the program runs: each worker's guard hop must be allowed.
  const flags = permissionFlags(config, {
    configPath,
    extraRead: implementationReads(config),
    workers: "any",
  });
  const shippedConfig = map(configPath) ?? configPath;
  return {
    name: "server",
    module: SERVER_ENTRY,
    flags: mapPathFlags(flags, map),
    args: ["--config", shippedConfig],
  };
}

/** Module of the demo tool. */
export const DEMO_ENTRY = "demo/main.ts";
/** Module of the reference brain. */
export const BRAIN_ENTRY = "server/brain_server.ts";

/** The demo tool: loopback sockets only (the ws-echo demo), no files. */
export function demoEntry(): EntryPoint {
  return {
    name: "demo",
    module: DEMO_ENTRY,
    flags: ["--allow-net=127.0.0.1,localhost", "--allow-env=FLOWCAT_LOG,NO_COLOR", "--ignore-env"],
    args: [],
  };
}

/** The reference brain serving `graph` (project-relative), paths mapped by `map`. */
export function brainEntry(map: PathMap, graph: string = DEFAULT_GRAPH): EntryPoint {
  const shipped = map(graph) ?? graph;
  return {
    name: "brain",
    module: BRAIN_ENTRY,
    // npm:yaml reads LOG_TOKENS/LOG_STREAM while parsing: they read as unset instead of failing.
    flags: [
      `--allow-net=${BRAIN_HOST}:${BRAIN_PORT}`,
      `--allow-read=${shipped}`,
      "--ignore-env=LOG_TOKENS,LOG_STREAM",
    ],
    args: ["--graph", shipped],
  };
}

/** Load the agent config a build is for; every problem in one {@link ToolInputError}. */
export async function loadBuildConfig(path: string): Promise<AgentServerConfig> {
  let loaded;
  try {
    loaded = await loadConfig(path);
  } catch (err) {
    throw new ToolInputError(`cannot load ${path}: ${errorMessage(err)}`);
  }
  if (!loaded.ok) throw new ToolInputError(formatConfigProblems(loaded.problems, path));
  return loaded.config;
}
