/**
 * No cold first call: a fresh `server/main.ts` process (run under its own least-privilege flags)
 * warms every engine its config uses before it listens, so the first call's greeting reaches a
 * Twilio caller as promptly as a later call's: within 150 ms of the media stream's start, for the
 * default echo agent and for a cascaded agent speaking with eSpeak NG.
 */

import assert from "node:assert/strict";
import { loadConfig } from "../server/config.ts";
import { serverPermissionOptions } from "../server/main.ts";
import { permissionFlags } from "../server/permissions.ts";
import { until } from "./_core_helpers.ts";
import { dialTwilio } from "./_twilio_client.ts";

const SECRET = "first-call-secret";
const PUBLIC_URL = "https://first-call.flowcat.invalid";
const GREETING = "Hi {{name}}! Thanks for calling. How can I help?";

const GRAPH = `
    version: 1
    start: chat
    variables: { name: friend }
    nodes:
      - id: chat
        prompt: Help the caller.
        transitions: [{ name: done, description: Caller is done., target: bye }]
      - { id: bye, terminal: true }`;

function configText(pipeline: "s2s" | "cascaded"): string {
  const providers = pipeline === "s2s" ? "  realtime: { name: echo }" : [
    // Never reached before the caller speaks: the greeting is all this test hears.
    '  stt: { name: speaches, url: "http://127.0.0.1:9/v1" }',
    '  llm: { name: ollama, url: "http://127.0.0.1:9/v1", model: tiny }',
    "  tts: { name: espeak }",
  ].join("\n");
  return `version: 1
agent:
  greeting: "${GREETING}"
  graph:${GRAPH}
pipeline: ${pipeline}
providers:
${providers}
telephony:
  public_url: ${PUBLIC_URL}
  carriers: [twilio]
  webhook_secrets_env: { twilio: TWILIO_AUTH_TOKEN }
`;
}

interface Server {
  base: string;
  stop(): Promise<void>;
}

/** `server/main.ts` in a fresh process; resolves once it listens. */
async function startServer(pipeline: "s2s" | "cascaded"): Promise<Server> {
  await Deno.mkdir(".tmp/first_call", { recursive: true });
  const path = `.tmp/first_call/${pipeline}.yaml`;
  await Deno.writeTextFile(path, configText(pipeline));
  const loaded = await loadConfig(path);
  assert.ok(loaded.ok, JSON.stringify(!loaded.ok && loaded.problems));
  const flags = permissionFlags(
    loaded.config,
    serverPermissionOptions(loaded.config, { config: path, port: 0 }),
  );
  const child = new Deno.Command("deno", {
    args: ["run", ...flags, "server/main.ts", "--config", path, "--port", "0"],
    env: { TWILIO_AUTH_TOKEN: SECRET },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const reader = child.stdout.getReader();
  const dec = new TextDecoder();
  let text = "";
  let port = 0;
  while (port === 0) {
    const { value, done } = await reader.read();
    if (done) break;
    text += dec.decode(value);
    const m = /on http:\/\/127\.0\.0\.1:(\d+)\//.exec(text);
    if (m) port = Number(m[1]);
  }
  if (port === 0) {
    const err = dec.decode(await new Response(child.stderr).arrayBuffer());
    throw new Error(`server did not listen:\n${text}\n${err}`);
  }
  // Keep reading so the child never blocks on a full pipe.
  const drained = (async () => {
    for (;;) if ((await reader.read()).done) return;
  })();
  return {
    base: `http://127.0.0.1:${port}`,
    async stop() {
      child.kill("SIGTERM");
      await drained;
      await child.stderr.cancel();
      await child.status;
    },
  };
}

/** Ms from the media stream's start to the first greeting audio the caller gets. */
async function greetingMs(server: Server): Promise<number> {
  const { call } = await dialTwilio(server.base, { secret: SECRET, publicUrl: PUBLIC_URL });
  // dialTwilio returns as soon as `start` is sent.
  const t0 = performance.now();
  try {
    await until(() => call.media().length > 0, 10_000, "greeting audio");
    return performance.now() - t0;
  } finally {
    await call.hangup();
    await call.close();
  }
}

for (const pipeline of ["s2s", "cascaded"] as const) {
  Deno.test(`first call (${pipeline}): the greeting is as prompt as on a warm server`, async () => {
    const server = await startServer(pipeline);
    try {
      const first = await greetingMs(server);
      const second = await greetingMs(server);
      console.log(
        `${pipeline}: greeting after ${first.toFixed(0)} ms, then ${second.toFixed(0)} ms`,
      );
      assert.ok(first < 150, `first call's greeting after ${first.toFixed(0)} ms`);
    } finally {
      await server.stop();
    }
  });
}
