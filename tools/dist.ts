/**
 * `deno task dist`: an offline bundle directory (and a .tar.gz of it) that runs on a machine with
 * no network and no Deno installed.
 *
 * ```sh
 * deno task dist                                     # examples/agent.yaml
 * deno task dist --config my-agent.yaml --out dist/flowcat-prod
 * ```
 *
 * Layout: `bin/flowcat` (sh launcher: server|demo|brain), `lib/deno` (this Deno), `lib/*.js`
 * (`deno bundle` of each program; the playground page is part of the server's), `lib/espeak-ng.wasm`
 * (read at run time next to the bundle),
 * `config/` (the agent config, its graph, the brain's graph) and README.txt. The launcher runs
 * each program with the flags of {@link serverEntry} / {@link demoEntry} / {@link brainEntry},
 * with paths inside the bundle.
 * @module
 */

import { basename, dirname, isAbsolute, join, normalize, relative, resolve } from "node:path";
import { DEFAULT_GRAPH } from "../server/brain_server.ts";
import { DEFAULT_CONFIG, ESPEAK_WASM, implementationReads } from "../server/main.ts";
import type { AgentServerConfig } from "../server/config_types.ts";
import { copyOutside, runDeno } from "./deno_child.ts";
import {
  brainEntry,
  demoEntry,
  type EntryPoint,
  loadBuildConfig,
  type PathMap,
  serverEntry,
} from "./entry_points.ts";
import { runToolMain, ToolInputError } from "./tool_error.ts";
import { parseBuildArgs } from "./build_args.ts";
import { bundleFile, launcherScript, ROOT } from "./launcher.ts";
import { distReadme } from "./dist_readme.ts";

/** The worker module of `--workers` and where its own bundle goes (see workerModuleUrl). */
export const WORKER_MODULE = "server/worker.ts";
/** Path of the worker's bundle inside the dist directory. */
export const WORKER_BUNDLE = "lib/worker.js";

/** Where the shipped copies of project files go inside the bundle. */
export const SHIPPED: Readonly<Record<string, string>> = Object.freeze({
  [ESPEAK_WASM]: "lib/espeak-ng.wasm",
});

/** `linux-x64`-style name of this platform. */
export function platformName(): string {
  const arch = Deno.build.arch === "x86_64" ? "x64" : "arm64";
  return `${Deno.build.os}-${arch}`;
}

/** The path map of a bundle built in `out`: files under it become {@link ROOT} paths. */
export function distPathMap(out: string): PathMap {
  const root = resolve(out);
  return (p) => {
    const shipped = SHIPPED[p];
    if (shipped !== undefined) return `${ROOT}/${shipped}`;
    const rel = relative(root, resolve(p));
    return rel.startsWith("..") || isAbsolute(rel) ? p : `${ROOT}/${rel}`;
  };
}

/** The programs of a bundle in `out` whose config was copied to `configCopy`. */
export function distEntries(
  config: AgentServerConfig,
  configCopy: string,
  brainGraphCopy: string,
  out: string,
): EntryPoint[] {
  const map = distPathMap(out);
  const server = serverEntry(config, configCopy, map);
  // `--workers N` loads the worker's own bundle from beside the server's.
  const worker = `${ROOT}/${WORKER_BUNDLE}`;
  const reads = server.flags.findIndex((f) => f.startsWith("--allow-read="));
  const flags = reads < 0
    ? [...server.flags, `--allow-read=${worker}`]
    : server.flags.map((f, i) => i === reads ? `${f},${worker}` : f);
  return [{ ...server, flags }, demoEntry(), brainEntry(map, brainGraphCopy)];
}

/** Project files the bundle needs beside the scripts, for this config. */
export function runtimeFiles(config: AgentServerConfig): string[] {
  return implementationReads(config).filter((p) => SHIPPED[p] !== undefined);
}

const HELP = `Flowcat dist: an offline bundle (directory + .tar.gz)

Usage: deno task dist [--config <agent.yaml>] [--out <dir>]

  --config <path>   agent config the bundle runs (default ${DEFAULT_CONFIG})
  --out <dir>       bundle directory (default dist/flowcat-<version>-<platform>)
`;

async function projectVersion(): Promise<string> {
  const json = JSON.parse(await Deno.readTextFile("deno.json")) as { version?: string };
  return json.version ?? "0.0.0";
}

async function copyTree(src: string, dest: string): Promise<void> {
  const info = await Deno.stat(src);
  if (!info.isDirectory) {
    await Deno.mkdir(dirname(dest), { recursive: true });
    await Deno.copyFile(src, dest);
    return;
  }
  await Deno.mkdir(dest, { recursive: true });
  for await (const e of Deno.readDir(src)) await copyTree(join(src, e.name), join(dest, e.name));
}

