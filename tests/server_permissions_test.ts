import assert from "node:assert/strict";
import {
  type AgentServerConfig,
  formatConfigProblems,
  loadConfig,
  parseConfigText,
} from "../server/config.ts";
import {
  denoCommand,
  netHost,
  permissionCommand,
  permissionFlags,
  urlHostPort,
} from "../server/permissions.ts";
import { MAX_EXACT_BIND_PORTS } from "../server/sip_bind_grants.ts";
import { serverPermissionOptions } from "../server/main.ts";

const GRAPH = `
start: a
nodes:
  - id: a
    prompt: Hi
    transitions: [{ name: go, description: go on, target: b }]
  - id: b
    terminal: true
`;

/** Config text validated as if it were the file `<dir>/agent.yaml` next to a `graph.yaml`. */
async function config(text: string, dir = "deploy"): Promise<AgentServerConfig> {
  const res = await parseConfigText(text, "yaml", dir, {
    configFile: `${dir}/agent.yaml`,
    readFile: (p) =>
      p === `${dir}/graph.yaml`
        ? Promise.resolve(GRAPH)
        : Promise.reject(new Deno.errors.NotFound(p)),
  });
  assert.ok(res.ok, res.ok ? "" : formatConfigProblems(res.problems));
  return res.config;
}

const REALTIME_KNOBS = [
  "FLOWCAT_VOICE",
  "FLOWCAT_VAD_START_SENSITIVITY",
  "FLOWCAT_VAD_END_SENSITIVITY",
  "FLOWCAT_VAD_PREFIX_PADDING_MS",
  "FLOWCAT_VAD_SILENCE_DURATION_MS",
].join(",");

const GEMINI_TWILIO = `
agent: { graph: graph.yaml }
providers: { realtime: { name: gemini } }
telephony:
  public_url: https://agent.example.com
  carriers: [twilio]
  webhook_secrets_env: { twilio: TWILIO_AUTH_TOKEN }
recording: { enabled: true, dir: rec }
server: { host: 0.0.0.0, port: 8080 }
playground: { enabled: false }
`;

const OPENAI_SIP_REMOTE = `
agent: { remote: { url: "http://127.0.0.1:8080", token_env: BRAIN_TOKEN } }
providers: { realtime: { name: openai } }
telephony:
  sip:
    server: sip:trunk.example.com
    login: flowcat
    password_env: SIP_PASSWORD
    caller_id: "+15551230000"
    allow_hosts: ["203.0.113.10"]
api: { token_env: FLOWCAT_API_TOKEN }
playground: { enabled: false }
`;

/** The SIP port and the 200 even RTP ports from 16000 (each with its RTCP port) the defaults bind. */
const RTP_DEFAULT = [
  "0.0.0.0:5060",
  ...Array.from({ length: 200 }, (_, i) => [`0.0.0.0:${16000 + 2 * i}`, `0.0.0.0:${16001 + 2 * i}`])
    .flat(),
]
  .join(",");

Deno.test("permissions: SIP binds get exact ports: SIP, SIP TLS, each RTP port; a long range the address", async () => {
  const sip = (extra: string, playground = false) =>
    config(`
agent: { graph: graph.yaml }
providers: { realtime: { name: echo } }
playground: { enabled: ${playground} }
telephony:
  sip:
    server: sip:trunk.example.com
    login: bob
    password_env: SIP_PASSWORD
    caller_id: "+15551230000"
    public_ip: 203.0.113.5
    ${extra}
`);
  const net = async (extra: string, playground = false) =>
    permissionFlags(await sip(extra, playground), { configPath: "deploy/agent.yaml" })
      .find((f) => f.startsWith("--allow-net="))!.slice("--allow-net=".length).split(",");
  assert.deepEqual(await net("sip_port: 5070\n    rtp_port_base: 20000\n    rtp_port_tries: 3"), [
    "127.0.0.1:6210",
    "127.0.0.1:6211",
    "0.0.0.0:5070",
    "0.0.0.0:20000",
    "0.0.0.0:20001",
    "0.0.0.0:20002",
    "0.0.0.0:20003",
    "0.0.0.0:20004",
    "0.0.0.0:20005",
    "trunk.example.com:5060",
  ]);
  // A TLS listener adds its port.
  const tls = await net(
    "rtp_port_base: 65530\n    rtp_port_tries: 3\n    tls: { port: 5071, cert_file: c.pem, key_file: k.pem }",
  );
  assert.deepEqual(tls.filter((e) => e.startsWith("0.0.0.0")), [
    "0.0.0.0:5060",
    "0.0.0.0:5071",
    "0.0.0.0:65530",
    "0.0.0.0:65531",
    "0.0.0.0:65532",
    "0.0.0.0:65533",
    "0.0.0.0:65534",
    "0.0.0.0:65535",
  ]);
  // Past MAX_EXACT_BIND_PORTS, the address alone: shorter, and cheaper per UDP send.
  const wide = await net(`rtp_port_tries: ${MAX_EXACT_BIND_PORTS}`);
  assert.deepEqual(wide.filter((e) => e.startsWith("0.0.0.0")), ["0.0.0.0"]);
  // The playground's WebRTC sockets take any port of 0.0.0.0, which covers SIP's.
  const withPlayground = await net("", true);
  assert.deepEqual(withPlayground.filter((e) => e.startsWith("0.0.0.0")), ["0.0.0.0"]);
});

