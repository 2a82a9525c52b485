/**
 * File size (docs/architecture.md, "Layers"; docs/decisions.md has the why): a product
 * source file over 400 lines says why on its first line (`// Over 400 lines: <reason>`), or is
 * generated (its module doc says "Generated: do not edit").
 */

import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { join } from "node:path";
import { importGraph, ROOT } from "./_imports.ts";

const MAX_LINES = 400;
const REASON = /^\/\/ Over 400 lines: \S.{10,}/;

/** Files over the limit without a reason line, with their line counts. */
export function unexplainedLongFiles(files: Iterable<[string, string]>): string[] {
  const out: string[] = [];
  for (const [file, text] of files) {
    const lines = text.split("\n").length - (text.endsWith("\n") ? 1 : 0);
    if (lines <= MAX_LINES) continue;
    if (REASON.test(text) || text.slice(0, 2000).includes("Generated: do not edit")) continue;
    out.push(`${file} (${lines} lines)`);
  }
  return out;
}

Deno.test("unexplainedLongFiles flags a long file without a reason, not one with it", () => {
  const body = "x;\n".repeat(401);
  assertEquals(
    unexplainedLongFiles([
      ["long.ts", body],
      ["why.ts", "// Over 400 lines: one table read as a whole.\n" + body],
      ["short.ts", "x;\n".repeat(400)],
      ["empty_reason.ts", "// Over 400 lines: \n" + body],
    ]),
    ["long.ts (401 lines)", "empty_reason.ts (402 lines)"],
  );
});

Deno.test("every product source file over 400 lines gives its reason on the first line", () => {
  const files = [...importGraph().keys()].map((f): [string, string] => [
    f,
    Deno.readTextFileSync(join(ROOT, f)),
  ]);
  assertEquals(unexplainedLongFiles(files), []);
});
