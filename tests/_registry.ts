/**
 * A stand-in for a package registry: the package's published files served over plain HTTP on
 * 127.0.0.1, and a fresh consumer project in a temporary directory whose import map points
 * `@flowcat/flowcat` and each of its export paths at that origin (what an embedder writes to
 * use the package from an `https:` host). Consumer programs run as child `deno run` processes
 * under exactly the flags a test gives.
 */

import { inherited } from "./_server_child.ts";

const ROOT = new URL("../", import.meta.url);

/** What deno.json says about the package. */
interface PackageJson {
  name: string;
  exports: Record<string, string>;
  publish: { include: string[] };
}

/** The package's deno.json. */
export function packageJson(): PackageJson {
  return JSON.parse(Deno.readTextFileSync(new URL("deno.json", ROOT))) as PackageJson;
}

const TYPES: Record<string, string> = {
  ts: "application/typescript; charset=utf-8",
  js: "application/javascript; charset=utf-8",
  json: "application/json",
};

/** A running registry stand-in. */
export interface Registry {
  /** `http://127.0.0.1:PORT`. */
  origin: string;
  /** `127.0.0.1:PORT`, for `--allow-import`. */
  host: string;
  /** Paths requested so far. */
  requested: string[];
  close(): Promise<void>;
}

/** Serve the files deno.json publishes (and nothing else) on 127.0.0.1. */
export function serveRegistry(): Registry {
  const include = packageJson().publish.include;
  const requested: string[] = [];
  const published = (path: string) =>
    !path.split("/").includes("..") &&
    include.some((p) => p.endsWith("/") ? path.startsWith(p) : path === p);
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const path = decodeURIComponent(new URL(req.url).pathname).slice(1);
    requested.push(path);
    if (req.method !== "GET" || !published(path)) return new Response("not found", { status: 404 });
    try {
      const body = await Deno.readFile(new URL(path, ROOT));
      const type = TYPES[path.split(".").at(-1) ?? ""] ?? "text/plain; charset=utf-8";
      return new Response(body, { headers: { "content-type": type } });
    } catch {
      return new Response("not found", { status: 404 });
    }
  });
  const host = `127.0.0.1:${server.addr.port}`;
  return { origin: `http://${host}`, host, requested, close: () => server.shutdown() };
}

/** The consumer's import map: the package name and each export path, at `origin`. */
export function consumerImports(origin: string): Record<string, string> {
  const pkg = packageJson();
  const imports: Record<string, string> = {};
  for (const [key, target] of Object.entries(pkg.exports)) {
    const name = key === "." ? pkg.name : `${pkg.name}/${key.slice(2)}`;
    imports[name] = `${origin}/${target.replace(/^\.\//, "")}`;
  }
  return imports;
}

/** A fresh project directory with a deno.json mapping the package to `origin`. */
export async function consumerProject(origin: string): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "flowcat-consumer-" });
  const config = { imports: consumerImports(origin) };
  await Deno.writeTextFile(`${dir}/deno.json`, JSON.stringify(config, null, 2));
  return dir;
}

/** A consumer program running as a child process. */
export interface ConsumerRun {
  /** Everything it wrote to stdout so far. */
  stdout(): string;
  /** Everything it wrote to stderr so far. */
  stderr(): string;
  /** Resolves with the first match of `re` in stdout or stderr (rejects after `ms` or at exit). */
  waitFor(re: RegExp, ms?: number): Promise<RegExpExecArray>;
  /** Its exit code, once it exited. */
  status: Promise<number>;
  /** Send `signal` (default SIGTERM) and wait for the exit code. */
  stop(signal?: Deno.Signal): Promise<number>;
}

/**
 * `deno run --no-prompt <flags> <file> <args>` in `dir`, with no environment but what Deno
 * needs to find its caches.
 */
export function runConsumer(
  dir: string,
  file: string,
  flags: readonly string[],
  args: readonly string[] = [],
): ConsumerRun {
  const child = new Deno.Command("deno", {
    args: ["run", "--no-prompt", ...flags, file, ...args],
    cwd: dir,
    env: { ...inherited(["HOME", "PATH", "DENO_DIR", "XDG_CACHE_HOME"]), NO_COLOR: "1" },
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const dec = new TextDecoder();
  let out = "";
  let err = "";
  const outDone = (async () => {
    for await (const c of child.stdout) out += dec.decode(c, { stream: true });
  })();
  const errDone = (async () => {
    for await (const c of child.stderr) err += dec.decode(c, { stream: true });
  })();
  let exited = false;
  const status = (async () => {
    const s = await child.status;
    exited = true;
    await outDone;
    await errDone;
    return s.code;
  })();
  return {
    stdout: () => out,
    stderr: () => err,
    status,
    async waitFor(re, ms = 60_000) {
      const deadline = Date.now() + ms;
      for (;;) {
        const m = re.exec(out) ?? re.exec(err);
        if (m !== null) return m;
        if (exited || Date.now() > deadline) {
          throw new Error(`${file}: no ${re} in its output\nstdout:\n${out}\nstderr:\n${err}`);
        }
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    async stop(signal = "SIGTERM") {
      if (!exited) {
        try {
          child.kill(signal);
        } catch { /* already gone */ }
      }
      return await status;
    },
  };
}

/**
 * The `deno run` flags a program's module doc states on its `Run:` line (the permissions the
 * docs promise it needs), e.g. `--allow-net=127.0.0.1`.
 */
export function documentedFlags(source: string): string[] {
  const m = /Run: `deno run((?: --[a-z-]+(?:=[^\s`]+)?)*) examples\/embed\/\w+\.ts/.exec(source);
  if (m === null) throw new Error("no `Run: deno run ...` line in the module doc");
  return m[1].trim().split(/\s+/).filter((f) => f !== "");
}