Deno.test("permissions: the default echo config", async () => {
  const res = await loadConfig("examples/agent.yaml");
  assert.ok(res.ok);
  const flags = permissionFlags(res.config, { configPath: "examples/agent.yaml" });
  assert.deepEqual(flags, [
    // The listen address with its port, the connection guard's loopback hop (the next port);
    // werift's wildcard bind (no loopback: browsers never send WebRTC media over it, and the
    // peers' own addresses are added where it runs).
    "--allow-net=127.0.0.1:6210,127.0.0.1:6211,0.0.0.0",
    "--allow-read=examples/agent.yaml,examples/echo_graph.yaml",
    `--allow-env=FLOWCAT_LOG,FLOWCAT_LOG_FORMAT,OTEL_DENO,SENTRY_DSN,${REALTIME_KNOBS}`,
    "--ignore-env",
    "--allow-sys=networkInterfaces",
  ]);
  assert.equal(
    permissionCommand(res.config, { configPath: "examples/agent.yaml" }),
    `${denoCommand().join(" ")} run --allow-net=127.0.0.1:6210,127.0.0.1:6211,0.0.0.0 ` +
      "--allow-read=examples/agent.yaml,examples/echo_graph.yaml " +
      `--allow-env=FLOWCAT_LOG,FLOWCAT_LOG_FORMAT,OTEL_DENO,SENTRY_DSN,${REALTIME_KNOBS} --ignore-env --allow-sys=networkInterfaces ` +
      "server/main.ts --config examples/agent.yaml",
  );
});

Deno.test("permissions: gemini + twilio + recording", async () => {
  const c = await config(GEMINI_TWILIO);
  assert.deepEqual(permissionFlags(c, { configPath: "deploy/agent.yaml" }), [
    "--allow-net=0.0.0.0:8080,127.0.0.1:8081,generativelanguage.googleapis.com:443",
    "--allow-read=deploy/agent.yaml,deploy/graph.yaml",
    "--allow-write=deploy/rec",
    `--allow-env=GEMINI_API_KEY,TWILIO_AUTH_TOKEN,TWILIO_ACCOUNT_SID,FLOWCAT_LOG,FLOWCAT_LOG_FORMAT,OTEL_DENO,SENTRY_DSN,${REALTIME_KNOBS}`,
    "--ignore-env",
  ]);
});

Deno.test("permissions: openai + SIP trunk + remote brain", async () => {
  const c = await config(OPENAI_SIP_REMOTE);
  assert.deepEqual(permissionFlags(c, { configPath: "deploy/agent.yaml" }), [
    `--allow-net=127.0.0.1:6210,127.0.0.1:6211,api.openai.com:443,127.0.0.1:8080,${RTP_DEFAULT},trunk.example.com:5060,203.0.113.10`,
    "--allow-read=deploy/agent.yaml",
    `--allow-env=OPENAI_API_KEY,BRAIN_TOKEN,SIP_PASSWORD,FLOWCAT_API_TOKEN,FLOWCAT_LOG,FLOWCAT_LOG_FORMAT,OTEL_DENO,SENTRY_DSN,${REALTIME_KNOBS}`,
    "--ignore-env",
    "--allow-sys=networkInterfaces",
  ]);
});

