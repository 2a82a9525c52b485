/**
 * Anthropic Messages API client against a local fake speaking the real wire protocol.
 * What every LLM client shares (streaming, tool round trip, auth, retries, aborts, cut
 * streams) is checked by tests/llm_conformance_test.ts; this file keeps what is particular.
 */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import type { Frame, LlmContext, ToolDecl } from "../core/frames.ts";
import {
  ANTHROPIC_DEFAULT_MODEL,
  anthropicMessages,
  CONVERSATION_START,
  createAnthropicLlm,
} from "../providers/anthropic/llm.ts";
import type { ServiceOptions } from "../providers/service_options.ts";
import { anthropicError, AnthropicFake, anthropicStream } from "./fakes/anthropic_fake.ts";

const WEATHER: ToolDecl = {
  name: "get_weather",
  description: "Weather for a city",
  params: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};

const HELLO: LlmContext = { messages: [{ role: "user", content: "Hello" }], tools: [] };

async function collect(it: AsyncIterable<Frame>): Promise<Frame[]> {
  const out: Frame[] = [];
  for await (const f of it) out.push(f);
  return out;
}

async function withFake(
  fn: (fake: AnthropicFake, opts: ServiceOptions) => Promise<void>,
): Promise<void> {
  const fake = await new AnthropicFake().start();
  try {
    await fn(fake, { provider: "anthropic", apiKey: fake.apiKey, baseUrl: fake.url });
  } finally {
    await fake.close();
  }
}

async function rejectsWith(p: Promise<unknown>): Promise<FlowcatError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof FlowcatError, `expected FlowcatError, got ${err}`);
    return err;
  }
  assert.fail("expected a rejection");
}

Deno.test("anthropic: request path, auth headers and body with system, tools, tool round trip", async () => {
  await withFake(async (fake, opts) => {
    const llm = createAnthropicLlm({ ...opts, options: { temperature: 0.3 } });
    const context: LlmContext = {
      messages: [
        { role: "system", content: "You are a voice agent." },
        { role: "system", content: "Be brief." },
        { role: "user", content: "Weather in Oslo and Rome?" },
        {
          role: "assistant",
          content: "Checking.",
          toolCalls: [
            { toolCallId: "toolu_1", functionName: "get_weather", arguments: { city: "Oslo" } },
            { toolCallId: "toolu_2", functionName: "get_weather", arguments: { city: "Rome" } },
          ],
        },
        { role: "tool", toolCallId: "toolu_1", content: '{"temp":3}' },
        { role: "tool", toolCallId: "toolu_2", content: '{"temp":18}' },
        { role: "user", content: "And tomorrow?" },
      ],
      tools: [WEATHER],
    };
    const frames = await collect(llm.runLlm(context));
    assert.equal(frames.at(-1)?.kind, "LlmResponseEnd");
    assert.equal(fake.requests.length, 1);
    const req = fake.requests[0];
    assert.equal(req.method, "POST");
    assert.equal(req.path, "/v1/messages");
    assert.equal(req.headers.get("x-api-key"), fake.apiKey);
    assert.equal(req.headers.get("anthropic-version"), "2023-06-01");
    assert.match(req.headers.get("content-type") ?? "", /application\/json/);
    assert.equal(req.headers.get("authorization"), null);
    assert.deepEqual(req.body, {
      model: ANTHROPIC_DEFAULT_MODEL,
      max_tokens: 1024,
      system: "You are a voice agent.\n\nBe brief.",
      messages: [
        { role: "user", content: [{ type: "text", text: "Weather in Oslo and Rome?" }] },
        {
          role: "assistant",
          content: [
            { type: "text", text: "Checking." },
            { type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Oslo" } },
            { type: "tool_use", id: "toolu_2", name: "get_weather", input: { city: "Rome" } },
          ],
        },
        {
          // Both results and the next user line merged: the API requires alternation.
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "toolu_1", content: '{"temp":3}' },
            { type: "tool_result", tool_use_id: "toolu_2", content: '{"temp":18}' },
            { type: "text", text: "And tomorrow?" },
          ],
        },
      ],
      tools: [{
        name: "get_weather",
        description: "Weather for a city",
        input_schema: WEATHER.params,
      }],
      temperature: 0.3,
      stream: true,
    });
  });
});

