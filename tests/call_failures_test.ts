/**
 * server/call_failures.ts: failures classified, counted, and each kind logged once per call;
 * end to end, a cascaded call whose speech-to-text answers 503 and whose language model refuses
 * connections.
 */
import assert from "node:assert/strict";
import { memoryLogger } from "../core/log.ts";
import { callerExperience, CallFailures, classifyFailure } from "../server/call_failures.ts";
import { createServerMetrics } from "../server/server_metrics.ts";
import { createAgentServer } from "../server/app.ts";
import { sine } from "../core/audio/pcm.ts";
import { sleep, until } from "./_core_helpers.ts";
import { parse } from "./_server_config_helpers.ts";
import { agentServerCall } from "./_twilio_client.ts";
import { WhisperHttpFake } from "./fakes/whisper_http_fake.ts";

Deno.test("call failures: messages of every provider family are classified", () => {
  const cases: [string, ReturnType<typeof classifyFailure>][] = [
    ["whisper.cpp: HTTP 503: busy (3 attempts)", { kind: "http_5xx", status: 503 }],
    ["groq: HTTP 429: slow down", { kind: "rate_limit", status: 429 }],
    ["openai: HTTP 401: bad key", { kind: "auth", status: 401 }],
    ["ollama: HTTP 404: model not found", { kind: "http_4xx", status: 404 }],
    ["gemini: could not connect: HTTP 429", { kind: "rate_limit", status: 429 }],
    ["deepgram: API key rejected (HTTP 401)", { kind: "auth", status: 401 }],
    ["gemini: setup refused: socket closed (code 1008: quota)", {
      kind: "ws_close",
      closeCode: 1008,
    }],
    ["model closed: socket closed (1011: internal)", { kind: "ws_close", closeCode: 1011 }],
    ["cartesia: socket closed before the audio ended (code 1006)", {
      kind: "ws_close",
      closeCode: 1006,
    }],
    ["ollama: no answer within 15000 ms from 127.0.0.1:11434", { kind: "timeout" }],
    ["gemini: connect timed out", { kind: "timeout" }],
    ["ollama: request failed: connection refused (127.0.0.1:11434)", { kind: "connect" }],
    ["gemini: could not connect: TCP connection failed (refused or unreachable)", {
      kind: "connect",
    }],
    ["whisper.cpp: transcription is not JSON", { kind: "protocol" }],
    ["brain failed on lookup: boom", { kind: "other" }],
  ];
  for (const [message, want] of cases) assert.deepEqual(classifyFailure(message), want, message);
});

Deno.test("call failures: each kind is logged once per call with the provider and what the caller got", () => {
  const log = memoryLogger();
  const metrics = createServerMetrics();
  const f = new CallFailures(log, { stt: "whisper.cpp", llm: "ollama", tts: "espeak" }, metrics);
  for (let i = 0; i < 4; i++) {
    f.record("whisper.cpp: HTTP 503: busy (3 attempts)", false, "SttProcessor");
  }
  f.record("ollama: request failed: connection refused (127.0.0.1:11434)", false, "LlmProcessor");
  f.record("send audio failed: closed", false, "TransportOutput");
  f.record("send audio failed: closed", false, "TransportOutput");
  assert.deepEqual(log.records, [
    {
      level: "warn",
      message: "provider failed",
      fields: {
        service: "stt",
        provider: "whisper.cpp",
        kind: "http_5xx",
        status: 503,
        error: "whisper.cpp: HTTP 503: busy (3 attempts)",
        caller: callerExperience("stt", false),
      },
    },
    {
      level: "warn",
      message: "provider failed",
      fields: {
        service: "llm",
        provider: "ollama",
        kind: "connect",
        error: "ollama: request failed: connection refused (127.0.0.1:11434)",
        caller: "the caller heard the fallback line",
      },
    },
    {
      level: "warn",
      message: "call error",
      fields: {
        processor: "TransportOutput",
        kind: "other",
        error: "send audio failed: closed",
        caller: "the call went on",
      },
    },
  ]);
  assert.deepEqual(f.counts, {
    "stt/whisper.cpp/http_5xx": 4,
    "llm/ollama/connect": 1,
    "TransportOutput/other": 2,
  });
  assert.ok(!f.fatalFromProvider);
  f.record("realtime model failed to connect: x", true, "LlmProcessor");
  assert.equal(log.records.at(-1)!.level, "error");
  assert.equal(log.records.at(-1)!.fields!.caller, "the call ended");
  assert.ok(f.fatalFromProvider && f.has("llm") && !f.has("tts"));
  const text = metrics.registry.expose();
  assert.ok(
    text.includes(
      'flowcat_provider_errors_total{service="stt",provider="whisper.cpp",kind="http_5xx"} 4',
    ),
    text,
  );
  assert.ok(!text.includes("TransportOutput"), "only provider failures are provider errors");
});

