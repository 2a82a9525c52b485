/** docs/providers.md lists every registered provider, under its kind, with its true status. */

import assert from "node:assert/strict";
import { LLM_PROVIDERS, STT_PROVIDERS, TTS_PROVIDERS } from "../providers/service_registry.ts";

const SECTIONS = [
  ["## Speech to text", STT_PROVIDERS],
  ["## Language models", LLM_PROVIDERS],
  ["## Text to speech", TTS_PROVIDERS],
] as const;

Deno.test("docs/providers.md matches the service registry", async () => {
  const doc = await Deno.readTextFile("docs/providers.md");
  for (const [heading, table] of SECTIONS) {
    const start = doc.indexOf(heading);
    assert.ok(start >= 0, `missing section ${heading}`);
    const end = doc.indexOf("\n## ", start + heading.length);
    const section = doc.slice(start, end < 0 ? undefined : end);
    const rows = new Map(
      section.split("\n").filter((l) => l.startsWith("| `")).map((l) => [l.split("`")[1], l]),
    );
    assert.deepEqual([...rows.keys()].sort(), Object.keys(table).sort(), heading);
    for (const info of Object.values(table)) {
      const row = rows.get(info.name)!;
      assert.equal(row.includes("not yet wired"), !info.wired, `${heading}: ${info.name} status`);
      if (info.defaultModel) assert.ok(row.includes(info.defaultModel), `${info.name} model`);
    }
  }
});
