/**
 * The project's import graph, read from the source text: for each `.ts` file under the source
 * folders, the repository paths it imports (static, `import type`, `export ... from`, and
 * `import("...")` with a literal path). Package specifiers (`npm:`, `node:`, import-map names)
 * are left out: only edges between the project's own files count for layering.
 */

import { dirname, join, normalize, relative } from "node:path";

/** Repository root (the folder holding deno.json). */
export const ROOT: string = normalize(join(dirname(new URL(import.meta.url).pathname), ".."));

/** Folders whose files are product code (tests, fixtures and build output are not). */
export const SOURCE_DIRS: readonly string[] = [
  "core",
  "providers",
  "telephony",
  "transports",
  "server",
  "demo",
  "tools",
  "bench",
];

// A static import or re-export starts a line (JSDoc examples start with `*`, so they never match);
// a dynamic import may stand anywhere on a line that is not a comment.
const STATIC_RE = /^(?:import|export)\s(?:[^;"]*?\sfrom\s)?\s*"([^"]+)"/gm;
const DYNAMIC_RE = /^(?!\s*(?:\*|\/\/)).*?\bimport\(\s*"([^"]+)"\s*\)/gm;

/** Relative specifiers a module's text imports, in order, static ones first. */
export function importSpecifiers(text: string): string[] {
  const out: string[] = [];
  for (const re of [STATIC_RE, DYNAMIC_RE]) {
    for (const m of text.matchAll(re)) out.push(m[1]);
  }
  return out;
}

function walk(dir: string, out: string[]): void {
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(join(ROOT, dir))];
  } catch {
    return;
  }
  for (const e of entries) {
    const path = `${dir}/${e.name}`;
    if (e.isDirectory && e.name !== "results") walk(path, out);
    else if (e.isFile && e.name.endsWith(".ts")) out.push(path);
  }
}

/** Every product `.ts` file (repository-relative) with the project files it imports. */
export function importGraph(): Map<string, string[]> {
  const files = ["mod.ts"];
  for (const d of SOURCE_DIRS) walk(d, files);
  const graph = new Map<string, string[]>();
  for (const file of files.sort()) {
    const text = Deno.readTextFileSync(join(ROOT, file));
    const targets = importSpecifiers(text)
      .filter((s) => s.startsWith("./") || s.startsWith("../"))
      .map((s) => relative(ROOT, normalize(join(ROOT, dirname(file), s))));
    graph.set(file, [...new Set(targets)]);
  }
  return graph;
}

/** The import circles of a graph, each as the files in order (first file repeated at the end). */
export function importCycles(graph: Map<string, string[]>): string[][] {
  const cycles: string[][] = [];
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const visit = (file: string): void => {
    state.set(file, "open");
    stack.push(file);
    for (const next of graph.get(file) ?? []) {
      if (!graph.has(next)) continue;
      const s = state.get(next);
      if (s === "open") cycles.push([...stack.slice(stack.indexOf(next)), next]);
      else if (s === undefined) visit(next);
    }
    stack.pop();
    state.set(file, "done");
  };
  for (const file of graph.keys()) if (!state.has(file)) visit(file);
  return cycles;
}
