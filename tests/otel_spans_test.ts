/**
 * Call spans in process, through an in-memory tracer (tests/_recording_tracer.ts): what the
 * service processors report per request (tokens, tool calls, time to first byte, failures,
 * barge-ins), a speech-to-speech call's realtime session and responses under its turns, the
 * number of spans not growing with the audio, and tracing off when `OTEL_DENO` is not `true`.
 * tests/otel_export_test.ts runs the same spans through Deno's OTLP export.
 */
import assert from "node:assert/strict";
import { makeFrame, Pipeline, PipelineTask } from "../mod.ts";
import { memoryLogger } from "../core/log.ts";
import { createLlmContext } from "../core/processors/context.ts";
import { LlmProcessor } from "../core/processors/llm.ts";
import { SttProcessor } from "../core/processors/stt.ts";
import { TtsProcessor } from "../core/processors/tts.ts";
import { createOtelTracing } from "../providers/obs/otel.ts";
import { createAgentServer } from "../server/app.ts";
import { parseConfigText } from "../server/config.ts";
import { tracingFromEnv, tracingWanted } from "../server/tracing.ts";
import { ScriptedLlm, type ScriptedReply, SegmentStt, ToneTts } from "./_cascade_doubles.ts";
import { drive, Recorder, sleep, until } from "./_core_helpers.ts";
import { RecordingTracer } from "./_recording_tracer.ts";
import { dialTwilio, speakTurn } from "./_twilio_client.ts";

const INFO = {
  callId: "7",
  transport: "twilio",
  direction: "inbound",
  pipeline: "cascaded",
  providers: { stt: "segment", llm: "scripted", tts: "tone" },
  models: { llm: "scripted-1" },
};

function rig(replies: ScriptedReply[]) {
  const rec = new RecordingTracer();
  const call = createOtelTracing({ tracer: rec }).startCall(INFO);
  const context = createLlmContext("Be brief.", []);
  const llm = new ScriptedLlm(replies);
  const tts = new ToneTts(5);
  const out = new Recorder("out");
  const task = new PipelineTask(
    new Pipeline([
      new SttProcessor(new SegmentStt(["hello"])),
      new LlmProcessor(llm, context, { model: "scripted-1" }),
      new TtsProcessor(tts),
      out,
    ]),
    { enableMetrics: true, enableUsageMetrics: true, tracer: call },
  );
  call.attach(task);
  return { rec, call, task, context, tts, out };
}

Deno.test("otel spans: a model reply with a tool call carries tokens, tools and its first byte", async () => {
  const call = { toolCallId: "c1", functionName: "book_table", arguments: { seats: 2 } };
  const r = rig([{ text: ["One moment."], calls: [call] }]);
  await drive(r.task, async () => {
    await r.task.queueFrame(makeFrame("LlmRun", {}));
    await until(() => r.tts.said.length === 1 && r.rec.named("tts speak")[0]?.ended === true);
    await r.task.stopWhenDone();
  });
  r.call.end({ reason: "agent_ended", turns: 0 });
  const [chat] = r.rec.named("chat scripted-1");
  assert.ok(chat.ended);
  assert.equal(chat.parent?.name, "turn", "requests hang off a turn");
  assert.equal(chat.parent?.attributes["flowcat.turn.index"], 0);
  assert.equal(chat.parent?.attributes["flowcat.turn.initiator"], "agent");
  assert.equal(chat.parent?.parent?.name, "call");
  assert.deepEqual(
    {
      provider: chat.attributes["flowcat.provider"],
      model: chat.attributes["flowcat.model"],
      tools: chat.attributes["flowcat.tool_calls"],
      input: chat.attributes["gen_ai.usage.input_tokens"],
      output: chat.attributes["gen_ai.usage.output_tokens"],
      interrupted: chat.attributes["flowcat.interrupted"],
    },
    {
      provider: "scripted",
      model: "scripted-1",
      tools: ["book_table"],
      input: 10,
      output: 5,
      interrupted: false,
    },
  );
  assert.equal(typeof chat.attributes["flowcat.ttfb_seconds"], "number");
  const [speak] = r.rec.named("tts speak");
  assert.equal(speak.attributes["flowcat.tts.characters"], "One moment.".length);
  assert.equal(speak.attributes["flowcat.provider"], "tone");
  const [callSpan] = r.rec.named("call");
  assert.equal(callSpan.parent, undefined);
  assert.equal(callSpan.options.root, true);
  assert.equal(callSpan.attributes["flowcat.call.end_reason"], "agent_ended");
  assert.ok(r.rec.spans.every((s) => s.ended), "every span ended");
});

