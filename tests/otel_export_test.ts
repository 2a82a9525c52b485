/**
 * Call traces end to end: the real server (`server/main.ts` in a child process under its
 * computed permissions, with `OTEL_DENO=true`) runs a scripted cascaded Twilio call (whisper-style
 * STT and an OpenAI-style LLM as local fakes, eSpeak NG in process), Deno exports the spans over
 * OTLP/HTTP (http/json) to a receiver in this test, which checks span names, attributes and the
 * call -> turn -> provider request links, a barge-in marking its turn interrupted, and that no
 * secret (the call token in the media-socket URL, the carrier secret) is in anything exported.
 */
import assert from "node:assert/strict";
import { redactQuery } from "../providers/obs/url_redaction.ts";
import { until } from "./_core_helpers.ts";
import { OtlpReceiver, type ReceivedSpan } from "./_otlp_receiver.ts";
import {
  bargeInThenHangUp,
  callerSays,
  OTEL_PUBLIC_URL,
  quietAfterSpeech,
  tone,
  writeCascadedConfig,
} from "./_otel_call.ts";
import { startServerChild } from "./_server_child.ts";
import { dialTwilio } from "./_twilio_client.ts";
import {
  finishChunk,
  OpenAIChatFake,
  streamReply,
  textChunk,
  toolCallChunk,
  usageChunk,
} from "./fakes/openai_chat_fake.ts";
import { WhisperHttpFake } from "./fakes/whisper_http_fake.ts";

const DIR = ".tmp/otel_export_test";
const SECRET = "twilio-secret-for-otel";
const PUBLIC = OTEL_PUBLIC_URL;

function writeConfig(stt: string, llm: string, extra = ""): Promise<string> {
  return writeCascadedConfig(DIR, stt, llm, {
    extra,
    name: `agent${extra === "" ? "" : "-content"}.yaml`,
  });
}

/** The GenAI attributes a chat span carries without content. */
const GENAI = [
  "gen_ai.operation.name",
  "gen_ai.provider.name",
  "gen_ai.system",
  "gen_ai.request.model",
  "gen_ai.usage.input_tokens",
  "gen_ai.usage.output_tokens",
  "gen_ai.response.finish_reasons",
];
/** Attributes that hold what was said: only with `record_content`. */
const CONTENT = [
  "gen_ai.input.messages",
  "gen_ai.output.messages",
  "gen_ai.system_instructions",
  "flowcat.stt.transcript",
  "flowcat.tts.text",
];

function pick(o: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  return Object.fromEntries(keys.filter((k) => k in o).map((k) => [k, o[k]]));
}

function byId(spans: ReceivedSpan[]): Map<string, ReceivedSpan> {
  return new Map(spans.map((s) => [s.spanId, s]));
}

