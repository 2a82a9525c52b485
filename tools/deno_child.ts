/**
 * Child processes of the build tools: the `deno` CLI (bundle, compile) and small file operations
 * outside the project that run in a child Deno granted exactly the one path they touch, so the
 * tools themselves keep `--allow-read=.`.
 *
 * Run directly, this module is that child: `stat <path>` prints `{exists, file, executable,
 * size}` as JSON; `copy <src> <dest>` copies a file, keeping its mode.
 * @module
 */

import { ToolInputError } from "./tool_error.ts";

/** What a child printed and how it ended. */
export interface ChildResult {
  code: number;
  stdout: string;
  stderr: string;
}

const decoder = new TextDecoder();

/** Run `deno <args>` (the `deno` on PATH, as `deno task` runs it) and collect its output. */
export async function runDeno(args: readonly string[], cwd?: string): Promise<ChildResult> {
  let out: Deno.CommandOutput;
  try {
    out = await new Deno.Command("deno", {
      args: [...args],
      stdout: "piped",
      stderr: "piped",
      env: { NO_COLOR: "1", DENO_NO_UPDATE_CHECK: "1" },
      ...(cwd !== undefined ? { cwd } : {}),
    }).output();
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
    throw new ToolInputError(
      "`deno` is not on PATH (run the task as `npx -y deno@2.9.6 task ...`)",
    );
  }
  return { code: out.code, stdout: decoder.decode(out.stdout), stderr: decoder.decode(out.stderr) };
}

/** What {@link statOutside} found. */
export interface PathInfo {
  exists: boolean;
  file: boolean;
  executable: boolean;
  size: number;
}

const SELF = new URL(import.meta.url).pathname;

/** Stat `path` (anywhere on disk) from a child allowed to read only that path. */
export async function statOutside(path: string): Promise<PathInfo> {
  const r = await runDeno(["run", "--no-config", `--allow-read=${path}`, SELF, "stat", path]);
  if (r.code !== 0) throw new Error(`stat ${path}: ${r.stderr.trim()}`);
  return JSON.parse(r.stdout) as PathInfo;
}

/** Copy `src` (anywhere on disk) to `dest` from a child allowed exactly those two paths. */
export async function copyOutside(src: string, dest: string): Promise<void> {
  const r = await runDeno([
    "run",
    "--no-config",
    `--allow-read=${src}`,
    `--allow-write=${dest}`,
    SELF,
    "copy",
    src,
    dest,
  ]);
  if (r.code !== 0) throw new Error(`copy ${src} -> ${dest}: ${r.stderr.trim()}`);
}

async function childMain(args: string[]): Promise<number> {
  const [op, a, b] = args;
  if (op === "stat" && a !== undefined) {
    let info: PathInfo = { exists: false, file: false, executable: false, size: 0 };
    try {
      const s = await Deno.stat(a);
      const mode = s.mode ?? 0;
      info = { exists: true, file: s.isFile, executable: (mode & 0o111) !== 0, size: s.size };
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    }
    console.log(JSON.stringify(info));
    return 0;
  }
  if (op === "copy" && a !== undefined && b !== undefined) {
    await Deno.copyFile(a, b);
    return 0;
  }
  console.error("usage: deno_child.ts stat <path> | copy <src> <dest>");
  return 2;
}

if (import.meta.main) Deno.exit(await childMain(Deno.args));
