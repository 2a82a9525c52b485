/**
 * Knowing before the first call: `deno task start --check` (server/launch.ts -> server/main.ts
 * under the config's computed permissions) probes every provider and prints a table, exiting 1
 * on any failure; a normal start warns about each local provider that does not answer, naming
 * its URL and what to start. The servers of examples/cascaded_local.yaml are absent here; the
 * ok case runs fake local servers (Deno.serve on 127.0.0.1).
 */
import assert from "node:assert/strict";
import { parseConfigText } from "../server/config.ts";
import { formatCheckTable } from "../server/check.ts";
import { listsModel, probe, probeTargets, shownUrl } from "../server/probes.ts";
import { permissionFlags } from "../server/permissions.ts";
import { startTaskArgs } from "./_server_child.ts";

const DIR = ".tmp/server_check_test";
const LOCAL = "examples/cascaded_local.yaml";
/** The endpoints examples/cascaded_local.yaml dials: whisper.cpp and Ollama. */
const LOCAL_PORTS = [8080, 11434];

/** True when nothing listens on the example's ports (another test may hold one briefly). */
function examplePortsFree(): boolean {
  for (const port of LOCAL_PORTS) {
    try {
      Deno.listen({ hostname: "127.0.0.1", port }).close();
    } catch {
      return false;
    }
  }
  return true;
}

