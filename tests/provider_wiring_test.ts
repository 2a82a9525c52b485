/**
 * A provider Flowcat knows but does not speak yet is the first thing the server says, before any
 * key check: in the config check, at server creation and from `deno task start`'s process.
 */
import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import { silentLogger } from "../core/log.ts";
import { createAgentServer } from "../server/app.ts";
import { startAgentServer } from "../server/start.ts";
import { unwiredProblems } from "../server/provider_wiring.ts";
import { GRAPH, parse } from "./_server_config_helpers.ts";

const CASCADE = `agent: { graph: graph.yaml }
pipeline: cascaded
providers:
`;

async function cascaded(providers: string) {
  const res = await parse(CASCADE + providers);
  if (!res.ok) throw new Error(JSON.stringify(res.problems));
  return res.config;
}

Deno.test("provider wiring: every unwired provider is one problem, naming the wired ones", async () => {
  const config = await cascaded(`  stt: { name: azure }
  llm: { name: groq }
  tts: { name: playht }`);
  const problems = unwiredProblems(config);
  // azure is wired now: playht (its API closed) is the one unwired provider left.
  assert.deepEqual(problems.map((p) => p.path), ["providers.tts.name"]);
  assert.match(problems[0]!.message, /^playht: not yet wired \(wired tts providers: .*cartesia/);
  assert.match(problems[0]!.message, /wired tts providers: .*azure/);
  assert.equal(problems[0]!.message.includes("playht,"), false);
  const wired = await cascaded(`  stt: { name: deepgram }
  llm: { name: groq }
  tts: { name: espeak }`);
  assert.deepEqual(unwiredProblems(wired), []);
});

Deno.test("provider wiring: not wired comes before an earlier provider's missing key", async () => {
  // deepgram (stt, loaded first) is wired and its key is missing; playht (tts) is not wired.
  const config = await cascaded(`  stt: { name: deepgram }
  llm: { name: groq }
  tts: { name: playht }`);
  const notWired = (err: unknown) =>
    err instanceof FlowcatError && err.kind === "not_wired" &&
    err.message === "playht: not yet wired";
  await assert.rejects(
    createAgentServer({ config, env: () => undefined, logger: silentLogger }),
    notWired,
  );
  await assert.rejects(
    startAgentServer({ config, env: () => undefined, logger: silentLogger, port: 0 }),
    notWired,
  );
});

Deno.test("provider wiring: the server process says not wired, not that the key is missing", async () => {
  const dir = await Deno.makeTempDir({ dir: ".tmp" });
  try {
    await Deno.writeTextFile(`${dir}/graph.yaml`, GRAPH);
    await Deno.writeTextFile(
      `${dir}/agent.yaml`,
      `${CASCADE}  stt: { name: whisper.cpp }\n  llm: { name: ollama }\n  tts: { name: playht }\n`,
    );
    const out = await new Deno.Command("deno", {
      args: [
        "run",
        "--no-prompt",
        "--allow-read",
        "--allow-env",
        "--allow-net=127.0.0.1",
        "server/main.ts",
        "--config",
        `${dir}/agent.yaml`,
        "--port",
        "0",
      ],
      env: { NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 2, stderr);
    assert.match(stderr, /providers\.tts\.name: playht: not yet wired \(wired tts providers: /);
    assert.equal(stderr.includes("PLAYHT_API_KEY"), false, stderr);
    assert.equal(stderr.includes("    at "), false, "no stack trace");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
