/**
 * `--check` probes for the streaming TTS providers: each is probed at a cheap endpoint of its
 * cloud with the header its client authenticates with (Rime, which has none, only for an answer),
 * and the key never shows in the URL.
 */
import assert from "node:assert/strict";
import { parseConfigText } from "../server/config.ts";
import { probeTargets } from "../server/probes.ts";

async function ttsTarget(name: string) {
  const parsed = await parseConfigText(
    `version: 1
agent: { remote: { url: "http://127.0.0.1:9/brain" } }
pipeline: cascaded
providers:
  stt: { name: deepgram }
  llm: { name: groq }
  tts: { name: ${name} }
`,
    "yaml",
    ".",
  );
  assert.ok(parsed.ok, JSON.stringify(!parsed.ok && parsed.problems));
  const target = probeTargets(parsed.config).find((t) => t.service === "tts");
  assert.ok(target, `no tts target for ${name}`);
  return target;
}

Deno.test("probes: each streaming TTS provider at a cheap endpoint with its own auth header", async () => {
  const expected: [string, string, Record<string, string>, "ok" | "reachable"][] = [
    ["deepgram", "https://api.deepgram.com/v1/projects", { authorization: "Token k" }, "ok"],
    ["lmnt", "https://api.lmnt.com/v1/ai/voice/list", { "x-api-key": "k" }, "ok"],
    ["fish", "https://api.fish.audio/model", { authorization: "Bearer k" }, "ok"],
    ["neuphonic", "https://api.neuphonic.com/voices", { "x-api-key": "k" }, "ok"],
    ["hume", "https://api.hume.ai/v0/tts/voices", { "x-hume-api-key": "k" }, "ok"],
    ["rime", "https://users-ws.rime.ai", { authorization: "Bearer k" }, "reachable"],
  ];
  for (const [name, url, headers, expect] of expected) {
    const t = await ttsTarget(name);
    assert.equal(t.notWired, undefined, name);
    assert.equal(t.url, url, name);
    assert.equal(t.keyEnv, `${name.toUpperCase()}_API_KEY`, name);
    assert.deepEqual(t.request!.headers("k"), headers, name);
    assert.equal(t.expect, expect, name);
  }
});