/** Run `deno task start`'s launcher with `args`; its output and exit code. */
async function launcher(args: string[], env: Record<string, string> = {}) {
  const out = await new Deno.Command("deno", {
    args: [...startTaskArgs(), ...args],
    env: { NO_COLOR: "1", ...env },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

async function writeConfig(name: string, text: string): Promise<string> {
  await Deno.mkdir(DIR, { recursive: true });
  await Deno.copyFile("examples/echo_graph.yaml", `${DIR}/echo_graph.yaml`);
  const path = `${DIR}/${name}`;
  await Deno.writeTextFile(path, text);
  return path;
}

Deno.test({
  name: "check: the local example with its servers absent fails, naming each URL",
  ignore: !examplePortsFree(),
  async fn() {
    const r = await launcher(["--config", LOCAL, "--check"]);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    const rows = r.stdout.split("\n");
    assert.match(rows[0], /^provider\s+kind\s+url\s+result\s+latency\s+reason$/);
    const row = (p: string) => rows.find((l) => l.startsWith(`${p} `)) ?? "";
    assert.match(
      row("whisper.cpp"),
      /stt\s+http:\/\/127\.0\.0\.1:8080\s+FAIL .*connection refused/,
    );
    assert.match(row("whisper.cpp"), /start: whisper-server/);
    assert.match(row("ollama"), /llm\s+http:\/\/127\.0\.0\.1:11434\/v1\/models\s+FAIL/);
    assert.match(row("ollama"), /start: ollama serve/);
    assert.match(row("espeak"), /tts\s+\(in process\)\s+ok/);
    assert.match(r.stdout, /2 of 3 provider\(s\) failed/);
  },
});

Deno.test({
  name: "check: a start with the local servers absent warns about each, and still serves",
  ignore: !examplePortsFree(),
  async fn() {
    const child = new Deno.Command("deno", {
      args: [
        ...startTaskArgs(),
        "--config",
        LOCAL,
        "--port",
        "0",
      ],
      env: { NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const dec = new TextDecoder();
    let out = "";
    let err = "";
    const outDone = (async () => {
      for await (const c of child.stdout) out += dec.decode(c);
    })();
    const errDone = (async () => {
      for await (const c of child.stderr) err += dec.decode(c);
    })();
    const until = Date.now() + 20_000;
    while (
      Date.now() < until &&
      !(out.includes("Flowcat agent server on") &&
        (err.match(/provider not reachable/g) ?? []).length >= 2)
    ) {
      await new Promise((r) => setTimeout(r, 50));
    }
    child.kill("SIGTERM");
    await child.status;
    await outDone;
    await errDone;
    assert.match(
      out,
      /Flowcat agent server on http:\/\/127\.0\.0\.1:\d+\//,
      "start is not held up",
    );
    const warns = err.split("\n").filter((l) => l.includes("provider not reachable"));
    assert.equal(warns.length, 2, err);
    const stt = warns.find((l) => l.includes('"provider":"whisper.cpp"')) ?? "";
    assert.match(stt, /^\[warn\] flowcat: /);
    assert.match(stt, /"url":"http:\/\/127\.0\.0\.1:8080"/);
    assert.match(stt, /"start":"whisper-server -m ggml-base\.en\.bin --port 8080"/);
    const llm = warns.find((l) => l.includes('"provider":"ollama"')) ?? "";
    assert.match(llm, /"url":"http:\/\/127\.0\.0\.1:11434\/v1\/models"/);
    assert.match(llm, /"start":"ollama serve"/);
  },
});

/** Fake local servers: whisper.cpp's root page and Ollama's OpenAI-style model list. */
function fakeLocalServers(models: string[]) {
  const whisper = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () =>
      new Response("<html>whisper.cpp server</html>", { headers: { "content-type": "text/html" } }),
  );
  const seen: Request[] = [];
  const ollama = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
    seen.push(req);
    if (new URL(req.url).pathname !== "/v1/models") return new Response("404", { status: 404 });
    return Response.json({
      object: "list",
      data: models.map((id) => ({ id, object: "model", created: 1, owned_by: "library" })),
    });
  });
  return {
    whisper: `http://127.0.0.1:${whisper.addr.port}`,
    ollama: `http://127.0.0.1:${ollama.addr.port}/v1`,
    seen,
    close: async () => {
      await whisper.shutdown();
      await ollama.shutdown();
    },
  };
}

function localYaml(whisper: string, ollama: string, model = "llama3.2"): string {
  return `version: 1
agent: { graph: echo_graph.yaml }
pipeline: cascaded
providers:
  stt: { name: whisper.cpp, url: "${whisper}" }
  llm: { name: ollama, url: "${ollama}", model: ${model} }
  tts: { name: espeak }
`;
}

Deno.test("check: fake local servers answering pass, and the exit code is 0", async () => {
  const fakes = fakeLocalServers(["llama3.2:latest", "qwen3:0.6b"]);
  try {
    const path = await writeConfig("ok.yaml", localYaml(fakes.whisper, fakes.ollama));
    const r = await launcher(["--config", path, "--check"]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(
      r.stdout,
      /whisper\.cpp\s+stt\s+http:\/\/127\.0\.0\.1:\d+\s+ok\s+\d+ ms\s+HTTP 200/,
    );
    assert.match(
      r.stdout,
      /ollama\s+llm\s+\S+\/v1\/models\s+ok\s+\d+ ms\s+HTTP 200, model llama3\.2 loaded/,
    );
    assert.match(r.stdout, /all 3 provider\(s\) answered/);
  } finally {
    await fakes.close();
  }
});

Deno.test("check: a model the local server has not loaded fails with how to load it", async () => {
  const fakes = fakeLocalServers(["qwen3:0.6b"]);
  try {
    const path = await writeConfig("nomodel.yaml", localYaml(fakes.whisper, fakes.ollama));
    const r = await launcher(["--config", path, "--check"]);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(
      r.stdout,
      /ollama .*FAIL .*model llama3\.2 is not loaded \(ollama pull llama3\.2\)/,
    );
  } finally {
    await fakes.close();
  }
});

Deno.test("check: a cloud key is checked at a cheap endpoint, never shown; a missing one fails", async () => {
  const keys: (string | null)[] = [];
  const api = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
    keys.push(req.headers.get("authorization"));
    return req.headers.get("authorization") === "Bearer good-key"
      ? Response.json({ object: "list", data: [] })
      : Response.json({ error: { message: "Incorrect API key" } }, { status: 401 });
  });
  try {
    const path = await writeConfig(
      "cloud.yaml",
      `version: 1
agent: { graph: echo_graph.yaml }
pipeline: cascaded
providers:
  stt: { name: groq, url: "http://127.0.0.1:${api.addr.port}/openai/v1" }
  llm: { name: openai, url: "http://127.0.0.1:${api.addr.port}/v1" }
  tts: { name: espeak }
`,
    );
    const bad = await launcher(["--config", path, "--check"], {
      OPENAI_API_KEY: "sk-wrong-secret-value",
      GROQ_API_KEY: "good-key",
    });
    assert.equal(bad.code, 1, bad.stdout + bad.stderr);
    assert.match(
      bad.stdout,
      /openai\s+llm\s+.*FAIL .*key rejected \(HTTP 401; check OPENAI_API_KEY\)/,
    );
    assert.match(bad.stdout, /groq\s+stt\s+.*ok/);
    assert.ok(keys.includes("Bearer sk-wrong-secret-value"), "the key was sent to the endpoint");
    assert.ok(!(bad.stdout + bad.stderr).includes("sk-wrong-secret-value"), "and never printed");
    const missing = await launcher(["--config", path, "--check"], { GROQ_API_KEY: "good-key" });
    assert.equal(missing.code, 1);
    assert.match(missing.stdout, /openai\s+llm\s+.*FAIL\s+-\s+OPENAI_API_KEY is not set/);
  } finally {
    await api.shutdown();
  }
});

Deno.test("probes: targets for cloud families, realtime, the remote brain; URLs shown without secrets", async () => {
  const parsed = await parseConfigText(
    `version: 1
agent: { remote: { url: "http://127.0.0.1:9/brain", token_env: BRAIN_TOKEN } }
pipeline: cascaded
providers:
  stt: { name: deepgram }
  llm: { name: anthropic }
  tts: { name: elevenlabs }
`,
    "yaml",
    ".",
  );
  assert.ok(parsed.ok, JSON.stringify(!parsed.ok && parsed.problems));
  const t = probeTargets(parsed.config);
  assert.deepEqual(
    t.map((x) => [x.service, x.provider, x.url, x.local, x.keyEnv]),
    [
      ["stt", "deepgram", "https://api.deepgram.com/v1/projects", false, "DEEPGRAM_API_KEY"],
      ["llm", "anthropic", "https://api.anthropic.com/v1/models", false, "ANTHROPIC_API_KEY"],
      ["tts", "elevenlabs", "https://api.elevenlabs.io/v1/models", false, "ELEVENLABS_API_KEY"],
      ["brain", "remote", "http://127.0.0.1:9/brain/health", true, "BRAIN_TOKEN"],
    ],
  );
  assert.deepEqual(t[1].request!.headers("k"), {
    "anthropic-version": "2023-06-01",
    "x-api-key": "k",
  });
  assert.deepEqual(t[0].request!.headers("k"), { authorization: "Token k" });
  assert.equal(shownUrl("https://user:pw@example.com/v1?key=SECRET"), "https://example.com/v1");
  const gemini = await parseConfigText(
    `version: 1
agent: { graph: cfg.yaml }
providers: { realtime: { name: gemini } }`.replace(
      "graph: cfg.yaml",
      "remote: { url: 'http://h' }",
    ),
    "yaml",
    ".",
  );
  assert.ok(gemini.ok);
  const g = probeTargets(gemini.config)[0];
  assert.equal(g.url, "https://generativelanguage.googleapis.com/v1beta/models");
  assert.deepEqual(g.request!.headers("k"), { "x-goog-api-key": "k" });
  // Realtime providers outside OpenAI and Gemini are checked on their own API.
  for (
    const [name, url, headers] of [
      ["xai", "https://api.x.ai/v1/models", { authorization: "Bearer k" }],
      ["ultravox", "https://api.ultravox.ai/api/accounts/me", { "x-api-key": "k" }],
    ] as const
  ) {
    const c = await parseConfigText(
      `version: 1\nagent: { remote: { url: 'http://h' } }\nproviders: { realtime: { name: ${name} } }`,
      "yaml",
      ".",
    );
    assert.ok(c.ok, name);
    const r = probeTargets(c.config)[0];
    assert.deepEqual([r.url, r.keyEnv, r.request!.headers("k")], [
      url,
      `${name.toUpperCase()}_API_KEY`,
      headers,
    ]);
  }
  // A brain that does not answer, through an injected fetch: the reason names the cause.
  const refused = await probe(t[3], {
    env: () => "tok",
    fetch: () =>
      Promise.reject(new TypeError("error sending request: Connection refused (os error 111)")),
  });
  assert.deepEqual([refused.ok, refused.reason], [false, "connection refused"]);
  assert.equal(listsModel({ data: [{ id: "llama3.2:latest" }] }, "llama3.2"), true);
  assert.equal(listsModel({ nothing: 1 }, "x"), undefined);
});

Deno.test("check: the table aligns its columns and adds what to start to a refused local server", () => {
  const table = formatCheckTable([
    {
      target: {
        service: "stt",
        provider: "whisper.cpp",
        url: "http://127.0.0.1:8080",
        local: true,
        keyRequired: false,
        expect: "reachable",
        start: "whisper-server",
      },
      ok: false,
      reason: "connection refused",
      latencyMs: 1,
    },
    {
      target: {
        service: "tts",
        provider: "espeak",
        url: "(in process)",
        local: true,
        inProcess: true,
        keyRequired: false,
        expect: "ok",
      },
      ok: true,
      reason: "in process",
    },
  ]);
  assert.equal(
    table,
    [
      "provider     kind  url                    result  latency  reason",
      "whisper.cpp  stt   http://127.0.0.1:8080  FAIL    1 ms     connection refused; start: whisper-server",
      "espeak       tts   (in process)           ok      -        in process",
    ].join("\n"),
  );
});

Deno.test("permissions: local providers' default endpoints are granted without the playground", async () => {
  const parsed = await parseConfigText(
    `version: 1
agent: { remote: { url: "http://127.0.0.1:8081" } }
pipeline: cascaded
providers:
  stt: { name: whisper.cpp }
  llm: { name: ollama }
  tts: { name: piper }
playground: { enabled: false }
`,
    "yaml",
    ".",
  );
  assert.ok(parsed.ok);
  const net = permissionFlags(parsed.config, { configPath: "c.yaml" })
    .find((f) => f.startsWith("--allow-net="));
  assert.equal(
    net,
    "--allow-net=127.0.0.1:6210,127.0.0.1:6211,127.0.0.1:8080,127.0.0.1:11434,127.0.0.1:5000,127.0.0.1:8081",
  );
});

Deno.test("probes: the WebSocket STT vendors are probed with their keys or for reachability", async () => {
  const expected: [string, string, string, Record<string, string>][] = [
    [
      "assemblyai",
      "https://streaming.assemblyai.com/v3/token",
      "ok",
      { authorization: "k" },
    ],
    ["gladia", "https://api.gladia.io/v2/live", "ok", { "x-gladia-key": "k" }],
    ["cartesia", "https://api.cartesia.ai/voices", "ok", {
      "cartesia-version": "2026-03-01",
      "x-api-key": "k",
    }],
    ["elevenlabs", "https://api.elevenlabs.io/v1/models", "ok", { "xi-api-key": "k" }],
    ["speechmatics", "https://eu2.rt.speechmatics.com", "reachable", {}],
    ["soniox", "https://stt-rt.soniox.com", "reachable", {}],
  ];
  for (const [name, url, expect, headers] of expected) {
    const parsed = await parseConfigText(
      `version: 1
agent: { remote: { url: "http://127.0.0.1:9/brain" } }
pipeline: cascaded
providers: { stt: { name: ${name} }, llm: { name: anthropic }, tts: { name: elevenlabs } }
`,
      "yaml",
      ".",
    );
    assert.ok(parsed.ok, JSON.stringify(!parsed.ok && parsed.problems));
    const t = probeTargets(parsed.config)[0];
    assert.equal(t.notWired, undefined, name);
    assert.deepEqual([t.url, t.expect], [url, expect], name);
    assert.deepEqual(t.request!.headers("k"), headers, name);
  }
});