Deno.test("anthropic: model, max_tokens and setTools; context tools win", async () => {
  await withFake(async (fake, opts) => {
    const llm = createAnthropicLlm({
      ...opts,
      model: "claude-sonnet-x",
      options: { max_tokens: 200 },
    });
    const other: ToolDecl = { name: "hang_up", description: "End the call", params: {} };
    llm.setTools([other]);
    await collect(llm.runLlm(HELLO));
    await collect(llm.runLlm({ ...HELLO, tools: [WEATHER] }));
    const [a, b] = fake.requests.map((r) => r.body!);
    assert.equal(a.model, "claude-sonnet-x");
    assert.equal(a.max_tokens, 200);
    assert.equal(a.system, undefined);
    assert.deepEqual(a.tools, [{
      name: "hang_up",
      description: "End the call",
      input_schema: { type: "object", properties: {} },
    }]);
    assert.deepEqual((b.tools as { name: string }[]).map((t) => t.name), ["get_weather"]);
  });
});

Deno.test("anthropic: text streams in order between start and end, usage as Metrics", async () => {
  await withFake(async (fake, opts) => {
    fake.reply({
      events: anthropicStream({
        text: ["Hel", "lo", " there"],
        inputTokens: 30,
        outputTokens: 7,
        cacheReadTokens: 100,
      }),
    });
    const frames = await collect(createAnthropicLlm(opts).runLlm(HELLO));
    assert.deepEqual(frames.map((f) => f.kind), [
      "LlmResponseStart",
      "LlmText",
      "LlmText",
      "LlmText",
      "Metrics",
      "LlmResponseEnd",
    ]);
    assert.deepEqual(frames.flatMap((f) => f.kind === "LlmText" ? [f.text] : []), [
      "Hel",
      "lo",
      " there",
    ]);
    const metrics = frames.find((f) => f.kind === "Metrics");
    assert.ok(metrics?.kind === "Metrics");
    assert.deepEqual(metrics.data, [{
      type: "llm_usage",
      processor: "anthropic",
      model: ANTHROPIC_DEFAULT_MODEL,
      tokens: {
        promptTokens: 130,
        completionTokens: 7,
        totalTokens: 137,
        cacheReadInputTokens: 100,
      },
    }]);
  });
});

Deno.test("anthropic: tool calls from input_json_delta fragments", async () => {
  await withFake(async (fake, opts) => {
    fake.reply({
      events: anthropicStream({
        text: ["One moment."],
        tools: [
          { id: "toolu_a", name: "get_weather", json: ['{"ci', 'ty": "Os', 'lo"}'] },
          { id: "toolu_b", name: "hang_up", json: [] },
        ],
      }),
    });
    const frames = await collect(createAnthropicLlm(opts).runLlm({ ...HELLO, tools: [WEATHER] }));
    assert.deepEqual(frames.map((f) => f.kind), [
      "LlmResponseStart",
      "LlmText",
      "FunctionCallsStarted",
      "Metrics",
      "LlmResponseEnd",
    ]);
    const started = frames[2];
    assert.ok(started.kind === "FunctionCallsStarted");
    assert.deepEqual(started.calls, [
      { toolCallId: "toolu_a", functionName: "get_weather", arguments: { city: "Oslo" } },
      { toolCallId: "toolu_b", functionName: "hang_up", arguments: {} },
    ]);
  });
});

Deno.test("anthropic: malformed tool input JSON is a protocol error", async () => {
  await withFake(async (fake, opts) => {
    fake.reply({ events: anthropicStream({ tools: [{ id: "t", name: "f", json: ['{"a":'] }] }) });
    const err = await rejectsWith(collect(createAnthropicLlm(opts).runLlm(HELLO)));
    assert.equal(err.kind, "protocol");
    assert.match(err.message, /^anthropic: tool f: bad input JSON/);
  });
});

Deno.test("anthropic: 403 is auth; a body echoing the key is redacted", async () => {
  await withFake(async (fake, opts) => {
    fake.reply({
      status: 403,
      body: anthropicError("permission_error", `key ${fake.apiKey} lacks access`),
    });
    const err = await rejectsWith(collect(createAnthropicLlm(opts).runLlm(HELLO)));
    assert.equal(err.kind, "auth");
    assert.ok(!err.message.includes(fake.apiKey), err.message);
    assert.match(err.message, /\[redacted\]/);
  });
});

Deno.test("anthropic: 529 overloaded and 503 are retried", async () => {
  await withFake(async (fake, opts) => {
    fake.reply(
      { status: 529, body: anthropicError("overloaded_error", "Overloaded") },
      {
        status: 503,
        body: anthropicError("api_error", "unavailable"),
        headers: { "retry-after": "0" },
      },
      { events: anthropicStream({ text: ["ok"] }) },
    );
    const frames = await collect(createAnthropicLlm(opts).runLlm(HELLO));
    assert.deepEqual(frames.flatMap((f) => f.kind === "LlmText" ? [f.text] : []), ["ok"]);
    assert.equal(fake.requests.length, 3);
  });
});

