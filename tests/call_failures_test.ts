/** server/call_failures.ts: failures classified, counted, and each kind logged once per call. */
import assert from "node:assert/strict";
import { memoryLogger } from "../core/log.ts";
import { callerExperience, CallFailures, classifyFailure } from "../server/call_failures.ts";
import { createServerMetrics } from "../server/server_metrics.ts";

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