Deno.test("permissions: SIP over TLS reads exactly its PEM files and reaches the sips: server", async () => {
  const c = await config(`
agent: { graph: graph.yaml }
providers: { realtime: { name: echo } }
playground: { enabled: false }
telephony:
  sip:
    server: sips:trunk.example.com
    login: bob
    password_env: SIP_PASSWORD
    caller_id: "+15551230000"
    public_ip: 203.0.113.5
    tls: { cert_file: tls/sip.pem, key_file: tls/sip.key, ca_file: /etc/flowcat/trunk-ca.pem }
`);
  const flags = permissionFlags(c, { configPath: "deploy/agent.yaml" });
  assert.ok(
    flags.includes(
      "--allow-read=deploy/agent.yaml,deploy/graph.yaml,deploy/tls/sip.pem,deploy/tls/sip.key,/etc/flowcat/trunk-ca.pem",
    ),
    flags.join(" "),
  );
  const net = flags.find((f) => f.startsWith("--allow-net="))!;
  assert.ok(net.split(/[=,]/).includes("trunk.example.com:5061"), net);
  // Without tls: no certificate file is readable.
  const plain = await config(`
agent: { graph: graph.yaml }
providers: { realtime: { name: echo } }
playground: { enabled: false }
telephony: { sip: { server: "sip:trunk.example.com;transport=tcp", login: bob, password_env: SIP_PASSWORD, caller_id: "+15551230000" } }
`);
  const read = permissionFlags(plain, { configPath: "deploy/agent.yaml" })
    .find((f) => f.startsWith("--allow-read="));
  assert.equal(read, "--allow-read=deploy/agent.yaml,deploy/graph.yaml");
});

Deno.test("permissions: overrides, wildcards, endpoint URLs and extras", async () => {
  const c = await config(`
agent: { graph: graph.yaml }
providers: { realtime: { name: openai, url: "wss://proxy.internal:9443/v1/realtime" } }
telephony: { sip: { server: "sip:trunk.example.com", login: a, password_env: P, caller_id: "+15551230000", public_ip: 203.0.113.5 } }
playground: { enabled: false }
`);
  const flags = permissionFlags(c, {
    configPath: "deploy/agent.yaml",
    host: "::1",
    port: 0,
    extraRead: ["models/vad.onnx"],
    extraEnv: ["NO_COLOR"],
  });
  // The endpoint override replaces api.openai.com; port 0 grants the host; sip defaults to 5060;
  // public_ip set: no networkInterfaces.
  assert.deepEqual(flags, [
    `--allow-net=[::1],127.0.0.1,proxy.internal:9443,${RTP_DEFAULT},trunk.example.com:5060`,
    "--allow-read=deploy/agent.yaml,deploy/graph.yaml,models/vad.onnx",
    `--allow-env=OPENAI_API_KEY,P,FLOWCAT_LOG,FLOWCAT_LOG_FORMAT,OTEL_DENO,SENTRY_DSN,${REALTIME_KNOBS},NO_COLOR`,
    "--ignore-env",
  ]);
  const cmd = permissionCommand(c, { configPath: "my dir/agent.yaml", host: "::1", port: 7000 });
  assert.ok(
    cmd.endsWith("server/main.ts --config 'my dir/agent.yaml' --host ::1 --port 7000"),
    cmd,
  );
  // Without the connection guard (a proxy in front), no loopback hop: the listen port only.
  const proxied = await config(
    GEMINI_TWILIO.replace("port: 8080 }", "port: 8080, guard: { enabled: false } }"),
  );
  assert.equal(
    permissionFlags(proxied, { configPath: "deploy/agent.yaml" })[0],
    "--allow-net=0.0.0.0:8080,generativelanguage.googleapis.com:443",
  );
  // One hop port per worker; a hop_port of the operator's choosing.
  const workers = permissionFlags(c, { configPath: "deploy/agent.yaml", port: 7000, workers: 3 });
  assert.match(
    workers[0],
    /^--allow-net=127\.0\.0\.1:7000,127\.0\.0\.1:7001,127\.0\.0\.1:7002,127\.0\.0\.1:7003,/,
  );
  const chosen = await config(
    GEMINI_TWILIO.replace("port: 8080 }", "port: 8080, guard: { hop_port: 9100 } }"),
  );
  assert.equal(
    permissionFlags(chosen, { configPath: "deploy/agent.yaml" })[0],
    "--allow-net=0.0.0.0:8080,127.0.0.1:9100,generativelanguage.googleapis.com:443",
  );
  const any = await config(OPENAI_SIP_REMOTE.replace('"203.0.113.10"', '"*"'));
  assert.equal(permissionFlags(any, { configPath: "deploy/agent.yaml" })[0], "--allow-net");
  assert.equal(netHost("::1"), "[::1]");
  assert.equal(urlHostPort("http://[::1]/x"), "[::1]:80");
  assert.equal(urlHostPort("https://example.com"), "example.com:443");
});

