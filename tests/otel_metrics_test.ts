/**
 * Call metrics over OTLP: the real server (`server/main.ts` in a child process under its
 * computed permissions, with `OTEL_DENO=true`) runs a scripted cascaded Twilio call (a
 * whisper-style STT that answers one segment 503 three times, then answers; an OpenAI-style
 * LLM; eSpeak NG in process) with a barge-in, and Deno exports the server's metrics over
 * OTLP/HTTP in its default encoding (http/protobuf) to a receiver in this test, which decodes
 * `/v1/metrics` (protobuf, by the opentelemetry-proto field numbers) and checks instrument names,
 * units, kinds, attributes and values, and that every series equals what `GET /metrics` says.
 */
import assert from "node:assert/strict";
import { until } from "./_core_helpers.ts";
import { OtlpReceiver, type ReceivedPoint } from "./_otlp_receiver.ts";
import {
  bargeInThenHangUp,
  callerSays,
  OTEL_PUBLIC_URL,
  quietAfterSpeech,
  writeCascadedConfig,
} from "./_otel_call.ts";
import { startServerChild } from "./_server_child.ts";
import { dialTwilio } from "./_twilio_client.ts";
import { finishChunk, OpenAIChatFake, streamReply, textChunk } from "./fakes/openai_chat_fake.ts";
import { WhisperHttpFake } from "./fakes/whisper_http_fake.ts";

const DIR = ".tmp/otel_metrics_test";
const SECRET = "twilio-secret-for-otel-metrics";
const PUBLIC = OTEL_PUBLIC_URL;

/** A point as text for messages (its time is a bigint). */
const show = (p: unknown) => JSON.stringify(p, (_k, v) => typeof v === "bigint" ? String(v) : v);

/** Prometheus text as `name{labels}` -> value. */
function promSamples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    const m = /^([a-z_:]+)(\{[^}]*\})? (\S+)$/i.exec(line);
    if (m) out.set(m[1] + (m[2] ?? ""), Number(m[3]));
  }
  return out;
}

/** `{a="x",b="y"}` of a point's attributes in the order `names` gives. */
function promLabels(p: ReceivedPoint, names: string[], extra = ""): string {
  const parts = names.map((n) => `${n}="${p.attributes[n]}"`);
  if (extra) parts.push(extra);
  return parts.length === 0 ? "" : `{${parts.join(",")}}`;
}

