import assert from "node:assert/strict";
import { formatConfigProblems, loadConfig } from "../server/config.ts";
import { at, GRAPH, parse, problems, SIP_OK, yaml } from "./_server_config_helpers.ts";

Deno.test("config: examples/agent.yaml loads with the echo provider and its graph", async () => {
  const res = await loadConfig("examples/agent.yaml");
  assert.ok(res.ok, res.ok ? "" : formatConfigProblems(res.problems));
  const c = res.config;
  assert.equal(c.pipeline, "s2s");
  assert.deepEqual(c.providers.realtime, { name: "echo", options: {} });
  assert.equal(c.agent.kind, "graph");
  if (c.agent.kind === "graph") {
    assert.equal(c.agent.graphFile, "examples/echo_graph.yaml");
    assert.equal(c.agent.spec.start, "chat");
    assert.equal(res.graph, c.agent.spec);
    assert.match(c.agent.greeting ?? "", /\{\{caller_name\}\}/);
  }
  assert.deepEqual({ ...c.server, guard: undefined }, {
    host: "127.0.0.1",
    port: 6210,
    trustedProxies: [],
    guard: undefined,
  });
  assert.equal(c.server.guard.enabled, true);
  assert.equal(c.recording.enabled, false);
  assert.equal(c.configFile, "examples/agent.yaml");
});

Deno.test("config: a minimal JSON config gets every default", async () => {
  const text = JSON.stringify({
    agent: {
      graph: {
        start: "a",
        nodes: [
          { id: "a", prompt: "Hi", transitions: [{ name: "go", description: "go", target: "b" }] },
          { id: "b", terminal: true },
        ],
      },
    },
    providers: { realtime: { name: "echo" } },
  });
  const res = await parse(text, "json");
  assert.ok(res.ok, res.ok ? "" : formatConfigProblems(res.problems));
  const { agent, ...rest } = res.config;
  assert.equal(agent.kind, "graph");
  assert.equal(agent.kind === "graph" ? agent.graphFile : "x", undefined);
  assert.deepEqual(rest, {
    baseDir: "cfg",
    pipeline: "s2s",
    providers: { realtime: { name: "echo", options: {} } },
    telephony: {
      carriers: [],
      webhookSecretsEnv: {},
      answeringMachine: { enabled: false, waitForBeep: true },
    },
    recording: { enabled: false, dir: "cfg/recordings" },
    limits: {
      maxCalls: 100,
      maxCallSeconds: 3600,
      maxBodyBytes: 65536,
      drainSeconds: 10,
      maxMessageAudioMs: 1000,
      mediaBurstMs: 1000,
      idleTimeoutSeconds: 120,
    },
    turns: {
      pauseMs: 200,
      completeMs: 200,
      unsureMs: 800,
      incompleteMs: 1500,
      speculate: true,
      bargeIn: { startMs: 200, holdMs: 300 },
    },
    audio: {},
    server: {
      host: "127.0.0.1",
      port: 6210,
      trustedProxies: [],
      guard: {
        enabled: true,
        headerTimeoutMs: 10_000,
        idleTimeoutMs: 30_000,
        bodyTimeoutMs: 30_000,
        maxHeaderBytes: 32_768,
        maxPending: 512,
        maxPendingPerClient: 16,
      },
    },
    api: {},
    playground: { enabled: true, mediaHosts: [], hosts: [] },
    observability: { errors: {}, tracing: { recordContent: false } },
    tools: { mcp: [] },
  });
});

