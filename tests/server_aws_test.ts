/**
 * The agent server on an all-AWS cascade: Transcribe, Bedrock and Polly resolved by name,
 * pointed at local fakes that verify every SigV4 signature, credentials read once at start from
 * the AWS variables, a Twilio-framed call running end to end; missing credentials refused at
 * start; the variables, permissions and hosts per region derived from the config.
 */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import { memoryLogger, silentLogger } from "../core/log.ts";
import { rms, sine } from "../core/audio/pcm.ts";
import { createAgentServer } from "../server/app.ts";
import { checkEnv, requiredEnv } from "../server/config_env.ts";
import { permissionFlags } from "../server/permissions.ts";
import { serverPermissionOptions } from "../server/main.ts";
import { probe, probeTargets } from "../server/probes.ts";
import { until } from "./_core_helpers.ts";
import { startTaskArgs } from "./_server_child.ts";
import { parse } from "./_server_config_helpers.ts";
import { agentServerCall } from "./_twilio_client.ts";
import { AwsHttpFake, converseStream } from "./fakes/aws_http_fake.ts";
import { TranscribeFake } from "./fakes/transcribe_fake.ts";

async function cascadedConfig(providers: string) {
  const res = await parse(`agent: { graph: graph.yaml, greeting: "Hi there." }
pipeline: cascaded
providers:
${providers}`);
  if (!res.ok) throw new Error(JSON.stringify(res.problems));
  return res.config;
}

/** 0.5 s of a tone as Polly's PCM bytes at 8 kHz. */
function speech(): Uint8Array {
  const pcm = sine({ freq: 440, sampleRate: 8000, samples: 4000, amplitude: 8000 });
  return new Uint8Array(pcm.buffer, pcm.byteOffset, pcm.byteLength);
}