Deno.test("permissions: deno accepts the flags and grants exactly them", async () => {
  const c = await config(GEMINI_TWILIO);
  const flags = permissionFlags(c, { configPath: "deploy/agent.yaml" });
  const dir = ".tmp/server_permissions_test";
  await Deno.mkdir(dir, { recursive: true });
  const probe = `${dir}/probe.ts`;
  await Deno.writeTextFile(
    probe,
    `const q = (d: Deno.PermissionDescriptor) => Deno.permissions.querySync(d).state;
console.log(JSON.stringify({
  listen: q({ name: "net", host: "0.0.0.0:8080" }),
  gemini: q({ name: "net", host: "generativelanguage.googleapis.com:443" }),
  other: q({ name: "net", host: "example.com:443" }),
  read: q({ name: "read", path: "deploy/graph.yaml" }),
  readOther: q({ name: "read", path: "deno.json" }),
  write: q({ name: "write", path: "deploy/rec/call.wav" }),
  writeOther: q({ name: "write", path: "deploy/agent.yaml" }),
  key: q({ name: "env", variable: "GEMINI_API_KEY" }),
  home: Deno.env.get("HOME") ?? null,
}));
`,
  );
  const out = await new Deno.Command("deno", {
    args: ["run", ...flags, probe],
    env: { GEMINI_API_KEY: "x", HOME: "/somewhere" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, stderr);
  assert.deepEqual(JSON.parse(new TextDecoder().decode(out.stdout)), {
    listen: "granted",
    gemini: "granted",
    other: "prompt",
    read: "granted",
    readOther: "prompt",
    write: "granted",
    writeOther: "prompt",
    key: "granted",
    home: null, // --ignore-env: an unlisted variable reads as unset instead of failing
  });
});

Deno.test("permissions: the printed command runs Deno as it was started", () => {
  assert.deepEqual(denoCommand("/usr/local/bin/deno"), ["deno"]);
  // npx keeps its Deno under its cache, and puts no `deno` on the user's PATH.
  assert.deepEqual(denoCommand("/root/.npm/_npx/7a40be787520bede/node_modules/deno/deno"), [
    "npx",
    "-y",
    `deno@${Deno.version.deno}`,
  ]);
});

Deno.test("permissions: MCP servers grant their programs, hosts and variables", async () => {
  const c = await config(`agent: { graph: graph.yaml }
providers: { realtime: { name: echo } }
playground: { enabled: false }
server: { port: 8080 }
tools:
  mcp:
    - name: files
      command: npx
      args: [-y, "@modelcontextprotocol/server-filesystem", /srv/docs]
      env: [HOME, PATH]
    - name: crm
      url: https://mcp.crm.example.com/mcp
      bearer_env: CRM_MCP_TOKEN
    - name: local
      url: http://127.0.0.1:8931/mcp`);
  const flags = permissionFlags(c, { configPath: "deploy/agent.yaml" });
  assert.deepEqual(flags, [
    "--allow-net=127.0.0.1:8080,127.0.0.1:8081,mcp.crm.example.com:443,127.0.0.1:8931",
    "--allow-read=deploy/agent.yaml,deploy/graph.yaml",
    `--allow-env=CRM_MCP_TOKEN,HOME,PATH,FLOWCAT_LOG,FLOWCAT_LOG_FORMAT,OTEL_DENO,SENTRY_DSN,${REALTIME_KNOBS}`,
    "--allow-run=npx",
    "--ignore-env",
  ]);
  // Without tools.mcp nothing may be run.
  const plain = await config(
    "agent: { graph: graph.yaml }\nproviders: { realtime: { name: echo } }",
  );
  assert.equal(
    permissionFlags(plain, { configPath: "x" }).some((f) => f.startsWith("--allow-run")),
    false,
  );
});

Deno.test("permissions: enabled carriers reach their REST APIs with their credential variables", async () => {
  const c = await config(`
agent: { graph: graph.yaml }
providers: { realtime: { name: echo, options: { tts: none } } }
telephony: { public_url: "https://agent.example.com", carriers: [twilio, telnyx, signalwire] }
playground: { enabled: false }
`);
  const space = (n: string) =>
    n === "SIGNALWIRE_SPACE_URL" ? "https://acme.signalwire.com" : undefined;
  const flags = permissionFlags(c, serverPermissionOptions(c, { config: "c.yaml" }, space));
  const net = flags.find((f) => f.startsWith("--allow-net="))!.split("=")[1].split(",");
  for (const h of ["api.twilio.com:443", "api.telnyx.com:443", "acme.signalwire.com:443"]) {
    assert.ok(net.includes(h), `${h} in ${net}`);
  }
  const env = flags.find((f) => f.startsWith("--allow-env="))!.split("=")[1].split(",");
  for (
    const n of [
      "TWILIO_ACCOUNT_SID",
      "TELNYX_API_KEY",
      "SIGNALWIRE_PROJECT_ID",
      "SIGNALWIRE_SPACE_URL",
    ]
  ) {
    assert.ok(env.includes(n), `${n} in ${env}`);
  }
  // Without the space variable, SignalWire's host is unknown and not granted.
  const bare = permissionFlags(c, serverPermissionOptions(c, { config: "c.yaml" }));
  assert.ok(!bare.find((f) => f.startsWith("--allow-net="))!.includes("signalwire"));
});