Deno.test("config: every field maps to its camelCase form", async () => {
  const res = await parse(`
version: 1
agent:
  remote: { url: "http://127.0.0.1:8080", brain_config: { a: 1 }, timeout_ms: 900, token_env: BRAIN_TOKEN }
  greeting: Hello
pipeline: s2s
providers:
  realtime: { name: openai, model: gpt-realtime, voice: alloy, url: "wss://proxy.test/rt", options: { x: 1 } }
telephony:
  public_url: https://agent.example.com/
  carriers: [twilio, telnyx]
  webhook_secrets_env: { twilio: TWILIO_AUTH_TOKEN }
  sip:
    server: sip:trunk.example.com
    login: bob
    password_env: SIP_PASSWORD
    caller_id: "+15551230000"
    public_ip: 203.0.113.5
    sip_port: 5070
    rtp_port_base: 20000
    rtp_port_tries: 50
    allow_hosts: ["203.0.113.10"]
  answering_machine: { enabled: true, wait_for_beep: false }
recording: { enabled: true, dir: /var/flowcat/rec }
limits: { max_calls: 5, max_call_seconds: 60, max_body_bytes: 2048, drain_seconds: 0, idle_timeout_seconds: 0 }
turns:
  pause_ms: 250
  complete_ms: 300
  unsure_ms: 900
  incomplete_ms: 2000
  speculate: false
  barge_in_ms: 120
  barge_in_hold_ms: 0
server:
  host: 0.0.0.0
  port: 8000
  trusted_proxies: [10.0.0.5, "fd00::5"]
  cluster_secret_env: FLOWCAT_CLUSTER_SECRET
  guard:
    enabled: false
    header_timeout_ms: 5000
    idle_timeout_ms: 60000
    max_header_bytes: 16384
    max_pending: 100
    max_pending_per_client: 4
api: { token_env: FLOWCAT_API_TOKEN }
playground: { enabled: false, media_hosts: ["*"] }
observability:
  errors: { dsn: "https://k@o1.ingest.sentry.io/42", environment: staging }
  tracing: { record_content: true }
`);
  assert.ok(res.ok, res.ok ? "" : formatConfigProblems(res.problems));
  const c = res.config;
  assert.deepEqual(c.observability, {
    errors: { dsn: "https://k@o1.ingest.sentry.io/42", environment: "staging" },
    tracing: { recordContent: true },
  });
  assert.deepEqual(c.agent, {
    kind: "remote",
    url: "http://127.0.0.1:8080",
    brainConfig: { a: 1 },
    timeoutMs: 900,
    tokenEnv: "BRAIN_TOKEN",
    greeting: "Hello",
  });
  assert.equal(res.graph, undefined);
  assert.deepEqual(c.providers.realtime, {
    name: "openai",
    model: "gpt-realtime",
    voice: "alloy",
    url: "wss://proxy.test/rt",
    options: { x: 1 },
  });
  assert.deepEqual(c.telephony, {
    publicUrl: "https://agent.example.com",
    carriers: ["twilio", "telnyx"],
    webhookSecretsEnv: { twilio: "TWILIO_AUTH_TOKEN" },
    answeringMachine: { enabled: true, waitForBeep: false },
    sip: {
      server: "sip:trunk.example.com",
      login: "bob",
      passwordEnv: "SIP_PASSWORD",
      callerId: "+15551230000",
      publicIp: "203.0.113.5",
      sipPort: 5070,
      tcp: false,
      streamIdleSeconds: 300,
      rtpPortBase: 20000,
      rtpPortTries: 50,
      allowHosts: ["203.0.113.10"],
      register: true,
      registerExpires: 300,
      rtpSource: "latch",
      inbound: { allow: [], filter: false, refused: "reject" },
      keepalive: { mode: "crlf", intervalSeconds: 30 },
      srtp: "off",
      transfer: { bridgeFallback: true, dialTimeoutSeconds: 30 },
    },
  });
  assert.deepEqual(c.recording, { enabled: true, dir: "/var/flowcat/rec" });
  assert.deepEqual(c.limits, {
    maxCalls: 5,
    maxCallSeconds: 60,
    maxBodyBytes: 2048,
    drainSeconds: 0,
    maxMessageAudioMs: 1000,
    mediaBurstMs: 1000,
    idleTimeoutSeconds: 0,
  });
  assert.deepEqual(c.turns, {
    pauseMs: 250,
    completeMs: 300,
    unsureMs: 900,
    incompleteMs: 2000,
    speculate: false,
    bargeIn: { startMs: 120, holdMs: 0 },
  });
  assert.deepEqual(c.server, {
    host: "0.0.0.0",
    port: 8000,
    trustedProxies: ["10.0.0.5", "fd00::5"],
    clusterSecretEnv: "FLOWCAT_CLUSTER_SECRET",
    guard: {
      enabled: false,
      headerTimeoutMs: 5000,
      idleTimeoutMs: 60_000,
      bodyTimeoutMs: 30_000,
      maxHeaderBytes: 16_384,
      maxPending: 100,
      maxPendingPerClient: 4,
    },
  });
  assert.deepEqual(c.api, { tokenEnv: "FLOWCAT_API_TOKEN" });
  assert.deepEqual(c.playground, { enabled: false, mediaHosts: ["*"], hosts: [] });
});