Deno.test("otel: a cascaded call's spans reach an OTLP receiver as call -> turn -> request", async () => {
  const receiver = new OtlpReceiver();
  const stt = new WhisperHttpFake();
  await stt.start();
  const llm = new OpenAIChatFake();
  const long = Array.from({ length: 10 }, (_, i) => `This is sentence ${i + 1} of a long answer. `);
  stt.reply({ body: { text: "Tell me a story." } }, { body: { text: "Stop." } });
  llm.reply(
    // The server's start probe (GET /models) comes first: Ollama lists the model.
    { kind: "json", status: 200, body: { object: "list", data: [{ id: "tiny-llm" }] } },
    streamReply([
      ...long.map(textChunk),
      finishChunk("stop"),
      usageChunk({ prompt_tokens: 42, completion_tokens: 17, total_tokens: 59 }),
    ]),
    streamReply([
      textChunk("Sure."),
      finishChunk("stop"),
      usageChunk({ prompt_tokens: 60, completion_tokens: 2, total_tokens: 62 }),
    ]),
  );
  const server = await startServerChild(await writeConfig(stt.url, llm.baseUrl), {
    OTEL_DENO: "true",
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    OTEL_SERVICE_NAME: "flowcat-otel-test",
    OTEL_BSP_SCHEDULE_DELAY: "200",
    TWILIO_AUTH_TOKEN: SECRET,
  });
  let runId = 0;
  let token = "";
  // The start probe's GET /models is a request too: count the chat completions.
  const chats = () => llm.requests.filter((r) => r.path.endsWith("/chat/completions")).length;
  try {
    // The collector's port is in no grant: Deno's exporter runs outside the permission checks.
    assert.ok(!server.flags.join(" ").includes(new URL(receiver.endpoint).port));
    assert.ok(server.flags.some((f) => f.startsWith("--allow-env=") && f.includes("OTEL_DENO")));
    const dialled = await dialTwilio(server.base, { secret: SECRET, publicUrl: PUBLIC });
    const { call } = dialled;
    runId = dialled.runId;
    token = dialled.token;
    await quietAfterSpeech(call);
    await callerSays(call);
    await until(() => chats() === 1, 10_000, "the model asked");
    const before = call.media().length;
    await until(() => call.media().length > before + 60, 10_000, "the long reply playing");
    // Talk over the bot: the turn it was answering is cut.
    await bargeInThenHangUp(call, chats, server.stderr);
  } finally {
    const code = await server.stop();
    assert.equal(code, 0, server.stderr());
    await stt.close();
    await llm.close();
  }
  try {
    await until(() => receiver.scoped("flowcat").some((s) => s.name === "call"), 10_000, "spans");
    const ours = receiver.scoped("flowcat");
    const spans = byId(ours);
    const call = ours.find((s) => s.name === "call")!;
    assert.equal(call.parentSpanId, "", "the call is a root span");
    assert.equal(call.kind, 2);
    assert.equal(call.resource["service.name"], "flowcat-otel-test");
    assert.deepEqual(
      {
        id: call.attributes["flowcat.call.id"],
        leg: typeof call.attributes["flowcat.call.leg_id"],
        transport: call.attributes["flowcat.transport"],
        direction: call.attributes["flowcat.call.direction"],
        pipeline: call.attributes["flowcat.pipeline"],
        stt: call.attributes["flowcat.provider.stt"],
        llm: call.attributes["flowcat.provider.llm"],
        tts: call.attributes["flowcat.provider.tts"],
        model: call.attributes["flowcat.model.llm"],
        reason: call.attributes["flowcat.call.end_reason"],
        turns: call.attributes["flowcat.call.turns"],
      },
      {
        id: String(runId),
        leg: "string",
        transport: "twilio",
        direction: "inbound",
        pipeline: "cascaded",
        stt: "speaches",
        llm: "ollama",
        tts: "espeak",
        model: "tiny-llm",
        reason: "caller_hung_up",
        turns: 2,
      },
    );
    assert.ok(call.intAttributes.has("flowcat.call.turns"), "counts are ints");
    for (const s of ours) {
      assert.equal(s.traceId, call.traceId, `${s.name} is in the call's trace`);
      assert.equal(s.attributes["flowcat.call.id"], String(runId), `${s.name} carries the call id`);
    }
    const turns = ours.filter((s) => s.name === "turn")
      .sort((a, b) =>
        Number(a.attributes["flowcat.turn.index"]) - Number(b.attributes["flowcat.turn.index"])
      );
    assert.deepEqual(
      turns.map((t) => [
        t.attributes["flowcat.turn.index"],
        t.attributes["flowcat.turn.initiator"],
        t.attributes["flowcat.turn.interrupted"],
        t.parentSpanId === call.spanId,
      ]),
      [[0, "agent", false, true], [1, "caller", true, true], [2, "caller", false, true]],
    );
    assert.equal(typeof turns[1].attributes["flowcat.turn.latency_seconds"], "number");
    const turnOf = (s: ReceivedSpan) => spans.get(s.parentSpanId)?.attributes["flowcat.turn.index"];
    const requests = ours.filter((s) => s.attributes["flowcat.service"] !== undefined);
    for (const r of requests) {
      assert.equal(spans.get(r.parentSpanId)?.name, "turn", `${r.name} hangs off a turn`);
      assert.equal(r.kind, 3);
      assert.equal(r.attributes["flowcat.turn.index"], turnOf(r));
    }
    const named = (name: string) => requests.filter((r) => r.name === name);
    assert.deepEqual(named("stt transcribe").map(turnOf), [1, 2]);
    for (const s of named("stt transcribe")) {
      assert.equal(s.attributes["flowcat.provider"], "speaches");
      assert.equal(typeof s.attributes["flowcat.ttfb_seconds"], "number");
    }
    // Model requests as the OpenTelemetry GenAI conventions name them: what LLM-tracing
    // backends (Langfuse and the like) read.
    const chats = named("chat tiny-llm");
    assert.deepEqual(chats.map(turnOf), [1, 2]);
    assert.equal(chats[0].attributes["flowcat.provider"], "ollama");
    assert.equal(chats[0].attributes["flowcat.model"], "tiny-llm");
    assert.deepEqual(pick(chats[0].attributes, GENAI), {
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": "ollama",
      "gen_ai.system": "ollama",
      "gen_ai.request.model": "tiny-llm",
      "gen_ai.usage.input_tokens": 42,
      "gen_ai.usage.output_tokens": 17,
      "gen_ai.response.finish_reasons": ["stop"],
    });
    assert.ok(chats[0].intAttributes.has("gen_ai.usage.input_tokens"), "token counts are ints");
    assert.equal(chats[1].attributes["gen_ai.usage.input_tokens"], 60);
    assert.equal(typeof chats[0].attributes["flowcat.ttfb_seconds"], "number");
    // Content is opt-in: by default no prompt, completion, transcript or spoken text.
    for (const s of ours) {
      for (const key of CONTENT) assert.equal(s.attributes[key], undefined, `${s.name} ${key}`);
    }
    const everything = receiver.bodies.map((b) => b.text).join("\n");
    for (const words of ["Tell me a story", "This is sentence", "Hi there"]) {
      assert.ok(!everything.includes(words), `"${words}" is not exported`);
    }
    const tts = named("tts speak");
    assert.ok(tts.some((t) => turnOf(t) === 0), "the greeting is spoken in turn 0");
    assert.ok(tts.some((t) => turnOf(t) === 1), "the reply is spoken in turn 1");
    assert.equal(tts[0].attributes["flowcat.provider"], "espeak");
    // Deno's own spans: the media socket's request, with the call token's value redacted.
    const media = receiver.scoped("deno").find((s) =>
      String(s.attributes["url.path"] ?? "").startsWith("/telephony/ws/twilio/")
    );
    assert.ok(media, "Deno traced the media-socket request");
    assert.match(String(media.attributes["url.query"]), /^token=REDACTED$/);
    assert.ok(!everything.includes(SECRET), "the carrier secret is not exported");
    assert.ok(token.length > 10 && !everything.includes(token), "no call token is exported");
    assert.ok(!everything.includes("flowcat.probe"), "the redaction probe span is never exported");
    assert.ok(receiver.bodies.every((b) => b.contentType.startsWith("application/json")));
  } finally {
    await receiver.close();
  }
});

