/**
 * `deno task compile`: the argv it hands `deno compile` per config (scoped grants, embedded
 * files, left-out providers), the stub a left-out provider becomes, and the real command's
 * failure when denort cannot be had (exit 2, one line naming DENORT_BIN, no stack trace).
 */
import assert from "node:assert/strict";
import { loadConfig } from "../server/config.ts";
import type { AgentServerConfig } from "../server/config_types.ts";
import {
  compileArgv,
  compileEntries,
  compileImportMap,
  compileIncludes,
  embeddedLeaks,
  writeBuildFiles,
} from "../tools/compile.ts";
import { runDeno, statOutside } from "../tools/deno_child.ts";
import { denortArchive, denortFailure } from "../tools/denort.ts";
import { providerModules } from "../tools/provider_modules.ts";
import { hasUnshare } from "./_offline.ts";

/** The flags `deno task compile` runs the tool with (deno.json). */
const TASK_FLAGS = [
  "--allow-read=.",
  "--allow-write=dist,.tmp",
  "--allow-run=deno",
  "--allow-env=DENORT_BIN",
  "--ignore-env",
];
const OUT = ".tmp/compile_test";

async function config(path: string): Promise<AgentServerConfig> {
  const loaded = await loadConfig(path);
  assert.ok(loaded.ok, `${path} loads`);
  return loaded.config;
}

async function geminiConfig(): Promise<string> {
  await Deno.mkdir(".tmp", { recursive: true });
  const text = (await Deno.readTextFile("examples/agent.yaml"))
    .replace("name: echo", "name: gemini")
    .replace("graph: echo_graph.yaml", "graph: ../examples/echo_graph.yaml");
  await Deno.writeTextFile(".tmp/compile_gemini.yaml", text);
  return ".tmp/compile_gemini.yaml";
}

function flag(argv: readonly string[], name: string): string[] {
  const f = argv.find((a) => a.startsWith(`${name}=`));
  return f === undefined ? [] : f.slice(name.length + 1).split(",");
}

Deno.test("compile argv: echo config is loopback/wildcard only, playground embedded, no key", async () => {
  const cfg = await config("examples/agent.yaml");
  const [server, demo, brain] = compileEntries(cfg, "examples/agent.yaml");
  const argv = compileArgv(server, {
    out: "dist/bin",
    importMap: "dist/bin/.build/import_map.json",
    include: compileIncludes(server, cfg),
  });
  // The guard's hop without a port (it covers the listen port): an executable's worker count,
  // and so its hop ports, are chosen when it runs.
  assert.deepEqual(flag(argv, "--allow-net").sort(), ["0.0.0.0", "127.0.0.1"]);
  // Embedded files need no grant; the config stays a file read at run time.
  assert.deepEqual(flag(argv, "--allow-read"), ["examples/agent.yaml", "examples/echo_graph.yaml"]);
  assert.ok(!flag(argv, "--allow-env").some((e) => e.endsWith("_API_KEY")));
  assert.ok(!argv.some((a) => a.includes("server/playground")), "the playground is a module");
  assert.ok(argv.includes("--include=server/worker.ts"), "--workers needs the worker embedded");
  assert.ok(argv.includes("--output=dist/bin/flowcat-server"));
  assert.ok(!argv.some((a) => a === "-A" || a === "--allow-all"));
  const main = argv.indexOf("server/main.ts");
  assert.deepEqual(argv.slice(main), ["server/main.ts", "--config", "examples/agent.yaml"]);
  assert.deepEqual(
    flag(compileArgv(brain, { out: "o", importMap: "m", include: [] }), "--allow-net"),
    [
      "127.0.0.1:8080",
    ],
  );
  assert.deepEqual(demo.flags.filter((f) => f.startsWith("--allow-read")), []);
});

