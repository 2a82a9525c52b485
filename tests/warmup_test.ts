/** server/warmup.ts: what a config's calls use is what is warmed at start, and a warm-up failure is only a warning. */

import assert from "node:assert/strict";
import { memoryLogger } from "../core/log.ts";
import { usesEspeak, warmEngines } from "../server/warmup.ts";
import { parse } from "./_server_config_helpers.ts";

async function config(text: string) {
  const res = await parse(`agent: { graph: graph.yaml, greeting: "Hello." }\n${text}`);
  if (!res.ok) throw new Error(JSON.stringify(res.problems));
  return res.config;
}

Deno.test("warm-up: the echo agent warms eSpeak, the resamplers, G.711 and Opus", async () => {
  const c = await config("providers: { realtime: { name: echo } }");
  assert.equal(usesEspeak(c), true);
  const log = memoryLogger();
  const r = await warmEngines(c, log);
  assert.deepEqual(r.engines, ["espeak", "resamplers", "g711", "opus"]);
  assert.deepEqual(r.failed, []);
  assert.deepEqual(log.records, []);
});

Deno.test("warm-up: a cascaded call with eSpeak adds its VAD; no playground, no Opus", async () => {
  const c = await config(`pipeline: cascaded
providers:
  stt: { name: speaches }
  llm: { name: ollama, model: tiny }
  tts: { name: espeak }
playground: { enabled: false }`);
  const r = await warmEngines(c, memoryLogger());
  assert.deepEqual(r.engines, ["espeak", "resamplers", "g711", "vad"]);
});

Deno.test("warm-up: a silent echo agent and a cloud voice load no eSpeak", async () => {
  const quiet = await config("providers: { realtime: { name: echo, options: { tts: none } } }");
  assert.equal(usesEspeak(quiet), false);
  assert.ok(!(await warmEngines(quiet, memoryLogger())).engines.includes("espeak"));
  const cloud = await config(`pipeline: cascaded
providers:
  stt: { name: speaches }
  llm: { name: ollama, model: tiny }
  tts: { name: piper }`);
  assert.equal(usesEspeak(cloud), false);
});
