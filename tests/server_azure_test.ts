/**
 * The agent server with Azure providers named in its config: a cascaded call through Azure
 * Speech STT, Azure OpenAI and Azure Speech TTS (each at a local fake of its wire), keys read
 * from AZURE_SPEECH_KEY / AZURE_OPENAI_API_KEY, and the grants and variables the config derives.
 */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import { rms, sine } from "../core/audio/pcm.ts";
import { silentLogger } from "../core/log.ts";
import { createAgentServer } from "../server/app.ts";
import { requiredEnv } from "../server/config_env.ts";
import { netGrants } from "../server/permissions.ts";
import { grantProblems } from "../server/grant_check.ts";
import { probeTargets } from "../server/probes.ts";
import { until } from "./_core_helpers.ts";
import { parse } from "./_server_config_helpers.ts";
import { agentServerCall } from "./_twilio_client.ts";
import { AzureSpeechFake } from "./fakes/azure_speech_fake.ts";
import { finishChunk, OpenAIChatFake, streamReply, textChunk } from "./fakes/openai_chat_fake.ts";

const SPEECH_KEY = "speech-SECRET";
const OPENAI_KEY = "openai-SECRET";
const env = (n: string) =>
  n === "AZURE_SPEECH_KEY" ? SPEECH_KEY : n === "AZURE_OPENAI_API_KEY" ? OPENAI_KEY : undefined;

async function config(body: string) {
  const res = await parse(`agent: { graph: graph.yaml, greeting: "Hi there." }\n${body}`);
  if (!res.ok) throw new Error(JSON.stringify(res.problems));
  return res.config;
}

/** The agent server on `c` with one Twilio-framed call in; `close` ends it and the fakes. */
async function azureCall(c: Awaited<ReturnType<typeof config>>, fakes: { close(): unknown }[]) {
  const app = await createAgentServer({ config: c, env, logger: silentLogger });
  const { call, report } = await agentServerCall(app);
  return {
    call,
    async hangup() {
      await call.hangup();
      await report;
    },
    async close() {
      await call.close();
      await app.calls.drain(1000);
      await app.close();
      for (const f of fakes) await f.close();
    },
  };
}

Deno.test("server azure: a cascaded call runs Azure STT, Azure OpenAI and Azure TTS", async () => {
  const speech = new AzureSpeechFake({ key: SPEECH_KEY, ttsSamples: 8000 });
  speech.start();
  const llm = new OpenAIChatFake();
  llm.reply(streamReply([textChunk("It is sunny in Oslo."), finishChunk("stop")]));
  const c = await config(`pipeline: cascaded
providers:
  stt: { name: azure, url: "${speech.url}" }
  llm: { name: azure, url: "${llm.baseUrl.replace(/\/v1$/, "")}", model: my-dep }
  tts: { name: azure, url: "${speech.url}", voice: en-GB-RyanNeural, options: { sample_rate: 16000 } }`);
  const h = await azureCall(c, [llm, speech]);
  const call = h.call;
  try {
    // The greeting is synthesized by the TTS fake and reaches the caller.
    await until(() => call.media().length > 20, 8000, "greeting audio");
    assert.match(
      speech.sent("ssml")[0].text!,
      /<voice name='en-GB-RyanNeural'>Hi there\.<\/voice>/,
    );
    await until(() => speech.connections.some((x) => x.service === "stt" && x.turn), 5000, "stt");
    await call.speak(sine({ freq: 300, sampleRate: 8000, samples: 8000, amplitude: 9000 }));
    // The greeting was cut by the tone: what plays from here on is the answer.
    const before = call.media().length;
    speech.phrase("What is the weather in Oslo?");
    await call.speak(new Int16Array(8000));
    await until(() => llm.requests.length === 1, 8000, "the model asked");
    const req = llm.requests[0];
    assert.equal(req.path, "/openai/deployments/my-dep/chat/completions");
    assert.equal(req.headers["api-key"], OPENAI_KEY);
    const messages = req.body.messages as { content: string }[];
    assert.equal(messages.at(-1)!.content, "What is the weather in Oslo?");
    await until(() => speech.sent("ssml").length >= 2, 8000, "the answer synthesized");
    assert.match(speech.sent("ssml")[1].text!, /It is sunny in Oslo\./);
    await until(() => call.media().length > before + 10, 8000, "the answer's audio");
    assert.ok(rms(call.decode(call.media().slice(before))) > 300);
    await h.hangup();
    const stt = speech.connections.find((x) => x.service === "stt")!;
    assert.equal(stt.headers["ocp-apim-subscription-key"], SPEECH_KEY);
  } finally {
    await h.close();
  }
});

Deno.test("server azure: barge-in during a synthesis closes its socket; the answer uses a new one", async () => {
  // The greeting's first chunk (2 s) plays while the rest is held back: the bot is speaking and
  // its synthesis is still streaming when the caller talks over it.
  const speech = new AzureSpeechFake({ key: SPEECH_KEY, ttsSamples: 64000, chunkSamples: 32000 });
  speech.start();
  speech.holdAudio = true;
  const llm = new OpenAIChatFake();
  llm.reply(streamReply([textChunk("Sure."), finishChunk("stop")]));
  const c = await config(`pipeline: cascaded
providers:
  stt: { name: azure, url: "${speech.url}" }
  llm: { name: azure, url: "${llm.baseUrl.replace(/\/v1$/, "")}", model: my-dep }
  tts: { name: azure, url: "${speech.url}", options: { sample_rate: 16000 } }`);
  const h = await azureCall(c, [llm, speech]);
  const call = h.call;
  const tts = () => speech.connections.filter((x) => x.service === "tts");
  try {
    await until(() => speech.sent("ssml").length === 1, 8000, "the greeting asked for");
    await until(() => speech.connections.some((x) => x.service === "stt" && x.turn), 5000, "stt");
    await call.speak(sine({ freq: 300, sampleRate: 8000, samples: 8000, amplitude: 9000 }));
    // The held greeting is cut: its socket closed, a new one dialled for what comes next.
    await until(() => tts()[0].socket.readyState === WebSocket.CLOSED, 5000, "greeting cut");
    await until(() => tts().length === 2, 5000, "a new synthesis socket");
    speech.holdAudio = false;
    speech.phrase("Can you help?");
    await call.speak(new Int16Array(8000));
    await until(() => speech.sent("ssml").length === 2, 8000, "the answer synthesized");
    assert.equal(tts().length, 2, "the answer used the socket dialled at barge-in");
    assert.match(tts()[1].messages.find((m) => m.path === "ssml")!.text!, /Sure\./);
    await h.hangup();
  } finally {
    await h.close();
  }
});