Deno.test("compile argv: a gemini config grants its host and key and leaves echo and espeak out", async () => {
  const path = await geminiConfig();
  const cfg = await config(path);
  const [server] = compileEntries(cfg, path);
  const argv = compileArgv(server, { out: "o", importMap: "m", include: [] });
  assert.ok(flag(argv, "--allow-net").includes("generativelanguage.googleapis.com:443"));
  assert.ok(!flag(argv, "--allow-net").includes("api.openai.com:443"));
  assert.ok(flag(argv, "--allow-env").includes("GEMINI_API_KEY"));
  const mods = providerModules(cfg);
  assert.deepEqual(mods.needed, ["providers/google/gemini_live.ts"]);
  for (const m of ["providers/echo/realtime.ts", "providers/espeak/tts.ts"]) {
    assert.ok(mods.leftOut.includes(m), m);
  }
  for (const m of [...mods.needed, ...mods.leftOut]) assert.ok((await Deno.stat(m)).isFile, m);
});

Deno.test("compile argv: echo keeps espeak; the cascaded example keeps its three families", async () => {
  const echo = providerModules(await config("examples/agent.yaml"));
  assert.deepEqual(echo.needed.toSorted(), [
    "providers/echo/realtime.ts",
    "providers/espeak/tts.ts",
  ]);
  assert.ok(echo.leftOut.includes("providers/google/gemini_live.ts"));
  assert.ok(echo.leftOut.includes("providers/anthropic/llm.ts"));
  assert.ok(echo.leftOut.includes("server/mcp/toolbox.ts"), "no tools.mcp: no MCP client");
  const withMcp = await config("examples/agent.yaml");
  withMcp.tools.mcp.push({
    name: "m",
    transport: "http",
    url: "http://127.0.0.1:1/",
    timeoutMs: 1000,
  });
  assert.ok(providerModules(withMcp).needed.includes("server/mcp/toolbox.ts"));
  const cascaded = providerModules(await config("examples/cascaded_local.yaml"));
  assert.equal(cascaded.needed.length, 3, cascaded.needed.join(", "));
  assert.ok(cascaded.needed.some((m) => /^providers\/[a-z]+\/(stt|whisper_http)\.ts$/.test(m)));
  assert.ok(cascaded.needed.some((m) => /^providers\/[a-z]+\/(llm|chat)\.ts$/.test(m)));
  assert.ok(cascaded.needed.some((m) => /^providers\/[a-z]+\/tts\.ts$/.test(m)));
});

Deno.test("compile import map: left-out modules point at the stub, npm imports kept", () => {
  const map = compileImportMap(
    { yaml: "npm:yaml@^2.9.1" },
    ["providers/anthropic/llm.ts"],
    "./left_out_provider.ts",
    "/repo",
  );
  assert.deepEqual(map.imports, {
    yaml: "npm:yaml@^2.9.1",
    "file:///repo/providers/anthropic/llm.ts": "./left_out_provider.ts",
  });
});

Deno.test("compile listing: a left-out module still listed is a leak", () => {
  const listing =
    "├─┬ providers\n│ ├── realtime/echo.ts (29KB)\n│ └─┬ espeak\n│   └── tts.ts (28KB)\n";
  assert.deepEqual(embeddedLeaks(listing, ["providers/google/gemini_live.ts"]), []);
  assert.deepEqual(embeddedLeaks(listing, ["providers/espeak/tts.ts"]), [
    "providers/espeak/tts.ts",
  ]);
  // Another vendor's tts.ts is not this one.
  assert.deepEqual(embeddedLeaks(listing, ["providers/openai/tts.ts"]), []);
  assert.deepEqual(embeddedLeaks("│ ├── google/* (115KB)\n", ["providers/google/gemini_llm.ts"]), [
    "providers/google/gemini_llm.ts",
  ]);
});

