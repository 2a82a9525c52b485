/**
 * The package is publishable: every entry point of `deno.json` "exports" exists and has a
 * kebab/slash key, `deno doc --lint` finds every exported symbol documented and referencing only
 * public types, and `deno publish --dry-run` finds no slow types and packs the right files.
 *
 * The children are `deno` from PATH, as in the other tests: `--allow-run=deno` grants that path,
 * which may be a symlink to `Deno.execPath()` (npx), and a grant does not follow symlinks.
 */

import assert from "node:assert/strict";

const ROOT = new URL("../", import.meta.url);

/** The parts of deno.json these checks read. */
interface DenoConfig {
  name: string;
  version: string;
  license?: string;
  exports: Record<string, string>;
}

const config = JSON.parse(await Deno.readTextFile(new URL("deno.json", ROOT))) as DenoConfig;
const entryTargets = Object.values(config.exports);

/** What a finished `deno` child left behind. */
interface ChildResult {
  code: number;
  /** stdout and stderr together, without the npm type-resolution warnings that flood it. */
  output: string;
}

/** Run `deno <args>` from the repository root without colours. */
async function deno(args: string[]): Promise<ChildResult> {
  const out = await new Deno.Command("deno", {
    args,
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  // @types/node's index.d.ts triple-slash references fail to resolve under Deno; each is two
  // lines of noise ("Warning Failed resolving types..." and its "at" line), not a problem of ours.
  const lines = text.split("\n");
  const kept = lines.filter((line, i) =>
    !line.startsWith("Warning Failed resolving types") &&
    !(line.trimStart().startsWith("at ") && lines[i - 1]?.startsWith("Warning Failed resolving"))
  );
  return { code: out.code, output: kept.join("\n") };
}

/** The first `count` diagnostics (`error[...]` blocks) of a child's output, for a failure. */
function firstErrors(output: string, count = 15): string {
  const blocks = output.split(/\n(?=error\[)/).filter((b) => b.startsWith("error["));
  const shown = blocks.slice(0, count).map((b) => b.trim()).join("\n\n");
  return blocks.length > 0
    ? `${shown}\n(${blocks.length} diagnostics in all)`
    : output.slice(-4000);
}

/**
 * Why a failed child could not do its job for a reason outside this repository (no network to
 * fetch an npm package it needs), or `undefined` when the failure is ours.
 */
function environmentFault(output: string): string | undefined {
  if (/^error\[/m.test(output)) return undefined;
  const m = output.match(
    /(error sending request|dns error|failed to lookup address|Connection refused|tcp connect error|Network is unreachable)[^\n]*/i,
  );
  return m === null ? undefined : m[0];
}

Deno.test("package: deno.json names the package, its version and its licence", () => {
  assert.match(config.name, /^@[a-z0-9-]+\/[a-z0-9-]+$/);
  assert.match(config.version, /^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/);
  assert.equal(config.license, "MIT");
});

Deno.test("package: every export key is kebab/slash style and every target exists", async () => {
  const key = /^\.(\/[a-z0-9]+(-[a-z0-9]+)*)*$/;
  const badKeys = Object.keys(config.exports).filter((k) => !key.test(k));
  assert.deepEqual(badKeys, [], `export keys must be "." or "./kebab-case/segments"`);
  const missing: string[] = [];
  for (const target of entryTargets) {
    const stat = await Deno.stat(new URL(target, ROOT)).catch(() => undefined);
    if (stat?.isFile !== true) missing.push(target);
  }
  assert.deepEqual(missing, [], "exports targets that are not files");
});

Deno.test("package: deno doc --lint is clean over every entry point", async () => {
  const res = await deno(["doc", "--lint", ...entryTargets]);
  const fault = environmentFault(res.output);
  if (res.code !== 0 && fault !== undefined) {
    console.warn(`skipped: deno doc --lint could not run here (${fault})`);
    return;
  }
  assert.equal(res.code, 0, `deno doc --lint failed:\n${firstErrors(res.output)}`);
});

Deno.test("package: deno publish --dry-run passes and packs no tests", async () => {
  const res = await deno(["publish", "--dry-run", "--allow-dirty"]);
  const fault = environmentFault(res.output);
  if (res.code !== 0 && fault !== undefined) {
    console.warn(`skipped: deno publish --dry-run could not run here (${fault})`);
    return;
  }
  assert.equal(res.code, 0, `deno publish --dry-run failed:\n${firstErrors(res.output)}`);
  const packed = [...res.output.matchAll(/^\s+file:\/\/\S+/gm)].map((m) =>
    m[0].trim().slice(ROOT.href.length)
  );
  for (const file of ["LICENSE", "CHANGELOG.md", "README.md", "mod.ts", "docs/versioning.md"]) {
    assert.ok(packed.includes(file), `${file} is not in the published files`);
  }
  const leaked = packed.filter((f) => /^(tests|bench|\.tmp|node_modules|recordings)\//.test(f));
  assert.deepEqual(leaked, [], "files that must not be published");
});