Deno.test("otel metrics: a call's metrics reach an OTLP receiver as they reach /metrics", async () => {
  const receiver = new OtlpReceiver();
  const stt = new WhisperHttpFake();
  await stt.start();
  const llm = new OpenAIChatFake();
  const long = Array.from({ length: 10 }, (_, i) => `This is sentence ${i + 1} of a long answer. `);
  // 503 is retried twice (three attempts), then the segment fails.
  const loading = { status: 503, body: { error: "loading model" } };
  stt.reply(
    loading,
    loading,
    loading,
    { body: { text: "Tell me a story." } },
    { body: { text: "Stop." } },
  );
  llm.reply(
    { kind: "json", status: 200, body: { object: "list", data: [{ id: "tiny-llm" }] } },
    streamReply([...long.map(textChunk), finishChunk("stop")]),
    streamReply([textChunk("Sure."), finishChunk("stop")]),
  );
  const server = await startServerChild(await writeCascadedConfig(DIR, stt.url, llm.baseUrl), {
    OTEL_DENO: "true",
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
    // Deno's default encoding, http/protobuf: the receiver decodes the protobuf itself.
    OTEL_SERVICE_NAME: "flowcat-otel-metrics-test",
    OTEL_METRIC_EXPORT_INTERVAL: "250",
    TWILIO_AUTH_TOKEN: SECRET,
  });
  const chats = () => llm.requests.filter((r) => r.path.endsWith("/chat/completions")).length;
  let prom = new Map<string, number>();
  let activeDuringCall: number | undefined;
  try {
    const { call } = await dialTwilio(server.base, { secret: SECRET, publicUrl: PUBLIC });
    await quietAfterSpeech(call);
    // A first utterance the STT server refuses (503): a provider error.
    await callerSays(call);
    await until(() => stt.requests.length >= 3, 10_000, "the failing transcription");
    await new Promise((r) => setTimeout(r, 800));
    await callerSays(call);
    await until(() => chats() === 1, 10_000, "the model asked");
    const before = call.media().length;
    await until(() => call.media().length > before + 60, 10_000, "the long reply playing");
    // An export made while the call runs counts it as active.
    await until(
      () => receiver.latest("flowcat.calls.active").some((p) => p.value === 1),
      5000,
      "an export during the call",
    );
    activeDuringCall = 1;
    // Talk over the bot: its queued audio is dropped.
    await bargeInThenHangUp(call, chats, server.stderr);
    prom = promSamples(await (await fetch(`${server.base}/metrics`)).text());
    // Wait for an export made after the call ended.
    await until(
      () =>
        receiver.latest("flowcat.calls.ended").length > 0 &&
        receiver.latest("flowcat.calls.active").every((p) => p.value === 0),
      5000,
      "an export after the call",
    );
    await new Promise((r) => setTimeout(r, 600));
  } finally {
    const code = await server.stop();
    assert.equal(code, 0, server.stderr());
    await stt.close();
    await llm.close();
    await receiver.close();
  }
  assert.equal(activeDuringCall, 1);
  const one = (name: string) => {
    const ps = receiver.latest(name);
    assert.equal(ps.length, 1, `${name}: one series, got ${show(ps)}`);
    return ps[0];
  };
  // Names, units, kinds and attributes as docs/observability.md lists them.
  const active = one("flowcat.calls.active");
  assert.deepEqual(
    [active.unit, active.type, active.monotonic, active.value],
    ["{call}", "sum", false, 0],
  );
  assert.equal(active.resource["service.name"], "flowcat-otel-metrics-test");
  assert.ok(
    receiver.bodies.some((b) =>
      b.path === "/v1/metrics" && b.contentType.startsWith("application/x-protobuf")
    ),
    "Deno sent protobuf",
  );
  const started = one("flowcat.calls.started");
  assert.deepEqual(
    [started.unit, started.monotonic, started.temporality, started.attributes, started.value],
    ["{call}", true, 2, { transport: "twilio" }, 1],
  );
  const ended = one("flowcat.calls.ended");
  assert.deepEqual(
    [ended.attributes, ended.value],
    [{ transport: "twilio", reason: "caller_hung_up" }, 1],
  );
  const latency = one("flowcat.turn.latency");
  assert.equal(latency.unit, "s");
  assert.equal(latency.type, "histogram");
  assert.deepEqual(latency.bounds, [0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10]);
  assert.ok(latency.count! >= 2, `two answered turns: ${latency.count}`);
  const ttfb = receiver.latest("flowcat.provider.ttfb");
  assert.deepEqual(
    ttfb.map((p) => `${p.attributes.service}/${p.attributes.provider}`).sort(),
    ["llm/ollama", "stt/speaches", "tts/espeak"],
  );
  for (const p of ttfb) assert.ok(p.unit === "s" && p.count! >= 1 && p.sum! > 0, p.name);
  const errors = one("flowcat.provider.errors");
  assert.equal(errors.unit, "{error}");
  assert.deepEqual(
    [errors.attributes.service, errors.attributes.provider],
    ["stt", "speaches"],
  );
  assert.ok(errors.value! >= 1);
  const dropped = receiver.latest("flowcat.frames.dropped");
  const bargeIn = dropped.find((p) => p.attributes.reason === "barge_in");
  assert.ok(bargeIn && bargeIn.value! > 0, `barge-in drops exported: ${show(dropped)}`);
  assert.equal(bargeIn.unit, "{frame}");
  // The call-end line counts the same drops.
  const endLine = server.stderr().split("\n").find((l) => l.includes("call ended"))!;
  const endFields = JSON.parse(endLine.slice(endLine.indexOf("{")));
  assert.equal(endFields.dropped?.barge_in, bargeIn.value, endLine);
  const lag = one("flowcat.event_loop.lag");
  assert.deepEqual([lag.type, lag.unit], ["gauge", "s"]);
  // Every exported series is the one /metrics serves, value for value.
  const mirrored: [string, string, string[]][] = [
    ["flowcat.calls.active", "flowcat_active_calls", []],
    ["flowcat.calls.started", "flowcat_calls_started_total", ["transport"]],
    ["flowcat.calls.ended", "flowcat_calls_ended_total", ["transport", "reason"]],
    ["flowcat.provider.errors", "flowcat_provider_errors_total", ["service", "provider", "kind"]],
    ["flowcat.frames.dropped", "flowcat_frames_dropped_total", ["reason"]],
  ];
  for (const [otel, name, labels] of mirrored) {
    for (const p of receiver.latest(otel)) {
      const key = name + promLabels(p, labels);
      assert.equal(p.value, prom.get(key), `${otel} = ${key}`);
    }
  }
  const histograms: [string, string, string[]][] = [
    ["flowcat.turn.latency", "flowcat_turn_latency_seconds", []],
    ["flowcat.provider.ttfb", "flowcat_provider_ttfb_seconds", ["service", "provider"]],
    ["flowcat.call.duration", "flowcat_call_duration_seconds", []],
  ];
  for (const [otel, name, labels] of histograms) {
    for (const p of receiver.latest(otel)) {
      assert.equal(p.count, prom.get(`${name}_count${promLabels(p, labels)}`), `${otel} count`);
      const sum = prom.get(`${name}_sum${promLabels(p, labels)}`)!;
      assert.ok(Math.abs(p.sum! - sum) < 1e-9, `${otel} sum ${p.sum} = ${sum}`);
      let cumulative = 0;
      p.bounds!.forEach((le, i) => {
        cumulative += p.bucketCounts![i];
        const key = `${name}_bucket${promLabels(p, labels, `le="${le}"`)}`;
        assert.equal(cumulative, prom.get(key), key);
      });
    }
  }
});