Deno.test("otel spans: a failing model is an error span; a barge-in marks the reply interrupted", async () => {
  const failing = rig([{ text: ["Hmm"], fail: "HTTP 503: busy (3 attempts)" }]);
  await drive(failing.task, async () => {
    await failing.task.queueFrame(makeFrame("LlmRun", {}));
    await until(() => failing.rec.named("chat scripted-1")[0]?.ended === true);
    await failing.task.stopWhenDone();
  });
  const [bad] = failing.rec.named("chat scripted-1");
  assert.deepEqual(bad.status, {
    code: 2,
    message: "scripted-llm: HTTP 503: busy (3 attempts)",
  });
  assert.equal(bad.attributes["error.type"], "provider_error");

  const cut = rig([{ text: ["A long ", "answer ", "that goes on."], gapMs: 60 }]);
  await drive(cut.task, async () => {
    await cut.task.queueFrame(makeFrame("LlmRun", {}));
    await until(() => cut.rec.named("chat scripted-1").length === 1);
    await sleep(70);
    await cut.task.queueFrame(makeFrame("Interruption", {}));
    await until(() => cut.rec.named("chat scripted-1")[0].ended);
    await cut.task.stopWhenDone();
  });
  const [chat] = cut.rec.named("chat scripted-1");
  assert.equal(chat.attributes["flowcat.interrupted"], true);
  assert.deepEqual(chat.status, { code: 0 }, "a barge-in is no error");
});

Deno.test("otel spans: a speech-to-speech call has a session under the call and responses under turns", async () => {
  const parsed = await parseConfigText(
    JSON.stringify({
      agent: {
        graph: {
          version: 1,
          start: "a",
          nodes: [
            {
              id: "a",
              prompt: "Hi.",
              transitions: [{ name: "go", description: "Go on.", target: "b" }],
            },
            { id: "b", prompt: "Bye.", terminal: true },
          ],
        },
      },
      pipeline: "s2s",
      providers: { realtime: { name: "echo", options: { tts: "none", greeting: "hi" } } },
      telephony: { public_url: "https://agent.example.com", carriers: ["twilio"] },
    }),
    "json",
    ".",
  );
  assert.ok(parsed.ok, JSON.stringify(!parsed.ok && parsed.problems));
  const rec = new RecordingTracer();
  const app = await createAgentServer({
    config: parsed.config,
    env: (n) => (n === "TWILIO_AUTH_TOKEN" ? "s" : undefined),
    logger: memoryLogger(),
    tracing: createOtelTracing({ tracer: rec }),
  });
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, app.handler);
  try {
    const { call, runId } = await dialTwilio(`http://127.0.0.1:${server.addr.port}`, {
      secret: "s",
      publicUrl: "https://agent.example.com",
    });
    await until(() => call.media().length > 5, 5000, "greeting");
    const greeted = call.media().length;
    await speakTurn(call);
    await until(() => call.media().length > greeted + 10, 5000, "the echo");
    await call.hangup();
    await until(() => rec.named("call")[0]?.ended === true, 5000, "the call span ended");
    await call.close();
    const [callSpan] = rec.named("call");
    assert.equal(callSpan.attributes["flowcat.call.id"], String(runId));
    assert.equal(callSpan.attributes["flowcat.pipeline"], "s2s");
    assert.equal(callSpan.attributes["flowcat.provider.realtime"], "echo");
    assert.equal(callSpan.attributes["flowcat.call.end_reason"], "caller_hung_up");
    assert.equal(callSpan.attributes["flowcat.call.turns"], 1);
    const [session] = rec.named("realtime session");
    assert.equal(session.parent, callSpan, "the session lasts the call: under the call itself");
    assert.ok(session.ended);
    assert.deepEqual(session.status, { code: 0 });
    const responses = rec.named("chat echo");
    assert.ok(responses.length >= 2, `greeting and echo: ${responses.length}`);
    const turnIndex = (s: { parent?: { attributes: Record<string, unknown> } }) =>
      s.parent?.attributes["flowcat.turn.index"];
    assert.deepEqual([...new Set(responses.map(turnIndex))], [0, 1]);
    const echo = responses.find((s) => turnIndex(s) === 1)!;
    assert.equal(typeof echo.attributes["flowcat.ttfb_seconds"], "number");
    assert.ok(Number(echo.attributes["gen_ai.usage.input_tokens"]) > 0, "the echo's usage");
    assert.equal(echo.attributes["gen_ai.provider.name"], "echo");
    assert.equal(echo.attributes["gen_ai.input.messages"], undefined, "no content by default");
    // Spans come per request and turn, never per frame: some 60 caller frames, a few spans.
    assert.ok(rec.spans.length <= 8, `${rec.spans.length} spans: ${rec.spans.map((s) => s.name)}`);
    assert.ok(rec.spans.every((s) => s.ended), "every span ended");
  } finally {
    await app.calls.drain(500);
    await server.shutdown();
    await app.close();
  }
});

