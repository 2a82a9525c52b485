/**
 * The playground's files are served from server/playground_assets.ts, generated from
 * server/playground/ by `deno task playground`: the committed module must match the files.
 */

import assert from "node:assert/strict";
import { PLAYGROUND_ASSETS } from "../server/playground_assets.ts";
import { PLAYGROUND_FILES } from "../server/static.ts";
import {
  buildPlaygroundModule,
  PLAYGROUND_MODULE,
  PLAYGROUND_SOURCE_DIR,
  PLAYGROUND_SOURCES,
  playgroundModule,
} from "../tools/playground_assets.ts";

Deno.test("playground assets: the generated module matches server/playground/ (deno task playground)", async () => {
  assert.deepEqual([...PLAYGROUND_SOURCES].sort(), Object.keys(PLAYGROUND_FILES).sort());
  for (const name of PLAYGROUND_SOURCES) {
    const text = await Deno.readTextFile(`${PLAYGROUND_SOURCE_DIR}/${name}`);
    assert.equal(PLAYGROUND_ASSETS[name], text, `${name} changed: run deno task playground`);
  }
  assert.equal(await Deno.readTextFile(PLAYGROUND_MODULE), await buildPlaygroundModule());
});

Deno.test("playground assets: any text survives the round trip through the module", async () => {
  const files = { "a.js": 'const s = `x ${"y"}`; // \\ \' " \u2028 é\n', "b.css": "" };
  const url = `data:application/typescript;base64,${
    new TextEncoder().encode(playgroundModule(files)).toBase64()
  }`;
  const mod = await import(url) as { PLAYGROUND_ASSETS: Record<string, string> };
  assert.deepEqual(mod.PLAYGROUND_ASSETS, files);
});