Deno.test("config: turn windows out of order or range are refused, each with its path", async () => {
  const ps = await problems(yaml(`turns: { complete_ms: 900, unsure_ms: 400, pause_ms: -5 }`));
  const text = ps.map((p) => `${p.path}: ${p.message}`).join("\n");
  assert.match(text, /turns\.pause_ms: /);
  assert.match(text, /turns: windows must grow: complete_ms 900 <= unsure_ms 400/);
});

Deno.test("config: unknown keys get did-you-mean among the allowed keys", async () => {
  const ps = await problems(yaml(`pipline: s2s
server: { prot: 1 }
telephony: { sip: { server: "sip:t.example.com", login: a, password_env: P, caller_id: "+15550001111", sip_prot: 5061 } }
limits: { frobnicate: 1 }`));
  assert.equal(at(ps, "pipline").message, 'unknown key "pipline" (did you mean "pipeline"?)');
  at(ps, "server.prot", 'did you mean "port"?');
  at(ps, "telephony.sip.sip_prot", 'did you mean "sip_port"?');
  at(
    ps,
    "limits.frobnicate",
    "allowed here: max_calls, max_call_seconds, max_body_bytes, drain_seconds",
  );
});

Deno.test("config: unknown provider names get did-you-mean from the registry", async () => {
  const ps = await problems(
    yaml("", "agent: { graph: graph.yaml }\nproviders: { realtime: { name: opnai } }"),
  );
  assert.equal(ps.length, 1);
  assert.equal(
    formatConfigProblems(ps).split("\n")[1],
    '  providers.realtime.name: unknown provider "opnai" (did you mean "openai"?)',
  );
  const far = await problems(
    yaml("", "agent: { graph: graph.yaml }\nproviders: { realtime: { name: zzzzzz } }"),
  );
  at(far, "providers.realtime.name", "expected one of: echo, gemini, openai");
  const cascade = await problems(`agent: { graph: graph.yaml }
pipeline: cascaded
providers: { stt: { name: dipgram }, llm: { name: olama }, tts: { name: cartesia } }`);
  at(cascade, "providers.stt.name", 'unknown provider "dipgram" (did you mean "deepgram"?)');
  at(cascade, "providers.llm.name", 'unknown provider "olama" (did you mean "ollama"?)');
  assert.equal(cascade.length, 2, "cartesia is a known tts provider");
});

Deno.test("config: wrong types and out-of-range values name the field", async () => {
  const ps = await problems(yaml(`server: { port: abc, host: 7 }
limits: { max_calls: 0, drain_seconds: 1.5 }
recording: { enabled: "yes" }
telephony: { carriers: twilio }`));
  at(ps, "server.port", "expected a number, got a string");
  at(ps, "server.host", "expected a string, got an integer");
  at(ps, "limits.max_calls", "must be at least 1");
  at(ps, "limits.drain_seconds", "expected an integer, got a number");
  at(ps, "recording.enabled", "expected true or false, got a string");
  at(ps, "telephony.carriers", "expected a list, got a string");
  const pipeline = await problems(yaml("pipeline: s2"));
  at(pipeline, "pipeline", 'unknown pipeline "s2" (did you mean "s2s"?)');
});