Deno.test("server azure: the key variables are Azure's own, asked for by name", async () => {
  const c = await config(`pipeline: cascaded
providers:
  stt: { name: azure, options: { region: eastus } }
  llm: { name: azure, model: my-dep, options: { resource: contoso } }
  tts: { name: azure, options: { region: westeurope } }`);
  const required = requiredEnv(c).filter((e) => e.required).map((e) => e.name);
  assert.deepEqual(required, ["AZURE_SPEECH_KEY", "AZURE_OPENAI_API_KEY"]);
  await assert.rejects(
    createAgentServer({ config: c, env: () => undefined, logger: silentLogger }),
    (e: unknown) =>
      e instanceof FlowcatError && e.kind === "config" &&
      e.message === "AZURE_SPEECH_KEY is not set (the key for stt provider azure)",
  );
  const grants = netGrants(c, { configPath: "agent.yaml" });
  for (
    const host of [
      "eastus.stt.speech.microsoft.com:443",
      "contoso.openai.azure.com:443",
      "westeurope.tts.speech.microsoft.com:443",
    ]
  ) assert.ok(grants.includes(host), host);
  const missing = grantProblems(c, (d) => d.name !== "net").map((p) => p.message);
  assert.ok(missing.some((m) => m.includes("eastus.stt.speech.microsoft.com:443 (azure)")));
  assert.ok(missing.some((m) => m.includes("contoso.openai.azure.com:443 (azure)")));
  const probes = probeTargets(c);
  assert.deepEqual(probes.map((p) => p.keyEnv), [
    "AZURE_SPEECH_KEY",
    "AZURE_OPENAI_API_KEY",
    "AZURE_SPEECH_KEY",
  ]);
  assert.equal(
    probes[1].request!.url,
    "https://contoso.openai.azure.com/openai/models?api-version=2024-10-21",
  );
  assert.deepEqual(probes[1].request!.headers("k"), { "api-key": "k" });
  assert.deepEqual(
    [probes[0].request!.url, probes[0].expect, probes[0].request!.headers("k")],
    ["https://eastus.stt.speech.microsoft.com/", "reachable", { "Ocp-Apim-Subscription-Key": "k" }],
  );
});

Deno.test("server azure: a region or resource left out stops the start with what to set", async () => {
  const c = await config(`pipeline: cascaded
providers:
  stt: { name: azure }
  llm: { name: ollama }
  tts: { name: espeak }`);
  await assert.rejects(
    createAgentServer({ config: c, env, logger: silentLogger }),
    (e: unknown) => e instanceof FlowcatError && /options\.region/.test(e.message),
  );
  assert.match(probeTargets(c)[0].misconfigured ?? "", /options\.region/);
  const noDeployment = await config(`pipeline: cascaded
providers:
  stt: { name: whisper.cpp }
  llm: { name: azure, options: { resource: contoso } }
  tts: { name: espeak }`);
  await assert.rejects(
    createAgentServer({ config: noDeployment, env, logger: silentLogger }),
    (e: unknown) =>
      e instanceof FlowcatError &&
      e.message ===
        "providers.llm.model: name the Azure OpenAI deployment (e.g. model: my-gpt-4o-mini)",
  );
  const rt = await config(`pipeline: s2s
providers:
  realtime: { name: azure, model: my-realtime }`);
  await assert.rejects(
    createAgentServer({ config: rt, env, logger: silentLogger }),
    (e: unknown) => e instanceof FlowcatError && /options\.resource/.test(e.message),
  );
});

Deno.test("server azure: realtime azure and openai-compatible derive their grants and keys", async () => {
  const azure = await config(`pipeline: s2s
providers:
  realtime: { name: azure, model: my-realtime, options: { resource: contoso } }`);
  assert.ok(netGrants(azure, { configPath: "a.yaml" }).includes("contoso.openai.azure.com:443"));
  assert.ok(requiredEnv(azure).some((e) => e.name === "AZURE_OPENAI_API_KEY" && e.required));
  const compatible = await config(`pipeline: s2s
providers:
  realtime:
    name: openai-compatible
    url: wss://gw.example.com/v1/realtime
    options: { key_env: GW_KEY, auth_header: api-key }`);
  assert.ok(netGrants(compatible, { configPath: "a.yaml" }).includes("gw.example.com:443"));
  assert.ok(requiredEnv(compatible).some((e) => e.name === "GW_KEY" && e.required));
  const [probe] = probeTargets(compatible);
  assert.deepEqual(
    [probe.keyEnv, probe.url, probe.request!.headers("k")],
    ["GW_KEY", "https://gw.example.com", { "api-key": "k" }],
  );
  await assert.rejects(
    createAgentServer({ config: compatible, env: () => undefined, logger: silentLogger }),
    (e: unknown) => e instanceof FlowcatError && /^GW_KEY is not set/.test(e.message),
  );
});