Deno.test({
  name:
    "call failures: a cascaded call with a 503 STT and a refused LLM says each once, with status",
  // eSpeak's wasm and the retries' backoff: a few seconds.
  fn: async () => {
    const stt = new WhisperHttpFake();
    await stt.start();
    const busy = { status: 503, body: { error: { message: "model loading" } } };
    // The first turn: three answers of 503 (one request and its two retries). Later turns: text.
    stt.reply(busy, busy, busy);
    const refused = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const llmPort = (refused.addr as Deno.NetAddr).port;
    refused.close(); // nothing listens there: connection refused
    const res = await parse(`agent: { graph: graph.yaml, greeting: "Hi." }
pipeline: cascaded
providers:
  stt: { name: speaches, url: "${stt.url}/v1" }
  llm: { name: ollama, url: "http://127.0.0.1:${llmPort}/v1", model: tiny }
  tts: { name: espeak }`);
    if (!res.ok) throw new Error(JSON.stringify(res.problems));
    const log = memoryLogger();
    const app = await createAgentServer({ config: res.config, env: () => undefined, logger: log });
    const { run, call, report } = await agentServerCall(app);
    const turn = async () => {
      await call.speak(sine({ freq: 300, sampleRate: 8000, samples: 8000, amplitude: 9000 }));
      await call.speak(new Int16Array(8000));
    };
    const failed = (service: string) =>
      log.records.filter((r) => r.message === "provider failed" && r.fields?.service === service);
    try {
      await until(() => call.media().length > 10, 8000, "greeting audio");
      await turn();
      await until(() => failed("stt").length === 1, 8000, "the STT failure");
      await turn();
      await until(() => failed("llm").length === 1, 8000, "the LLM failure");
      await turn();
      await until(() => stt.requests.length >= 5, 8000, "the third turn transcribed");
      await sleep(1500); // the LLM's three attempts
      await call.hangup();
      await report;
      const said = log.records.filter((r) => r.level === "warn" || r.level === "error");
      assert.deepEqual(said.map((r) => r.message), ["provider failed", "provider failed"]);
      assert.deepEqual(said[0].fields, {
        runId: run.runId,
        service: "stt",
        provider: "speaches",
        kind: "http_5xx",
        status: 503,
        error: 'speaches: HTTP 503: {"error":{"message":"model loading"}} (3 attempts)',
        caller: callerExperience("stt", false),
      });
      assert.deepEqual(said[1].fields, {
        runId: run.runId,
        service: "llm",
        provider: "ollama",
        kind: "connect",
        error: `ollama: request failed: connection refused (127.0.0.1:${llmPort}) (3 attempts)`,
        caller: "the caller heard the fallback line",
      });
      const end = log.records.find((r) => r.message === "call ended")!;
      assert.deepEqual(end.fields!.failures, {
        "stt/speaches/http_5xx": 1,
        "llm/ollama/connect": 2,
      });
      assert.equal(end.fields!.reason, "caller_hung_up");
      assert.equal(end.fields!.turns, 3, "three caller turns (VAD edges)");
      // Turns 2 and 3 got a reply (the fallback line), timed from the caller's stop.
      assert.ok((end.fields!.meanTurnLatencySeconds as number) > 0.5, JSON.stringify(end));
      const text = app.metrics.registry.expose();
      assert.ok(
        text.includes(
          'flowcat_provider_errors_total{service="llm",provider="ollama",kind="connect"} 2',
        ),
        text,
      );
      assert.match(
        text,
        /flowcat_provider_ttfb_seconds_count\{service="tts",provider="espeak"\} \d/,
      );
    } finally {
      await call.close();
      await app.calls.drain(1000);
      await app.close();
      await stt.close();
    }
  },
});
