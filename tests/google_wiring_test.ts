/**
 * The Google Cloud providers (vertex, google STT/TTS) and Riva in the server: the key file
 * variable, its read grant, the token host in --allow-net, and one clear line when the key is
 * missing or unreadable.
 */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import { silentLogger } from "../core/log.ts";
import { loadCallShape } from "../server/call_shapes.ts";
import { checkEnv, requiredEnv } from "../server/config_env.ts";
import { serverPermissionOptions } from "../server/main.ts";
import { permissionFlags } from "../server/permissions.ts";
import { makeServiceAccountKey } from "./fakes/google_oauth_fake.ts";
import { parse } from "./_server_config_helpers.ts";

const GOOGLE = `agent: { graph: graph.yaml }
pipeline: cascaded
providers:
  stt: { name: google }
  llm: { name: vertex }
  tts: { name: google }
`;

async function config(text: string) {
  const res = await parse(text);
  if (!res.ok) throw new Error(JSON.stringify(res.problems));
  return res.config;
}

function flag(flags: string[], name: string): string[] {
  return flags.find((f) => f.startsWith(`${name}=`))?.slice(name.length + 1).split(",") ?? [];
}

Deno.test("google wiring: one key-file variable, its read grant, API and token hosts", async () => {
  const c = await config(GOOGLE);
  const env = requiredEnv(c).filter((e) => e.required);
  assert.deepEqual(env.map((e) => e.name), ["GOOGLE_APPLICATION_CREDENTIALS"]);
  assert.match(env[0].why, /key file of the google stt provider/);
  const keyPath = "/etc/flowcat/sa.json";
  const opts = serverPermissionOptions(
    c,
    { config: "agent.yaml" },
    (n) => n === "GOOGLE_APPLICATION_CREDENTIALS" ? keyPath : undefined,
  );
  const flags = permissionFlags(c, opts);
  const net = flag(flags, "--allow-net");
  for (
    const host of [
      "speech.googleapis.com:443",
      "aiplatform.googleapis.com:443",
      "texttospeech.googleapis.com:443",
      "oauth2.googleapis.com:443",
    ]
  ) assert.ok(net.includes(host), `${host} in ${net}`);
  assert.ok(flag(flags, "--allow-read").includes(keyPath));
  assert.ok(flag(flags, "--allow-env").includes("GOOGLE_APPLICATION_CREDENTIALS"));
  assert.equal(flag(flags, "--allow-env").some((e) => /^(GOOGLE|VERTEX)_API_KEY$/.test(e)), false);
  // Unset: no read grant is invented, and the check names the variable.
  const unset = permissionFlags(c, serverPermissionOptions(c, { config: "agent.yaml" }));
  assert.deepEqual(flag(unset, "--allow-read").filter((p) => p.endsWith(".json")), []);
  const problems = checkEnv(c, () => undefined);
  assert.equal(problems.length, 1);
  assert.match(
    problems[0].message,
    /^environment variable GOOGLE_APPLICATION_CREDENTIALS is not set/,
  );
});

Deno.test("google wiring: a url override keeps the OAuth token host", async () => {
  const c = await config(`agent: { graph: graph.yaml }
pipeline: cascaded
providers:
  stt: { name: riva }
  llm: { name: vertex, url: "https://europe-west4-aiplatform.googleapis.com" }
  tts: { name: espeak }
`);
  const net = flag(permissionFlags(c, { configPath: "agent.yaml" }), "--allow-net");
  assert.ok(net.includes("europe-west4-aiplatform.googleapis.com:443"));
  assert.ok(net.includes("oauth2.googleapis.com:443"));
  assert.ok(net.includes("127.0.0.1:50051"), "riva's local server");
  assert.equal(net.includes("aiplatform.googleapis.com:443"), false);
  // Riva is local: no variable is required, and none is read for it.
  assert.deepEqual(
    requiredEnv(c).filter((e) => e.required).map((e) => e.name),
    ["GOOGLE_APPLICATION_CREDENTIALS"],
  );
  assert.equal(requiredEnv(c).some((e) => e.name === "RIVA_API_KEY"), false);
});

Deno.test("riva wiring: at an https:// URL (NVIDIA's hosted endpoint) its key is granted, optional", async () => {
  const c = await config(`agent: { graph: graph.yaml }
pipeline: cascaded
providers:
  stt: { name: riva, url: "https://grpc.nvcf.nvidia.com", options: { function_id: fn-1 } }
  llm: { name: vertex }
  tts: { name: espeak }
`);
  const riva = requiredEnv(c).find((e) => e.name === "RIVA_API_KEY");
  assert.equal(riva?.required, false);
  const flags = permissionFlags(c, { configPath: "agent.yaml" });
  assert.ok(flag(flags, "--allow-env").includes("RIVA_API_KEY"));
  assert.ok(flag(flags, "--allow-net").includes("grpc.nvcf.nvidia.com:443"));
  assert.deepEqual(
    checkEnv(c, (n) => n === "GOOGLE_APPLICATION_CREDENTIALS" ? "/k.json" : undefined),
    [],
  );
});

Deno.test("google wiring: the key file is read at start; missing or unreadable is one line", async () => {
  const c = await config(GOOGLE);
  const load = (path: string | undefined) =>
    loadCallShape({
      config: c,
      env: (n) => n === "GOOGLE_APPLICATION_CREDENTIALS" ? path : undefined,
      logger: silentLogger,
    });
  const says = (want: RegExp) => (e: unknown) => {
    assert.ok(e instanceof FlowcatError && e.kind === "config", String(e));
    assert.match(e.message, want);
    assert.ok(!e.message.includes("\n"));
    return true;
  };
  await assert.rejects(
    load(undefined),
    says(/^GOOGLE_APPLICATION_CREDENTIALS is not set \(the key file for stt provider google\)$/),
  );
  await assert.rejects(
    load(".tmp/no-such-key.json"),
    says(/^GOOGLE_APPLICATION_CREDENTIALS: cannot read \.tmp\/no-such-key\.json \(no such file\)$/),
  );
  await Deno.mkdir(".tmp", { recursive: true });
  const path = await Deno.makeTempFile({ dir: ".tmp", suffix: ".json" });
  try {
    await Deno.writeTextFile(path, '{"type":"authorized_user"}');
    await assert.rejects(
      load(path),
      says(/^google: the GOOGLE_APPLICATION_CREDENTIALS file is not a service-account key/),
    );
    const key = await makeServiceAccountKey("https://oauth2.googleapis.com/token");
    await Deno.writeTextFile(path, key.json);
    const shape = await load(path);
    assert.equal(
      shape.models,
      "google (latest_long) -> vertex (gemini-2.5-flash) -> google",
    );
  } finally {
    await Deno.remove(path);
  }
});
