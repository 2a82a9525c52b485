/**
 * Imports in the published sources work from any origin: a package loaded from a registry or
 * an `https:` host gets no import map, so every npm package is imported by a full `npm:`
 * specifier, at exactly the version range deno.json's import map pins (the map stays for tests
 * and tools). A bare package name here would load locally and fail for every embedder.
 */

import assert from "node:assert/strict";

const ROOT = new URL("../", import.meta.url);
const PUBLISHED_CODE = ["mod.ts", "core", "providers", "telephony", "transports", "server"];
/** Static imports and re-exports (at a line start), side-effect imports, literal `import()`. */
const SPECIFIER =
  /^(?:import|export)\b[^;]*?\bfrom\s*"([^"]+)"|^import\s*"([^"]+)"|\bimport\(\s*"([^"]+)"\s*\)/gm;

/** Every .ts file under `path` (a file or a directory), relative to the root. */
function sources(path: string): string[] {
  const info = Deno.statSync(new URL(path, ROOT));
  if (info.isFile) return path.endsWith(".ts") ? [path] : [];
  return [...Deno.readDirSync(new URL(path, ROOT))]
    .flatMap((e) => sources(`${path}/${e.name}`));
}

Deno.test("published sources import npm packages by full npm: specifiers pinned as in deno.json", () => {
  const imports = JSON.parse(Deno.readTextFileSync(new URL("deno.json", ROOT))).imports as Record<
    string,
    string
  >;
  const problems: string[] = [];
  let npm = 0;
  for (const file of PUBLISHED_CODE.flatMap(sources)) {
    const text = Deno.readTextFileSync(new URL(file, ROOT));
    for (const match of text.matchAll(SPECIFIER)) {
      const spec = match[1] ?? match[2] ?? match[3];
      if (spec.startsWith(".") || spec.startsWith("node:") || spec.startsWith("data:")) continue;
      const m = /^npm:((?:@[^/@]+\/)?[^/@]+)(@[^/]+)?(\/.*)?$/.exec(spec);
      if (m === null) {
        problems.push(`${file}: "${spec}" resolves only through this repository's import map`);
        continue;
      }
      npm++;
      const pinned = imports[m[1]];
      if (pinned !== `npm:${m[1]}${m[2] ?? ""}`) {
        problems.push(`${file}: "${spec}" differs from deno.json's "${m[1]}": "${pinned}"`);
      }
    }
  }
  assert.deepEqual(problems, []);
  assert.ok(npm >= 10, `only ${npm} npm imports found: the scan is broken`);
});