Deno.test("config: missing required fields say what to write", async () => {
  const ps = await problems("providers: { realtime: {} }\n");
  at(ps, "agent", "is missing (add agent.graph");
  at(
    ps,
    "providers.realtime.name",
    "is missing (a realtime provider: echo, gemini, openai, xai, ultravox, nova-sonic, azure or openai-compatible)",
  );
  const sip = await problems(yaml("telephony: { sip: { server: sip:t.example.com } }"));
  at(sip, "telephony.sip.login", "is missing");
  at(sip, "telephony.sip.password_env", "SIP_PASSWORD");
  at(sip, "telephony.sip.caller_id", "E.164");
  const remote = await problems(
    yaml("", "agent: { remote: { timeout_ms: 5 } }\nproviders: { realtime: { name: echo } }"),
  );
  at(remote, "agent.remote.url", "is missing (the remote brain's base URL");
});

Deno.test("config: pipeline and providers must match", async () => {
  const s2s = await problems("agent: { graph: graph.yaml }\nproviders: { stt: { name: x } }\n");
  at(s2s, "providers.realtime", "pipeline s2s needs a realtime provider (set pipeline: cascaded");
  at(s2s, "providers.stt", "is not used by pipeline s2s");
  const none = await problems("agent: { graph: graph.yaml }\n");
  at(none, "providers.realtime", "add providers.realtime.name: echo");
  const cascaded = await problems(yaml("pipeline: cascaded"));
  at(cascaded, "providers.stt", "pipeline cascaded needs stt, llm and tts");
  at(cascaded, "providers.llm", "pipeline cascaded needs");
  at(cascaded, "providers.tts", "pipeline cascaded needs");
  at(cascaded, "providers.realtime", "is not used by pipeline cascaded");
});

Deno.test("config: a missing graph file is one clear problem", async () => {
  const ps = await problems(
    yaml("", "agent: { graph: nope.yaml }\nproviders: { realtime: { name: echo } }"),
  );
  assert.deepEqual(ps.map((p) => p.path), ["agent.graph"]);
  assert.equal(
    ps[0].message,
    `graph file "cfg/nope.yaml" not found (paths are relative to the config file's directory "cfg")`,
  );
});

Deno.test("config: problems inside the graph file carry a prefixed path", async () => {
  const ps = await problems(
    yaml("", "agent: { graph: bad_graph.yaml }\nproviders: { realtime: { name: echo } }"),
  );
  at(ps, "agent.graph(cfg/bad_graph.yaml).nodes[0].transitions[0].target", '"nowhere"');
  const inline = await problems(
    yaml(
      "",
      "agent: { graph: { start: a, nodes: [{ id: a, prompt: x }] } }\nproviders: { realtime: { name: echo } }",
    ),
  );
  at(inline, "agent.graph.nodes[0].transitions", "not terminal");
  const wrong = await problems(
    yaml("", "agent: { graph: [1] }\nproviders: { realtime: { name: echo } }"),
  );
  at(wrong, "agent.graph", "got a list");
});

Deno.test("config: agent needs exactly one of graph and remote; vars and greeting match the graph", async () => {
  const both = await problems(
    yaml(
      "",
      "agent: { graph: graph.yaml, remote: { url: 'http://127.0.0.1:8080' } }\nproviders: { realtime: { name: echo } }",
    ),
  );
  at(both, "agent", "has both graph and remote");
  const neither = await problems(
    yaml("", "agent: { vars: {} }\nproviders: { realtime: { name: echo } }"),
  );
  at(neither, "agent", "names no brain");
  const vars = await problems(
    yaml(
      "",
      "agent: { graph: graph.yaml, vars: { caler_name: Sam }, greeting: 'Hi {{callr_name}}' }\nproviders: { realtime: { name: echo } }",
    ),
  );
  at(
    vars,
    "agent.vars.caler_name",
    'the graph declares no variable "caler_name" (did you mean "caller_name"?)',
  );
  at(vars, "agent.greeting", 'unknown variable {{callr_name}} (did you mean "caller_name"?)');
});

