/**
 * The agent server on a cascaded config: providers resolved by name from the service registry
 * (endpoints pointed at local fakes with `url`), keys read once at start, unwired providers
 * and missing keys refused at start with one clear error, and a Twilio-framed call running
 * STT -> LLM -> eSpeak NG through the server's CallManager.
 */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import { memoryLogger, silentLogger } from "../core/log.ts";
import { createAgentServer } from "../server/app.ts";
import { LLM_PROVIDERS, STT_PROVIDERS, TTS_PROVIDERS } from "../providers/service_registry.ts";
import { until } from "./_core_helpers.ts";
import { parse } from "./_server_config_helpers.ts";
import { agentServerCall } from "./_twilio_client.ts";
import { finishChunk, OpenAIChatFake, streamReply, textChunk } from "./fakes/openai_chat_fake.ts";
import { WhisperHttpFake } from "./fakes/whisper_http_fake.ts";
import { rms, sine } from "../core/audio/pcm.ts";

async function cascadedConfig(providers: string) {
  const res = await parse(`agent: { graph: graph.yaml, greeting: "Hi there." }
pipeline: cascaded
providers:
${providers}`);
  if (!res.ok) throw new Error(JSON.stringify(res.problems));
  return res.config;
}

Deno.test("server cascaded: a call runs whisper-style STT, an OpenAI-style LLM and eSpeak", async () => {
  const llm = new OpenAIChatFake();
  const stt = new WhisperHttpFake();
  await stt.start();
  llm.reply(streamReply([textChunk("Hello from the model."), finishChunk("stop")]));
  stt.reply({ body: { text: "hi model" } });
  const config = await cascadedConfig(`  stt: { name: speaches, url: "${stt.url}/v1" }
  llm: { name: ollama, url: "${llm.baseUrl}", model: tiny }
  tts: { name: espeak }`);
  const app = await createAgentServer({ config, env: () => undefined, logger: silentLogger });
  const { run, call, report } = await agentServerCall(app);
  try {
    await until(() => call.media().length > 20, 5000, "greeting audio");
    await until(() => app.calls.active === 1);
    await call.speak(sine({ freq: 300, sampleRate: 8000, samples: 8000, amplitude: 9000 }));
    await call.speak(new Int16Array(8000));
    await until(() => llm.requests.length === 1, 8000, "the model asked");
    const body = llm.requests[0].body as { model: string; messages: { content: string }[] };
    assert.equal(body.model, "tiny");
    assert.equal(body.messages.at(-1)!.content, "hi model");
    assert.equal(llm.requests[0].headers.authorization, undefined, "a local LLM gets no key");
    await call.hangup();
    await report;
    const fin = app.sessions.get(run.runId)!.finalize!;
    assert.equal(fin.usage.endedBy, "end: caller hung up");
    assert.equal(fin.usage.model, "tiny");
  } finally {
    await call.close();
    await app.calls.drain(1000);
    await app.close();
    await llm.close();
    await stt.close();
  }
});

Deno.test("server cascaded: STT failing after its retries: the caller hears the fallback, it is logged", async () => {
  const llm = new OpenAIChatFake();
  const stt = new WhisperHttpFake();
  await stt.start();
  // Every attempt of the first segment fails: the client tries three times.
  for (let i = 0; i < 3; i++) stt.reply({ status: 503, body: { error: { message: "busy" } } });
  const config = await cascadedConfig(`  stt: { name: speaches, url: "${stt.url}/v1" }
  llm: { name: ollama, url: "${llm.baseUrl}", model: tiny }
  tts: { name: espeak }`);
  const logger = memoryLogger();
  const app = await createAgentServer({ config, env: () => undefined, logger });
  const { run, call, report } = await agentServerCall(app);
  try {
    await until(() => call.media().length > 20, 5000, "greeting audio");
    await call.speak(sine({ freq: 300, sampleRate: 8000, samples: 8000, amplitude: 9000 }));
    const before = call.media().length;
    await call.speak(new Int16Array(8000));
    await until(() => stt.requests.length === 3, 8000, "three attempts");
    // The fallback line (2 s or more of eSpeak) reaches the caller.
    await until(() => call.media().length > before + 100, 8000, "the fallback line");
    assert.ok(rms(call.decode(call.media().slice(before))) > 300);
    const failed = logger.records.find((r) => r.message === "provider failed");
    assert.ok(failed !== undefined, "the failure is logged");
    assert.equal(failed.fields?.service, "stt");
    assert.equal(failed.fields?.status, 503);
    assert.match(String(failed.fields?.caller), /fallback line/);
    assert.equal(llm.requests.length, 0, "nothing reached the model");
    await call.hangup();
    await report;
    const lines = app.sessions.get(run.runId)!.finalize!;
    assert.equal(lines.usage.endedBy, "end: caller hung up");
  } finally {
    await call.close();
    await app.calls.drain(1000);
    await app.close();
    await llm.close();
    await stt.close();
  }
});

Deno.test("server cascaded: a cloud provider's key is required at start", async () => {
  const config = await cascadedConfig(`  stt: { name: deepgram }
  llm: { name: groq }
  tts: { name: espeak }`);
  await assert.rejects(
    createAgentServer({ config, env: () => undefined, logger: silentLogger }),
    (err) =>
      err instanceof FlowcatError && err.kind === "config" &&
      err.message === "DEEPGRAM_API_KEY is not set (the key for stt provider deepgram)",
  );
});

Deno.test("server cascaded: a declared provider that is not implemented says so at start", async () => {
  const config = await cascadedConfig(`  stt: { name: whisper.cpp }
  llm: { name: ollama }
  tts: { name: playht }`);
  await assert.rejects(
    createAgentServer({ config, env: () => undefined, logger: silentLogger }),
    (err) =>
      err instanceof FlowcatError && err.kind === "not_wired" &&
      err.message === "playht: not yet wired",
  );
});

Deno.test("service registry: every wired provider loads its family's factory", async () => {
  for (const table of [STT_PROVIDERS, LLM_PROVIDERS, TTS_PROVIDERS]) {
    for (const info of Object.values(table)) {
      if (!info.wired) {
        await assert.rejects(info.load(), /not yet wired/);
        continue;
      }
      const factory = await info.load();
      assert.equal(typeof factory, "function", info.name);
      // Local providers dial nothing beyond loopback; cloud ones name their host (or derive it
      // from the config: an Azure region) and need a key.
      if (info.needsKey) {
        assert.ok(info.hosts.length > 0 || info.hostsFor, `${info.kind}/${info.name} hosts`);
      } else assert.deepEqual(info.hosts, [], `${info.kind}/${info.name} is local`);
    }
  }
});