Deno.test("compile: a left-out provider named at run time is one config line, exit 2", async () => {
  const gemini = await geminiConfig();
  const echo = providerModules(await config("examples/agent.yaml"));
  const importMap = await writeBuildFiles(OUT, "examples/agent.yaml", echo.leftOut);
  const run = await new Deno.Command("deno", {
    args: [
      "run",
      `--import-map=${importMap}`,
      "--allow-read=.",
      "--allow-env=GEMINI_API_KEY",
      "--ignore-env",
      "server/main.ts",
      "--config",
      gemini,
    ],
    env: { GEMINI_API_KEY: "test-key" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const err = new TextDecoder().decode(run.stderr);
  assert.equal(run.code, 2, err);
  assert.match(
    err,
    /this provider is not in this executable \(compiled for examples\/agent\.yaml\)/,
  );
  assert.doesNotMatch(err, /\n\s+at /);
});

function assertDenortLine(r: { code: number; stderr: string }, reason: RegExp): void {
  assert.equal(r.code, 2, r.stderr);
  const lines = r.stderr.trim().split("\n");
  assert.equal(lines.length, 1, r.stderr);
  assert.match(lines[0], /^compile: no denort for Deno /);
  assert.match(lines[0], /DENORT_BIN=\/path\/to\/denort; see docs\/deploy\.md$/);
  assert.match(lines[0], reason);
  assert.doesNotMatch(r.stderr, /\n\s+at |Stack backtrace/);
}

Deno.test("compile: DENORT_BIN naming a missing file is one clear line, exit 2", async () => {
  const out = await new Deno.Command("deno", {
    args: ["run", ...TASK_FLAGS, "tools/compile.ts", "--out", OUT],
    env: { DENORT_BIN: "/nonexistent/denort" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const r = { code: out.code, stderr: new TextDecoder().decode(out.stderr) };
  assertDenortLine(r, /DENORT_BIN=\/nonexistent\/denort does not exist/);
  assert.match(new TextDecoder().decode(out.stdout), /\[2\/5\] denort: DENORT_BIN=/);
});

async function denortCached(): Promise<boolean> {
  const info = await runDeno(["info", "--json"]);
  const denoDir = (JSON.parse(info.stdout) as { denoDir: string }).denoDir;
  const zip = `${denoDir}/dl/release/v${Deno.version.deno}/${denortArchive().name}`;
  return (await statOutside(zip)).exists;
}

Deno.test("compile: with dl.deno.land unreachable and no cached denort, exit 2 naming DENORT_BIN", async () => {
  if (await denortCached()) {
    console.warn("skip: denort is cached here, so deno compile never downloads it");
    return;
  }
  if (!(await hasUnshare())) {
    console.warn("skip: unshare -n unavailable (cannot cut the network for the download)");
    return;
  }
  const out = await new Deno.Command("unshare", {
    args: ["-n", "deno", "run", ...TASK_FLAGS, "tools/compile.ts", "--out", OUT],
    // No DENORT_BIN at all: Deno's own download path.
    clearEnv: true,
    env: Object.fromEntries(
      ["PATH", "HOME", "DENO_DIR"].flatMap((k) => {
        const v = Deno.env.get(k);
        return v === undefined ? [] : [[k, v]];
      }),
    ),
    stdout: "piped",
    stderr: "piped",
  }).output();
  assertDenortLine(
    { code: out.code, stderr: new TextDecoder().decode(out.stderr) },
    /\(download failed: /,
  );
});

Deno.test("denort failure: deno compile's download error becomes a short reason", () => {
  const stderr = "error: Writing deno compile executable to temporary file 'x'\n\nCaused by:\n" +
    "    0: Setting up base binary.\n" +
    "    1: error sending request for url (https://dl.deno.land/release/v2.9.6/" +
    "denort-x86_64-unknown-linux-gnu.zip): client error (Connect): dns error: failed\n" +
    "    2: client error (Connect)\n";
  assert.equal(denortFailure(stderr), "download failed: client error (Connect): dns error: failed");
  assert.equal(denortFailure("error: Module not found"), undefined);
});