Deno.test("otel: query values of URL attributes are redacted, names kept", () => {
  assert.equal(
    redactQuery("http://h/ws/twilio/7?token=abc&x=1"),
    "http://h/ws/twilio/7?token=REDACTED&x=REDACTED",
  );
  assert.equal(redactQuery("token=abc"), "token=REDACTED");
  assert.equal(redactQuery("http://h/a/b"), "http://h/a/b");
  assert.equal(redactQuery("http://h/a?flag#frag"), "http://h/a?flag");
  assert.equal(redactQuery(""), "");
});

Deno.test("otel: with record_content the model's prompt, reply and tool call are in its span", async () => {
  const receiver = new OtlpReceiver();
  const stt = new WhisperHttpFake();
  await stt.start();
  const llm = new OpenAIChatFake();
  stt.reply({ body: { text: "Goodbye now." } });
  llm.reply(
    { kind: "json", status: 200, body: { object: "list", data: [{ id: "tiny-llm" }] } },
    streamReply([
      textChunk("Bye!"),
      toolCallChunk(0, { id: "call_1", name: "goodbye", arguments: "{}" }),
      finishChunk("tool_calls"),
      usageChunk({ prompt_tokens: 30, completion_tokens: 4, total_tokens: 34 }),
    ]),
  );
  const path = await writeConfig(
    stt.url,
    llm.baseUrl,
    "observability: { tracing: { record_content: true } }\n",
  );
  const server = await startServerChild(path, {
    OTEL_DENO: "true",
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    OTEL_BSP_SCHEDULE_DELAY: "200",
    TWILIO_AUTH_TOKEN: SECRET,
  });
  try {
    const { call } = await dialTwilio(server.base, { secret: SECRET, publicUrl: PUBLIC });
    await quietAfterSpeech(call);
    await call.speak(tone(1));
    await call.speak(new Int16Array(8000 * 1.2));
    // The model calls goodbye: the brain ends the call after its line.
    await until(() => server.stderr().includes("call ended"), 15_000, "the agent to end the call");
    await call.close();
  } finally {
    assert.equal(await server.stop(), 0, server.stderr());
    await stt.close();
    await llm.close();
  }
  try {
    await until(() => receiver.scoped("flowcat").some((s) => s.name === "call"), 10_000, "spans");
    const ours = receiver.scoped("flowcat");
    const [chat] = ours.filter((s) => s.name === "chat tiny-llm");
    assert.ok(chat, ours.map((s) => s.name).join(", "));
    assert.deepEqual(chat.attributes["gen_ai.response.finish_reasons"], ["tool_calls"]);
    assert.deepEqual(chat.attributes["flowcat.tool_calls"], ["goodbye"]);
    assert.equal(chat.attributes["gen_ai.usage.output_tokens"], 4);
    const system = JSON.parse(String(chat.attributes["gen_ai.system_instructions"]));
    assert.match(system[0].content, /You are the Flowcat demo agent/);
    const input = JSON.parse(String(chat.attributes["gen_ai.input.messages"]));
    assert.deepEqual(input.at(-1), {
      role: "user",
      parts: [{ type: "text", content: "Goodbye now." }],
    });
    assert.deepEqual(input[0], {
      role: "assistant",
      parts: [{ type: "text", content: "Hi there." }],
    });
    assert.deepEqual(JSON.parse(String(chat.attributes["gen_ai.output.messages"])), [{
      role: "assistant",
      parts: [
        { type: "text", content: "Bye!" },
        { type: "tool_call", id: "call_1", name: "goodbye", arguments: {} },
      ],
      finish_reason: "tool_calls",
    }]);
    const [heard] = ours.filter((s) => s.name === "stt transcribe");
    assert.equal(heard.attributes["flowcat.stt.transcript"], "Goodbye now.");
    assert.ok(ours.some((s) => s.attributes["flowcat.tts.text"] === "Bye!"));
    const call = ours.find((s) => s.name === "call")!;
    assert.equal(call.attributes["flowcat.call.end_reason"], "agent_ended");
    const everything = receiver.bodies.map((b) => b.text).join("\n");
    assert.ok(!everything.includes(SECRET), "content or not, no secret");
  } finally {
    await receiver.close();
  }
});
