/**
 * The layering rule (docs/architecture.md, "Layers"), checked on the import graph:
 * - `core/` (and `mod.ts`) imports nothing outside `core/`;
 * - `providers/`, `telephony/` and `transports/` import `core/` and their own folder only;
 * - inside `providers/`, one client module does not import another (shared pieces live in
 *   shared modules: `providers/http.ts`, `providers/tts/_shared.ts`, ...), bar the wrappers named
 *   below with their reason;
 * - `server/`, `demo/`, `tools/` and `bench/` may import any layer;
 * - no file imports itself back through a circle, type-only imports and `import()` included.
 */

import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { importCycles, importGraph, importSpecifiers, ROOT } from "./_imports.ts";

const graph = importGraph();
const exportPaths = new Set(
  Object.values(
    (JSON.parse(Deno.readTextFileSync(`${ROOT}/deno.json`)) as { exports: Record<string, string> })
      .exports,
  ).map((p) => p.replace(/^\.\//, "")),
);

/** The layer a file belongs to: its top folder, with `mod.ts` counted as core. */
function layer(file: string): string {
  return file === "mod.ts" ? "core" : file.split("/")[0];
}

/** What each inner layer may import; the outer layers are not listed and may import all. */
const ALLOWED: Record<string, readonly string[]> = {
  core: ["core"],
  providers: ["core", "providers"],
  telephony: ["core", "telephony"],
  transports: ["core", "transports"],
};

/** Client-to-client imports inside providers/ that are deliberate, with the reason. */
const CLIENT_IMPORTS_ALLOWED: Record<string, string> = {
  "providers/openai/realtime_style.ts -> providers/openai/realtime.ts":
    "a wrapper is a line of config over its family's client",
  "providers/echo/realtime.ts -> providers/espeak/tts.ts":
    "the echo model speaks its greeting with the local TTS",
  "providers/google/gemini_live.ts -> providers/realtime/env.ts":
    "env.ts holds the realtime settings read from FLOWCAT_* variables, shared by the family",
  "providers/xai/realtime.ts -> providers/openai/realtime_style.ts":
    "xAI Grok voice speaks the OpenAI Realtime wire: a wrapper in the client's xai dialect",
  "providers/aws/nova_sonic.ts -> providers/realtime/env.ts":
    "the realtime settings' default voices are other families' names, which Nova Sonic ignores",
  "providers/azure/openai_llm.ts -> providers/openai/chat.ts":
    "Azure OpenAI serves OpenAI's chat wire: the same client with a deployment URL and api-key",
  "providers/azure/realtime.ts -> providers/openai/realtime.ts":
    "Azure OpenAI Realtime is OpenAI's Realtime wire: the same client, another URL and key header",
  "providers/google/vertex.ts -> providers/google/gemini_llm.ts":
    "Vertex AI serves the Gemini generateContent wire: the same client, another URL and credential",
};

/** The registries load every client lazily by name: they may import any of them. */
const REGISTRIES = new Set(["providers/registry.ts", "providers/service_registry.ts"]);

Deno.test("importSpecifiers reads static, type-only, re-export and dynamic imports", () => {
  const text = [
    'import { a } from "./a.ts";',
    'import type { B } from "../b.ts";',
    "import {",
    "  c,",
    '} from "./c.ts";',
    'export * from "./d.ts";',
    'export { e } from "./e.ts";',
    'const f = () => import("./f.ts");',
    ' * import { g } from "./g.ts";',
    '// const h = import("./h.ts");',
    'import "./i.ts";',
  ].join("\n");
  assertEquals(importSpecifiers(text).sort(), [
    "../b.ts",
    "./a.ts",
    "./c.ts",
    "./d.ts",
    "./e.ts",
    "./f.ts",
    "./i.ts",
  ]);
});

Deno.test("importCycles finds a circle and none in a tree", () => {
  const circle = new Map([["a", ["b"]], ["b", ["c"]], ["c", ["a"]], ["d", ["a"]]]);
  assertEquals(importCycles(circle), [["a", "b", "c", "a"]]);
  assertEquals(importCycles(new Map([["a", ["b", "c"]], ["b", ["c"]], ["c", []]])), []);
});

Deno.test("the import graph covers the source folders", () => {
  for (const file of ["mod.ts", "core/frames.ts", "server/routes.ts", "telephony/sip/mod.ts"]) {
    assertEquals(graph.has(file), true, file);
  }
  assertEquals(graph.size > 200, true, `only ${graph.size} files read`);
});

Deno.test("inner layers import only the layers below them", () => {
  const wrong: string[] = [];
  for (const [file, targets] of graph) {
    const allowed = ALLOWED[layer(file)];
    if (!allowed) continue;
    for (const t of targets) if (!allowed.includes(layer(t))) wrong.push(`${file} -> ${t}`);
  }
  assertEquals(wrong, []);
});

Deno.test("a provider client does not import another client", () => {
  const wrong: string[] = [];
  for (const [file, targets] of graph) {
    if (layer(file) !== "providers" || REGISTRIES.has(file)) continue;
    for (const t of targets) {
      const edge = `${file} -> ${t}`;
      if (exportPaths.has(t) && !CLIENT_IMPORTS_ALLOWED[edge]) wrong.push(edge);
    }
  }
  assertEquals(wrong, []);
});

Deno.test("no import circles, type-only and dynamic imports included", () => {
  assertEquals(importCycles(graph).map((c) => c.join(" -> ")), []);
});