Deno.test("anthropic: 529 that persists ends in an error naming the provider", async () => {
  await withFake(async (fake, opts) => {
    const overloaded = { status: 529, body: anthropicError("overloaded_error", "Overloaded") };
    fake.reply(overloaded, overloaded, overloaded, overloaded);
    const err = await rejectsWith(collect(createAnthropicLlm(opts).runLlm(HELLO)));
    assert.match(err.message, /^anthropic: HTTP 529.*overloaded_error/);
    assert.equal(fake.requests.length, 3, "first try plus two retries");
  });
});

Deno.test("anthropic: an error event mid-stream is a FlowcatError naming the provider", async () => {
  await withFake(async (fake, opts) => {
    const events = anthropicStream({ text: ["Hel", "lo"] }).slice(0, 4);
    events.push({ event: "error", data: anthropicError("overloaded_error", "Overloaded") });
    fake.reply({ events });
    const seen: string[] = [];
    const err = await rejectsWith((async () => {
      for await (const f of createAnthropicLlm(opts).runLlm(HELLO)) seen.push(f.kind);
    })());
    assert.equal(err.kind, "protocol");
    assert.equal(err.message, "anthropic: overloaded_error: Overloaded");
    assert.deepEqual(seen, ["LlmResponseStart", "LlmText"]);
  });
});

Deno.test("anthropic: a stream cut before message_stop is an error", async () => {
  await withFake(async (fake, opts) => {
    fake.reply({ events: anthropicStream({ text: ["Hi"] }).slice(0, 5) });
    const err = await rejectsWith(collect(createAnthropicLlm(opts).runLlm(HELLO)));
    assert.equal(err.kind, "closed");
    assert.match(err.message, /^anthropic: /);
  });
});

Deno.test("anthropic: an already-aborted signal sends nothing", async () => {
  await withFake(async (fake, opts) => {
    const ac = new AbortController();
    ac.abort();
    await assert.rejects(collect(createAnthropicLlm(opts).runLlm(HELLO, ac.signal)));
    assert.equal(fake.requests.length, 0);
  });
});

Deno.test("anthropic: message mapping drops orphan tool results and empty text", () => {
  const orphans: string[] = [];
  const { system, messages } = anthropicMessages([
    { role: "user", content: "" },
    { role: "user", content: "hi" },
    { role: "tool", toolCallId: "gone", content: "x" },
    {
      role: "assistant",
      content: "",
      toolCalls: [{ toolCallId: "t1", functionName: "f", arguments: {} }],
    },
    { role: "tool", toolCallId: "t1", content: "done" },
  ], (id) => orphans.push(id));
  assert.equal(system, "");
  assert.deepEqual(orphans, ["gone"]);
  assert.deepEqual(messages, [
    { role: "user", content: [{ type: "text", text: "hi" }] },
    { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "f", input: {} }] },
    { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "done" }] },
  ]);
});

Deno.test("anthropic: a conversation the bot opens gets a user line first", async () => {
  await withFake(async (fake, opts) => {
    const llm = createAnthropicLlm(opts);
    await collect(llm.runLlm({ messages: [{ role: "system", content: "Greet." }], tools: [] }));
    await collect(llm.runLlm({
      messages: [{ role: "assistant", content: "Hi!" }, { role: "user", content: "hey" }],
      tools: [],
    }));
    const start = { role: "user", content: [{ type: "text", text: CONVERSATION_START }] };
    assert.deepEqual(fake.requests[0].body!.messages, [start]);
    assert.deepEqual(fake.requests[1].body!.messages, [
      start,
      { role: "assistant", content: [{ type: "text", text: "Hi!" }] },
      { role: "user", content: [{ type: "text", text: "hey" }] },
    ]);
  });
});

Deno.test("anthropic: a reply streaming longer than timeoutMs is not cut", async () => {
  await withFake(async (fake, opts) => {
    fake.reply({ events: anthropicStream({ text: ["a", "b", "c", "d"] }), gapMs: 60 });
    const frames = await collect(createAnthropicLlm({ ...opts, timeoutMs: 200 }).runLlm(HELLO));
    assert.deepEqual(frames.flatMap((f) => f.kind === "LlmText" ? [f.text] : []), [
      "a",
      "b",
      "c",
      "d",
    ]);
  });
});

Deno.test("anthropic: invalid max_tokens is a config error", () => {
  assert.throws(
    () => createAnthropicLlm({ provider: "anthropic", options: { max_tokens: 0 } }),
    (e) => e instanceof FlowcatError && e.kind === "config",
  );
  assert.equal(createAnthropicLlm({ provider: "claude-proxy" }).name(), "claude-proxy");
});