Deno.test("otel spans: tracing is off unless OTEL_DENO is true, and loads nothing then", async () => {
  assert.equal(tracingWanted(() => undefined), false);
  assert.equal(tracingWanted(() => "false"), false);
  assert.equal(tracingWanted(() => "true"), true);
  assert.equal(tracingWanted(() => "1"), true);
  assert.equal(
    tracingWanted(() => {
      throw new Deno.errors.NotCapable("env");
    }),
    false,
  );
  assert.equal(await tracingFromEnv(() => undefined), undefined);
  // A task without a tracer hands its processors none.
  const probe = new Recorder("probe");
  const task = new PipelineTask(new Pipeline([probe]));
  await drive(task, () => task.stopWhenDone());
  assert.equal(probe.setup?.tracer, undefined);
});

Deno.test("otel spans: content, when recorded, holds the messages; a realtime response the caller's words", async () => {
  const rec = new RecordingTracer();
  const call = createOtelTracing({ tracer: rec, recordContent: true }).startCall(INFO);
  const context = createLlmContext("Be brief.", []);
  context.messages.push({ role: "user", content: "Hello?" });
  const task = new PipelineTask(
    new Pipeline([new LlmProcessor(new ScriptedLlm([{ text: ["Hi ", "there."] }]), context)]),
    { enableUsageMetrics: true, tracer: call },
  );
  await drive(task, async () => {
    await task.queueFrame(makeFrame("LlmRun", {}));
    await until(() => rec.named("chat scripted-1")[0]?.ended === true);
    await task.stopWhenDone();
  });
  const [chat] = rec.named("chat scripted-1");
  assert.equal(
    chat.attributes["gen_ai.system_instructions"],
    '[{"type":"text","content":"Be brief."}]',
  );
  assert.equal(
    chat.attributes["gen_ai.input.messages"],
    '[{"role":"user","parts":[{"type":"text","content":"Hello?"}]}]',
  );
  assert.equal(
    chat.attributes["gen_ai.output.messages"],
    '[{"role":"assistant","parts":[{"type":"text","content":"Hi there."}],"finish_reason":"stop"}]',
  );
  // A realtime response: the caller's final transcript in, the bot's transcript out.
  const s2s = createOtelTracing({ tracer: rec, recordContent: true }).startCall({
    ...INFO,
    pipeline: "s2s",
    providers: { realtime: "gemini" },
    models: { realtime: "gemini-live-2.5" },
  });
  const req = s2s.request({
    service: "realtime",
    operation: "response",
    answersCaller: true,
    messages: [{ role: "user", content: "What time is it?" }],
  });
  req.output("It is noon.");
  req.end();
  const [reply] = rec.named("chat gemini-live-2.5");
  assert.equal(reply.attributes["gen_ai.provider.name"], "gcp.gemini");
  assert.equal(reply.parent?.attributes["flowcat.turn.initiator"], "caller", "it opened the turn");
  assert.equal(
    reply.attributes["gen_ai.input.messages"],
    '[{"role":"user","parts":[{"type":"text","content":"What time is it?"}]}]',
  );
  assert.match(String(reply.attributes["gen_ai.output.messages"]), /It is noon\./);
});