Deno.test("server aws: a call runs Transcribe, Bedrock and Polly, every request signed", async () => {
  const stt = new TranscribeFake({ region: "eu-west-1" }).start();
  const llm = new AwsHttpFake({ region: "eu-west-1" }).start();
  const tts = new AwsHttpFake({ region: "eu-west-1" }).start();
  tts.reply({ pieces: [speech()] });
  tts.reply({ pieces: [speech()] });
  llm.reply({ pieces: converseStream({ text: ["Hello from ", "Bedrock."] }) });
  const config = await cascadedConfig(
    `  stt: { name: aws, url: "${stt.url}", options: { sample_rate: 8000 } }
  llm: { name: bedrock, url: "${llm.url}", options: { max_tokens: 100 } }
  tts: { name: aws, url: "${tts.url}", voice: Matthew, options: { sample_rate: 8000 } }`,
  );
  const env = (n: string) => llm.env[n];
  const app = await createAgentServer({ config, env, logger: silentLogger });
  const { run, call, report } = await agentServerCall(app);
  try {
    await until(() => call.media().length > 20, 5000, "greeting audio");
    assert.equal(tts.requests[0].body.Text, "Hi there.");
    assert.equal(tts.requests[0].body.VoiceId, "Matthew");
    await until(() => stt.connections.length === 1, 5000, "the Transcribe stream");
    await call.speak(sine({ freq: 300, sampleRate: 8000, samples: 8000, amplitude: 9000 }));
    await until(() => stt.current!.audio.length > 10, 5000, "caller audio at Transcribe");
    stt.sendResults([{ text: "hi model", partial: true }]);
    stt.sendResults([{ text: "Hi model.", partial: false }]);
    const before = call.media().length;
    await call.speak(new Int16Array(8000));
    await until(() => llm.requests.length === 1, 8000, "the model asked");
    const messages = llm.requests[0].body.messages as { role: string; content: unknown[] }[];
    assert.deepEqual(messages.at(-1)!.content.at(-1), { text: "Hi model." });
    await until(() => tts.requests.length === 2, 8000, "the answer spoken");
    assert.equal(tts.requests[1].body.Text, "Hello from Bedrock.");
    await until(() => call.media().length > before + 10, 8000, "the answer's audio");
    assert.ok(rms(call.decode(call.media().slice(before))) > 300);
    for (const r of [...llm.requests, ...tts.requests]) {
      assert.equal(r.refused, undefined, `${r.path} signed`);
      assert.match(r.headers.get("authorization")!, /Credential=AKIDEXAMPLE\/\d{8}\/eu-west-1\//);
    }
    await call.hangup();
    await report;
    const fin = app.sessions.get(run.runId)!.finalize!;
    assert.equal(fin.usage.endedBy, "end: caller hung up");
  } finally {
    await call.close();
    await app.calls.drain(1000);
    await app.close();
    await stt.close();
    await llm.close();
    await tts.close();
  }
});

Deno.test("server aws: Bedrock throttled past its retries: the caller hears the fallback, it is logged", async () => {
  const stt = new TranscribeFake().start();
  const llm = new AwsHttpFake().start();
  const tts = new AwsHttpFake().start();
  for (let i = 0; i < 3; i++) tts.reply({ pieces: [speech()] });
  for (let i = 0; i < 3; i++) {
    llm.reply({
      status: 429,
      code: "ThrottlingException",
      message: "Too many requests",
      retryAfter: "0",
    });
  }
  const config = await cascadedConfig(
    `  stt: { name: aws, url: "${stt.url}", options: { sample_rate: 8000 } }
  llm: { name: bedrock, url: "${llm.url}" }
  tts: { name: aws, url: "${tts.url}", options: { sample_rate: 8000 } }`,
  );
  const logger = memoryLogger();
  const app = await createAgentServer({ config, env: (n) => llm.env[n], logger });
  const { call, report } = await agentServerCall(app);
  try {
    await until(() => call.media().length > 20, 5000, "greeting audio");
    await until(() => stt.connections.length === 1, 5000, "the Transcribe stream");
    await call.speak(sine({ freq: 300, sampleRate: 8000, samples: 8000, amplitude: 9000 }));
    stt.sendResults([{ text: "Are you there?", partial: false }]);
    await call.speak(new Int16Array(8000));
    await until(() => llm.requests.length === 3, 8000, "three signed attempts");
    assert.ok(llm.requests.every((r) => r.refused === undefined));
    await until(() => tts.requests.length === 2, 8000, "the fallback line spoken");
    const fallback = String(tts.requests[1].body.Text);
    assert.ok(fallback.length > 10 && fallback !== "Hi there.", fallback);
    const failed = logger.records.find((r) => r.message === "provider failed");
    assert.ok(failed !== undefined, "the failure is logged");
    assert.equal(failed.fields?.service, "llm");
    assert.equal(failed.fields?.provider, "bedrock");
    assert.equal(failed.fields?.status, 429);
    await call.hangup();
    await report;
  } finally {
    await call.close();
    await app.calls.drain(1000);
    await app.close();
    await stt.close();
    await llm.close();
    await tts.close();
  }
});

Deno.test("server aws: missing AWS credentials stop the server at start, naming the variable", async () => {
  const config = await cascadedConfig(`  stt: { name: whisper.cpp }
  llm: { name: bedrock }
  tts: { name: espeak }`);
  await assert.rejects(
    createAgentServer({
      config,
      env: (n) => (n === "AWS_ACCESS_KEY_ID" ? "AKID" : undefined),
      logger: silentLogger,
    }),
    (err) =>
      err instanceof FlowcatError && err.kind === "config" &&
      err.message ===
        "AWS_SECRET_ACCESS_KEY is not set (AWS secret access key, for llm provider bedrock)",
  );
  const env = requiredEnv(config);
  const aws = env.filter((e) => e.name.startsWith("AWS_"));
  assert.deepEqual(aws.map((e) => [e.name, e.required]), [
    ["AWS_ACCESS_KEY_ID", true],
    ["AWS_SECRET_ACCESS_KEY", true],
    ["AWS_SESSION_TOKEN", false],
    ["AWS_REGION", false],
  ]);
  assert.ok(!env.some((e) => e.name === "BEDROCK_API_KEY"), "no <NAME>_API_KEY for AWS");
  const problems = checkEnv(config, () => undefined).map((p) => p.message);
  assert.equal(problems.length, 2);
  assert.match(problems[0], /AWS_ACCESS_KEY_ID is not set/);
});

Deno.test("server aws: permissions grant the region's hosts and the AWS variables", async () => {
  const config = await cascadedConfig(`  stt: { name: aws, options: { region: ap-southeast-2 } }
  llm: { name: bedrock }
  tts: { name: aws }`);
  const flags = (env: Record<string, string>) =>
    permissionFlags(config, serverPermissionOptions(config, { config: "c.yaml" }, (n) => env[n]));
  const net = (env: Record<string, string>) =>
    flags(env).find((f) => f.startsWith("--allow-net="))!.split("=")[1].split(",");
  // No AWS_REGION: us-east-1, except where the config names a region.
  const plain = net({});
  assert.ok(plain.includes("transcribestreaming.ap-southeast-2.amazonaws.com:8443"), `${plain}`);
  assert.ok(plain.includes("bedrock-runtime.us-east-1.amazonaws.com:443"));
  assert.ok(plain.includes("polly.us-east-1.amazonaws.com:443"));
  // AWS_REGION moves the others, and nothing is granted in the default region any more.
  const eu = net({ AWS_REGION: "eu-central-1" });
  assert.ok(eu.includes("transcribestreaming.ap-southeast-2.amazonaws.com:8443"));
  assert.ok(eu.includes("bedrock-runtime.eu-central-1.amazonaws.com:443"));
  assert.ok(eu.includes("polly.eu-central-1.amazonaws.com:443"));
  assert.ok(!eu.some((h) => h.includes("us-east-1")), `${eu}`);
  const allowEnv = flags({}).find((f) => f.startsWith("--allow-env="))!;
  for (
    const n of ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION"]
  ) {
    assert.ok(allowEnv.includes(n), `${n} in ${allowEnv}`);
  }
});

Deno.test("server aws: --check checks the AWS variables without calling the signed APIs", async () => {
  const config = await cascadedConfig(`  stt: { name: aws }
  llm: { name: bedrock }
  tts: { name: espeak }`);
  const targets = probeTargets(config).filter((t) => t.service !== "tts");
  let fetched = 0;
  const fetch = () => (fetched++, Promise.reject(new Error("no network")));
  const unset = await probe(targets[0], { env: () => undefined, fetch });
  assert.equal(unset.ok, false);
  assert.equal(unset.reason, "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY not set");
  const vars: Record<string, string> = { AWS_ACCESS_KEY_ID: "a", AWS_SECRET_ACCESS_KEY: "b" };
  for (const t of targets) {
    const r = await probe(t, { env: (n) => vars[n], fetch });
    assert.ok(r.ok, `${t.service}: ${r.reason}`);
    assert.notEqual(t.notWired, true);
  }
  assert.equal(fetched, 0);
});

Deno.test("server aws: deno task start --print-permissions reads AWS_REGION for the example", async () => {
  const out = await new Deno.Command("deno", {
    args: [...startTaskArgs(), "--config", "examples/cascaded_aws.yaml", "--print-permissions"],
    env: { NO_COLOR: "1", AWS_REGION: "eu-west-1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const net = /--allow-net=(\S+)/.exec(text)![1].split(",");
  for (
    const h of [
      "transcribestreaming.eu-west-1.amazonaws.com:8443",
      "bedrock-runtime.eu-west-1.amazonaws.com:443",
      "polly.eu-west-1.amazonaws.com:443",
    ]
  ) {
    assert.ok(net.includes(h), `${h} in ${net}`);
  }
  assert.ok(!text.includes("us-east-1"), "no host of the default region");
  assert.match(text, /--allow-env=[^ ]*AWS_SECRET_ACCESS_KEY/);
});