/** Copy the config and the graph it names into `<out>/config`; returns the copy's path. */
async function copyConfig(config: AgentServerConfig, path: string, out: string): Promise<string> {
  const copy = join(out, "config", basename(path));
  await copyTree(path, copy);
  const graph = config.agent.kind === "graph" ? config.agent.graphFile : undefined;
  if (graph !== undefined) {
    const rel = relative(dirname(path), graph);
    if (rel.startsWith("..") || isAbsolute(rel)) {
      throw new ToolInputError(
        `${path}: agent.graph ${graph} is outside the config's directory; put it beside the config`,
      );
    }
    await copyTree(graph, join(out, "config", rel));
  }
  return copy;
}

async function sizeOf(path: string): Promise<number> {
  const info = await Deno.stat(path);
  if (!info.isDirectory) return info.size;
  let total = 0;
  for await (const e of Deno.readDir(path)) total += await sizeOf(join(path, e.name));
  return total;
}

function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/** Build the bundle; resolves with the exit code. */
export async function main(args: string[]): Promise<number> {
  const version = await projectVersion();
  const a = parseBuildArgs(args, `dist/flowcat-${version}-${platformName()}`);
  if (a.help) {
    console.log(HELP);
    return 0;
  }
  const out = normalize(a.out).replace(/\/$/, "");
  // The directory is replaced wholesale: never a root someone else keeps files in.
  if (["dist", ".tmp", ".", ".."].includes(out) || out.startsWith("..")) {
    throw new ToolInputError(`--out ${a.out}: choose a new subdirectory, e.g. dist/flowcat`);
  }
  const config = await loadBuildConfig(a.config);
  const step = (n: number, s: string) => console.log(`[${n}/7] ${s}`);

  step(1, `config ${a.config} -> ${out}/config/`);
  await Deno.remove(out, { recursive: true }).catch(() => {});
  await Deno.mkdir(join(out, "bin"), { recursive: true });
  const configCopy = await copyConfig(config, a.config, out);
  const brainGraph = join(out, "config", basename(DEFAULT_GRAPH));
  await copyTree(DEFAULT_GRAPH, brainGraph);
  // Flags come from the copy, so every path they name is a path inside the bundle.
  const shipped = await loadBuildConfig(configCopy);
  const entries = distEntries(shipped, configCopy, brainGraph, out);

  for (const [i, e] of entries.entries()) {
    step(2 + i, `bundle ${e.module} -> ${out}/${bundleFile(e.name)}`);
    const bundles: [string, string][] = [[e.module, bundleFile(e.name)]];
    if (e.name === "server") bundles.push([WORKER_MODULE, WORKER_BUNDLE]);
    for (const [module, file] of bundles) {
      const r = await runDeno(["bundle", `--output=${join(out, file)}`, module]);
      if (r.code !== 0) {
        console.error(r.stderr.trim());
        console.error(`dist: deno bundle failed for ${module} (exit ${r.code})`);
        return 1;
      }
    }
  }

  const files = runtimeFiles(config);
  step(5, `runtime files: ${files.join(", ") || "none"}; Deno ${Deno.version.deno} binary`);
  for (const f of files) await copyTree(f, join(out, SHIPPED[f]));
  await copyOutside(Deno.execPath(), join(out, "lib", "deno"));

  step(6, `launcher ${out}/bin/flowcat and README.txt`);
  await Deno.writeTextFile(join(out, "bin", "flowcat"), launcherScript(version, entries), {
    mode: 0o755,
  });
  await Deno.chmod(join(out, "bin", "flowcat"), 0o755);
  await Deno.writeTextFile(join(out, "README.txt"), distReadme(version, entries));

  const tarball = `${out}.tar.gz`;
  step(7, `archive ${tarball}`);
  const tar = await new Deno.Command("tar", {
    args: ["-czf", tarball, "-C", dirname(out), basename(out)],
    stderr: "piped",
  }).output().catch((err) => {
    if (err instanceof Deno.errors.NotFound) throw new ToolInputError("`tar` is not on PATH");
    throw err;
  });
  if (tar.code !== 0) {
    console.error(`dist: tar failed: ${new TextDecoder().decode(tar.stderr).trim()}`);
    return 1;
  }

  console.log(`done: ${out}`);
  for (
    const p of [
      "lib/deno",
      ...entries.map((e) => bundleFile(e.name)),
      WORKER_BUNDLE,
      ...files.map((f) => SHIPPED[f]),
    ]
  ) {
    console.log(`  ${p.padEnd(22)} ${mib(await sizeOf(join(out, p)))}`);
  }
  console.log(`  ${"total".padEnd(22)} ${mib(await sizeOf(out))}`);
  console.log(`  ${basename(tarball).padEnd(22)} ${mib((await Deno.stat(tarball)).size)}`);
  return 0;
}

if (import.meta.main) {
  await runToolMain("dist", main, "--out must be under dist/ or .tmp/");
}
