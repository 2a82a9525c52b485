/**
 * Feature isolation, checked on the module graph `deno info --json` reports: importing `mod.ts`
 * loads no npm/jsr/remote package, no provider, carrier, transport or server module, and no
 * module that opens a network connection; importing one carrier serializer entry point loads
 * that carrier's module and no other carrier's.
 *
 * In the JSON a dynamic `import()` with a literal specifier is a dependency with
 * `isDynamic: true`; the static graph follows every other dependency (code and type imports).
 */

import assert from "node:assert/strict";
import { CARRIER_NAMES } from "../telephony/serializers/_types.ts";

const ROOT = new URL("../", import.meta.url);

/** One dependency of a module, as `deno info --json` writes it. */
interface InfoDependency {
  specifier: string;
  code?: { specifier: string };
  type?: { specifier: string };
  isDynamic?: boolean;
}

/** One module of the graph. */
interface InfoModule {
  specifier: string;
  dependencies?: InfoDependency[];
  error?: string;
}

/** The parts of `deno info --json` the checks read. */
interface DenoInfo {
  roots: string[];
  modules: InfoModule[];
  redirects: Record<string, string>;
}

/** A module reached from the root, with the chain of imports that reached it. */
interface Reached {
  specifier: string;
  chain: string[];
}

/**
 * `deno info --json <entry>`, run from the repository root. The binary is `deno` from PATH, as
 * in the other tests: `--allow-run=deno` grants that path, which may be a symlink to
 * `Deno.execPath()` (npx), and a grant does not follow symlinks.
 */
async function denoInfo(entry: string): Promise<DenoInfo> {
  const out = await new Deno.Command("deno", {
    args: ["info", "--json", entry],
    cwd: ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const err = new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, `deno info --json ${entry} failed: ${err}`);
  return JSON.parse(new TextDecoder().decode(out.stdout)) as DenoInfo;
}

/** Every module reachable from the root; dynamic imports are followed only when asked. */
function reachable(info: DenoInfo, opts: { dynamic: boolean }): Reached[] {
  const byId = new Map(info.modules.map((m) => [m.specifier, m]));
  const resolve = (s: string) => info.redirects[s] ?? s;
  const seen = new Map<string, string[]>();
  const queue: Reached[] = info.roots.map((r) => ({ specifier: resolve(r), chain: [resolve(r)] }));
  while (queue.length > 0) {
    const next = queue.shift()!;
    if (seen.has(next.specifier)) continue;
    seen.set(next.specifier, next.chain);
    for (const dep of byId.get(next.specifier)?.dependencies ?? []) {
      if (dep.isDynamic && !opts.dynamic) continue;
      for (const target of [dep.code?.specifier, dep.type?.specifier]) {
        if (target === undefined) continue;
        const id = resolve(target);
        queue.push({ specifier: id, chain: [...next.chain, id] });
      }
    }
  }
  return [...seen].map(([specifier, chain]) => ({ specifier, chain }));
}

/** A repository-relative path for a file: specifier, else the specifier itself. */
function rel(specifier: string): string {
  return specifier.startsWith(ROOT.href) ? specifier.slice(ROOT.href.length) : specifier;
}

/** `a.ts -> b.ts -> c.ts`, for failure messages. */
function chainText(r: Reached): string {
  return r.chain.map(rel).join(" -> ");
}

/** Assert no reached module matches `bad`, naming each offender and how it was reached. */
function assertNone(reached: Reached[], bad: (r: Reached) => string | undefined): void {
  const offenders = reached.flatMap((r) => {
    const why = bad(r);
    return why === undefined ? [] : [`${rel(r.specifier)} (${why}), via ${chainText(r)}`];
  });
  assert.deepEqual(offenders, [], `offending modules:\n  ${offenders.join("\n  ")}`);
}

const REMOTE = /^(npm|jsr|https?):/;
const FEATURE_DIRS = ["providers/", "telephony/", "transports/", "server/"];
/** Calls that open a connection or a listener (matched in code, comments stripped). */
const NETWORK_CALLS = [
  "fetch(",
  "new WebSocket(",
  "Deno.connect",
  "Deno.listen",
  "Deno.serve(",
  "Deno.upgradeWebSocket(",
];

/** Source text without block and line comments (JSDoc examples may mention `fetch(`). */
function codeOf(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|\s)\/\/.*$/gm, "$1");
}

/** Why a module is not allowed in the core graph, or `undefined` when it is. */
function coreViolation(r: Reached): string | undefined {
  if (REMOTE.test(r.specifier)) return "a package or remote module";
  if (!r.specifier.startsWith("file:")) return undefined;
  const path = rel(r.specifier);
  const dir = FEATURE_DIRS.find((d) => path.startsWith(d));
  if (dir !== undefined) return `a module under ${dir}`;
  const code = codeOf(Deno.readTextFileSync(new URL(r.specifier)));
  const call = NETWORK_CALLS.find((c) => code.includes(c));
  return call === undefined ? undefined : `calls "${call}"`;
}

Deno.test("mod.ts: the static graph has no package, no feature module, no network call", async () => {
  const reached = reachable(await denoInfo("mod.ts"), { dynamic: false });
  assert.ok(reached.length > 20, `mod.ts reaches only ${reached.length} modules`);
  assertNone(reached, coreViolation);
});

Deno.test("mod.ts: not even a lazy import() of an npm package (Deno installs those at startup)", async () => {
  // Deno resolves and installs a literal import("npm:...") when it loads the graph, before any
  // code runs, so a lazy npm import would still cost every embedder the download.
  const reached = reachable(await denoInfo("mod.ts"), { dynamic: true });
  assertNone(reached, (r) => REMOTE.test(r.specifier) ? "a package, dynamically" : undefined);
});

/** The `"./telephony/serializers/<carrier>"` entries of deno.json: carrier -> module path. */
function carrierEntries(): Map<string, string> {
  const config = JSON.parse(Deno.readTextFileSync(new URL("deno.json", ROOT))) as {
    exports: Record<string, string>;
  };
  const entries = new Map<string, string>();
  for (const [key, target] of Object.entries(config.exports)) {
    const m = /^\.\/telephony\/serializers\/([a-z]+)$/.exec(key);
    if (m !== null) entries.set(m[1], target.replace(/^\.\//, ""));
  }
  return entries;
}

Deno.test("each carrier serializer entry point loads its own carrier module and no other", async () => {
  const entries = carrierEntries();
  assert.deepEqual([...entries.keys()].sort(), [...CARRIER_NAMES].sort(), "one entry per carrier");
  const carrierFiles = new Set(entries.values());
  for (const [carrier, path] of entries) {
    const reached = reachable(await denoInfo(path), { dynamic: false });
    const carriersReached = reached.filter((r) => carrierFiles.has(rel(r.specifier)));
    assert.deepEqual(
      carriersReached.map((r) => rel(r.specifier)),
      [path],
      `${carrier} must reach exactly ${path}; reached:\n  ${
        carriersReached.map(chainText).join("\n  ")
      }`,
    );
    assertNone(reached, (r) => {
      if (REMOTE.test(r.specifier)) return "a package or remote module";
      const p = rel(r.specifier);
      return ["providers/", "transports/", "server/"].some((d) => p.startsWith(d))
        ? "a provider, transport or server module"
        : undefined;
    });
  }
});