Deno.test("config: every problem is reported at once", async () => {
  const ps = await problems(`pipline: s2s
agent: { graph: bad_graph.yaml }
providers: { realtime: { name: opnai } }
telephony: { carriers: [twillio], sip: { ${
    SIP_OK.replace('"+15551230000"', '"12"')
  }, password: x } }
server: { port: -1 }
`);
  const paths = ps.map((p) => p.path);
  for (
    const want of [
      "pipline",
      "providers.realtime.name",
      "telephony.carriers[0]",
      "telephony.sip.caller_id",
      "telephony.sip.password",
      "server.port",
      "agent.graph(cfg/bad_graph.yaml).nodes[0].transitions[0].target",
      "agent.graph(cfg/bad_graph.yaml).nodes[1]",
    ]
  ) assert.ok(paths.includes(want), `${want} missing from ${paths.join(", ")}`);
  assert.equal(ps.length, 8, formatConfigProblems(ps));
  // In the order the document has them: pipline first, then agent, ...
  assert.deepEqual(
    [...new Set(paths.map((p) => p.split(/[.[(]/)[0]))],
    ["pipline", "agent", "providers", "telephony", "server"],
  );
});

Deno.test("config: syntax errors give the line, not a stack trace", async () => {
  const ps = await problems("agent:\n  graph: graph.yaml\n providers: [\n");
  assert.equal(ps.length, 1);
  assert.equal(ps[0].path, "");
  assert.match(ps[0].message, /^YAML syntax error at line 3, column \d+: /);
  assert.ok(!ps[0].message.includes("\n"));
  const json = await problems('{"agent": {"graph": "graph.yaml"},}', "json");
  assert.match(json[0].message, /^JSON syntax error: /);
  const empty = await problems("# nothing\n");
  at(empty, "", "the config is empty");
  const list = await problems("- a\n- b\n");
  at(list, "", "expected a mapping of settings, got a list");
});

Deno.test("config: loadConfig reports a missing file as one problem and sniffs JSON", async () => {
  const missing = await loadConfig(".tmp/server_config_test/nope.yaml");
  assert.equal(missing.ok, false);
  if (!missing.ok) {
    assert.equal(missing.problems.length, 1);
    assert.match(
      formatConfigProblems(missing.problems),
      /^config: 1 problem\n {2}\(root\): config file ".tmp\/server_config_test\/nope.yaml" not found \(pass --config/,
    );
  }
  const files: Record<string, string> = {
    "conf/agent": '{"agent": {"graph": "g.yaml"}, "providers": {"realtime": {"name": "echo"}}}',
    "conf/g.yaml": GRAPH,
  };
  const res = await loadConfig("conf/agent", {
    readFile: (p) =>
      Object.hasOwn(files, p)
        ? Promise.resolve(files[p])
        : Promise.reject(new Deno.errors.NotFound(p)),
  });
  assert.ok(res.ok, res.ok ? "" : formatConfigProblems(res.problems));
  assert.equal(res.config.agent.kind === "graph" ? res.config.agent.graphFile : "", "conf/g.yaml");
});

Deno.test("config: formatConfigProblems prints a heading and path: message (hint) lines", () => {
  const text = formatConfigProblems(
    [
      { path: "pipline", message: 'unknown key "pipline" (did you mean "pipeline"?)' },
      { path: "", message: "the config is empty" },
    ],
    "a.yaml",
  );
  assert.equal(
    text,
    'config a.yaml: 2 problems\n  pipline: unknown key "pipline" (did you mean "pipeline"?)\n  (root): the config is empty',
  );
});

Deno.test("config: a trusted proxy must be an IP address", async () => {
  const ps = await problems(yaml(`server: { trusted_proxies: [lb.example.com] }`));
  assert.match(
    at(ps, "server.trusted_proxies[0]").message,
    /must be an IP address like 10\.0\.0\.5/,
  );
});

Deno.test("config: examples/deploy/agent-host.yaml loads, behind a proxy with a shared secret", async () => {
  const res = await loadConfig("examples/deploy/agent-host.yaml");
  assert.ok(res.ok, res.ok ? "" : formatConfigProblems(res.problems));
  assert.deepEqual(res.config.server.trustedProxies, ["10.0.0.5"]);
  assert.equal(res.config.server.clusterSecretEnv, "FLOWCAT_CLUSTER_SECRET");
  assert.equal(res.config.playground.enabled, false);
});
