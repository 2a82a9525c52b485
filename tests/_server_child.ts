/**
 * The agent server as operators run it, for tests: `server/main.ts` in a child Deno process
 * under exactly the flags `deno task start` computes for its config (server/permissions.ts,
 * `serverPermissionOptions`), with the environment the test gives (and nothing else).
 */
import { loadConfig } from "../server/config.ts";
import { serverPermissionOptions } from "../server/main.ts";
import { permissionFlags } from "../server/permissions.ts";

/** A running server child. */
export interface ServerChild {
  /** `http://<host>:<port>` (the config's host; 127.0.0.1 by default). */
  base: string;
  /** Settles with the exit code once the process has exited (and its output was read). */
  exited: Promise<number>;
  /** Send `signal` and return at once (`stop` waits for the exit). */
  kill(signal: Deno.Signal): void;
  /** The flags it runs under. */
  flags: string[];
  /** The child's process id (the server itself, or the launcher with `launcher`). */
  pid: number;
  /** Everything it wrote to stderr so far (its log lines). */
  stderr(): string;
  /** Everything it wrote to stdout so far (banner, drain lines). */
  stdout(): string;
  /** SIGTERM (drain), then wait for it to exit; its exit code. */
  stop(): Promise<number>;
}

/**
 * Start `server/main.ts --config <path> --port <port, default 0>` under the flags `deno task start` computes
 * (`env` is what the server and the launcher see); with `launcher`, start it through the start
 * task itself; `args` are more command-line options (`--workers 2`), `flags` replace the computed
 * ones; with `workers`, as `--workers <n>` (and the computed flags include what workers need).
 */
export async function startServerChild(
  configPath: string,
  env: Record<string, string>,
  opts: { launcher?: boolean; args?: string[]; flags?: string[]; workers?: number; port?: number } =
    {},
): Promise<ServerChild> {
  const loaded = await loadConfig(configPath);
  if (!loaded.ok) throw new Error(JSON.stringify(loaded.problems));
  const perms = serverPermissionOptions(
    loaded.config,
    {
      config: configPath,
      port: opts.port ?? 0,
      ...(opts.workers ? { workers: opts.workers } : {}),
    },
    (n) => env[n],
  );
  const flags = opts.flags ?? permissionFlags(loaded.config, perms);
  const more = [...(opts.args ?? []), ...(opts.workers ? ["--workers", String(opts.workers)] : [])];
  const port0 = String(opts.port ?? 0);
  const server = ["server/main.ts", "--config", configPath, "--port", port0, ...more];
  // Through the launcher (deno task start), which computes the flags itself in the child.
  const args = opts.launcher
    ? [...startTaskArgs(), "--config", configPath, "--port", port0, ...more]
    : ["run", "--no-prompt", ...flags, ...server];
  const child = new Deno.Command("deno", {
    args,
    // Only what the test gives, plus what Deno itself needs to find its caches.
    env: { ...inherited(["HOME", "PATH", "DENO_DIR", "XDG_CACHE_HOME"]), NO_COLOR: "1", ...env },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const dec = new TextDecoder();
  let out = "";
  let err = "";
  const outDone = (async () => {
    for await (const c of child.stdout) out += dec.decode(c);
  })();
  const errDone = (async () => {
    for await (const c of child.stderr) err += dec.decode(c);
  })();
  const deadline = Date.now() + 20_000;
  let port = 0;
  let host = "127.0.0.1";
  while (port === 0 && Date.now() < deadline) {
    const m = /on http:\/\/([^/\s]+):(\d+)\//.exec(out);
    if (m !== null) [host, port] = [m[1], Number(m[2])];
    if (port === 0) await new Promise((r) => setTimeout(r, 25));
  }
  const kill = (signal: Deno.Signal) => {
    try {
      child.kill(signal);
    } catch { /* already gone */ }
  };
  const exited = (async () => {
    const status = await child.status;
    await outDone;
    await errDone;
    return status.code;
  })();
  const stop = () => {
    kill("SIGTERM");
    return exited;
  };
  if (port === 0) {
    await stop();
    throw new Error(`the server did not start:\n${out}\n${err}`);
  }
  return {
    base: `http://${host}:${port}`,
    pid: child.pid,
    exited,
    kill,
    flags,
    stderr: () => err,
    stdout: () => out,
    stop,
  };
}

/** The named variables of this process that are set (what a child Deno needs to find its caches). */
export function inherited(names: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const n of names) {
    const v = Deno.env.get(n);
    if (v !== undefined) out[n] = v;
  }
  return out;
}

/** The `start` task's own flags, read from deno.json: a test runs what users run. */
export function startTaskArgs(): string[] {
  const tasks = JSON.parse(Deno.readTextFileSync("deno.json")).tasks as Record<string, string>;
  const words = tasks.start.split(/\s+/);
  if (words[0] !== "deno") throw new Error(`the start task is not a deno command: ${tasks.start}`);
  return words.slice(1);
}
