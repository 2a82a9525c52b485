/**
 * The public surface is deliberate: the export list of every `deno.json` export path is
 * snapshotted in tests/fixtures/public_api.txt, so adding, removing or re-kinding a public name
 * is a visible diff in review. After a deliberate change, run `deno task api` and commit the file.
 */

import assert from "node:assert/strict";
import { PUBLIC_API_FIXTURE, publicApi } from "../tools/public_api.ts";
import { ROOT } from "./_imports.ts";

const current = await publicApi(ROOT);

/** The symbol lines of one export path's section. */
function section(text: string, name: string): string[] {
  const lines = text.split("\n");
  const at = lines.findIndex((l) => l.startsWith(`## ${name} (`));
  assert.notEqual(at, -1, `no section for ${name}`);
  const end = lines.findIndex((l, i) => i > at && l === "");
  return lines.slice(at + 1, end);
}

Deno.test("public API matches the committed snapshot (update: deno task api)", async () => {
  const committed = await Deno.readTextFile(`${ROOT}/${PUBLIC_API_FIXTURE}`);
  if (committed === current) return;
  const before = new Set(committed.split("\n"));
  const after = new Set(current.split("\n"));
  const added = [...after].filter((l) => !before.has(l) && !l.startsWith("##"));
  const removed = [...before].filter((l) => !after.has(l) && !l.startsWith("##"));
  assert.fail(
    `the public API changed; if that is deliberate run \`deno task api\` and commit ` +
      `${PUBLIC_API_FIXTURE}\n  added: ${added.join(", ") || "-"}\n  removed: ${
        removed.join(", ") || "-"
      }`,
  );
});

Deno.test("every deno.json export path has a section", async () => {
  const config = JSON.parse(await Deno.readTextFile(`${ROOT}/deno.json`)) as {
    exports: Record<string, string>;
  };
  for (const path of Object.keys(config.exports)) {
    const name = path === "." ? "@flowcat/flowcat" : `@flowcat/flowcat${path.slice(1)}`;
    assert.ok(section(current, name).length > 0, `${name} exports nothing`);
  }
});

Deno.test("the root exports the embedding API and not the processor loop's internals", () => {
  const root = section(current, "@flowcat/flowcat").map((l) => l.split(" ")[1]);
  for (const name of ["FrameProcessor", "Pipeline", "PipelineTask", "buildS2sTask", "makeFrame"]) {
    assert.ok(root.includes(name), `${name} missing from the root`);
  }
  for (const name of ["ProcessorRuntime", "YIELD_EVERY", "MAX_NESTED_DRAINS", "FrameQueue"]) {
    assert.ok(!root.includes(name), `${name} is internal but exported from the root`);
  }
});

Deno.test("every export path's module doc has an example importing it by its published name", async () => {
  const config = JSON.parse(await Deno.readTextFile(`${ROOT}/deno.json`)) as {
    exports: Record<string, string>;
  };
  const missing: string[] = [];
  for (const [path, file] of Object.entries(config.exports)) {
    const name = path === "." ? "@flowcat/flowcat" : `@flowcat/flowcat${path.slice(1)}`;
    const text = await Deno.readTextFile(`${ROOT}/${file}`);
    const moduleDoc = text.slice(0, text.indexOf("@module"));
    const examples = [...moduleDoc.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
    if (!examples.some((e) => e.includes(`from "${name}"`))) missing.push(`${name} (${file})`);
  }
  assert.deepEqual(missing, []);
});
