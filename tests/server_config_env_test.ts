import assert from "node:assert/strict";
import { permissionFlags } from "../server/permissions.ts";
import {
  type AgentServerConfig,
  checkEnv,
  formatConfigProblems,
  parseConfigText,
  requiredEnv,
} from "../server/config.ts";

const GRAPH =
  "start: a\nnodes: [{ id: a, prompt: Hi, transitions: [{ name: go, description: go, target: b }] }, { id: b, terminal: true }]\n";

async function config(text: string): Promise<AgentServerConfig> {
  const res = await parseConfigText(text, "yaml", "cfg", {
    readFile: (p) =>
      p === "cfg/graph.yaml" ? Promise.resolve(GRAPH) : Promise.reject(new Deno.errors.NotFound(p)),
  });
  assert.ok(res.ok, res.ok ? "" : formatConfigProblems(res.problems));
  return res.config;
}

const FULL = `
agent: { remote: { url: "http://127.0.0.1:8080", token_env: BRAIN_TOKEN } }
providers: { realtime: { name: gemini } }
telephony:
  carriers: [twilio, telnyx]
  webhook_secrets_env: { twilio: TWILIO_AUTH_TOKEN, telnyx: TELNYX_PUBLIC_KEY }
  sip: { server: "sip:t.example.com", login: a, password_env: SIP_PASSWORD, caller_id: "+15551230000" }
api: { token_env: FLOWCAT_API_TOKEN }
`;

const SECRET = "do-not-print-me-42";

Deno.test("env: requiredEnv lists provider keys, secrets and the optional knobs", async () => {
  const c = await config(FULL);
  const env = requiredEnv(c);
  assert.deepEqual(env.filter((e) => e.required).map((e) => [e.name, e.path]), [
    ["GEMINI_API_KEY", "providers.realtime.name"],
    ["BRAIN_TOKEN", "agent.remote.token_env"],
    ["SIP_PASSWORD", "telephony.sip.password_env"],
    ["TWILIO_AUTH_TOKEN", "telephony.webhook_secrets_env.twilio"],
    ["TELNYX_PUBLIC_KEY", "telephony.webhook_secrets_env.telnyx"],
    ["FLOWCAT_API_TOKEN", "api.token_env"],
  ]);
  const optional = env.filter((e) => !e.required).map((e) => e.name);
  // The enabled carriers' REST credentials (outbound calls, transfers), then the log knobs.
  assert.deepEqual(optional.slice(0, 5), [
    "TWILIO_ACCOUNT_SID",
    "TELNYX_API_KEY",
    "TELNYX_CONNECTION_ID",
    "FLOWCAT_LOG",
    "FLOWCAT_LOG_FORMAT",
  ]);
  assert.ok(optional.includes("FLOWCAT_VAD_SILENCE_DURATION_MS"));
  for (const e of env) assert.ok(e.why.length > 0);
});

Deno.test("env: enabled carriers require their default credential variables unless one is named", async () => {
  const c = await config(`
agent: { graph: graph.yaml }
providers: { realtime: { name: echo } }
telephony:
  carriers: [twilio, sinch, vonage]
  webhook_secrets_env: { twilio: MY_TWILIO_TOKEN }
`);
  const env = requiredEnv(c);
  const names = env.map((e) => e.name);
  assert.ok(names.includes("MY_TWILIO_TOKEN"));
  // A named webhook variable replaces the default one as the webhook secret; the REST API's
  // own TWILIO_AUTH_TOKEN stays optional (outbound calls and transfers read it).
  const rest = env.find((e) => e.name === "TWILIO_AUTH_TOKEN");
  assert.ok(rest !== undefined && !rest.required, "a named variable replaces the default");
  for (
    const n of ["SINCH_APPLICATION_KEY", "SINCH_APPLICATION_SECRET", "VONAGE_SIGNATURE_SECRET"]
  ) {
    const e = env.find((x) => x.name === n);
    assert.ok(e && e.required && e.path === "telephony.carriers", n);
  }
  const flags = permissionFlags(c, { configPath: "cfg/agent.yaml" });
  const allowEnv = flags.find((f) => f.startsWith("--allow-env="))!;
  for (const n of ["MY_TWILIO_TOKEN", "SINCH_APPLICATION_SECRET", "VONAGE_SIGNATURE_SECRET"]) {
    assert.ok(allowEnv.includes(n), `${n} in ${allowEnv}`);
  }
  // A carrier without its secret would refuse every webhook: the server refuses to start.
  const missing = checkEnv(c, (n) => n === "MY_TWILIO_TOKEN" ? "x" : undefined);
  assert.deepEqual(missing.map((p) => [p.path, p.message.split(" (")[0]]), [
    ["telephony.carriers", "environment variable SINCH_APPLICATION_KEY is not set"],
    ["telephony.carriers", "environment variable SINCH_APPLICATION_SECRET is not set"],
    ["telephony.carriers", "environment variable VONAGE_SIGNATURE_SECRET is not set"],
  ]);
  assert.deepEqual(checkEnv(c, () => "set"), []);
});

Deno.test("env: the echo provider needs no key; cascaded skips the realtime knobs", async () => {
  const echo = await config(
    "agent: { graph: graph.yaml }\nproviders: { realtime: { name: echo } }\n",
  );
  assert.deepEqual(requiredEnv(echo).filter((e) => e.required), []);
  assert.deepEqual(checkEnv(echo, () => undefined), []);
  // A cascaded config cannot validate yet (no stt/llm/tts providers), so build one by hand.
  const cascaded: AgentServerConfig = { ...echo, pipeline: "cascaded", providers: {} };
  assert.deepEqual(requiredEnv(cascaded).map((e) => e.name), [
    "FLOWCAT_LOG",
    "FLOWCAT_LOG_FORMAT",
    "OTEL_DENO",
    "SENTRY_DSN",
  ]);
});

Deno.test("env: checkEnv names each missing variable and never prints a value", async () => {
  const c = await config(FULL);
  const env: Record<string, string> = {
    GEMINI_API_KEY: SECRET,
    SIP_PASSWORD: "   ",
    TWILIO_AUTH_TOKEN: SECRET,
    TELNYX_PUBLIC_KEY: SECRET,
  };
  const ps = checkEnv(c, (n) => env[n]);
  assert.deepEqual(ps.map((p) => p.path), [
    "agent.remote.token_env",
    "telephony.sip.password_env",
    "api.token_env",
  ]);
  assert.equal(
    ps[1].message,
    "environment variable SIP_PASSWORD is not set (SIP trunk password; export SIP_PASSWORD=...)",
  );
  const missingKey = checkEnv(c, (n) => n === "GEMINI_API_KEY" ? undefined : SECRET);
  assert.deepEqual(missingKey.map((p) => p.path), ["providers.realtime.name"]);
  assert.match(
    missingKey[0].message,
    /GEMINI_API_KEY is not set \(API key of the gemini realtime provider/,
  );
  const denied = checkEnv(c, (n) => {
    if (n === "BRAIN_TOKEN") throw new Deno.errors.NotCapable("Requires env access");
    return SECRET;
  });
  assert.match(
    denied[0].message,
    /cannot read environment variable BRAIN_TOKEN \(run with --allow-env=BRAIN_TOKEN\)/,
  );
  assert.ok(!formatConfigProblems([...ps, ...missingKey, ...denied]).includes(SECRET));
});
