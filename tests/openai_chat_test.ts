/**
 * OpenAI-compatible chat-completions client against a local fake over real HTTP.
 * What every LLM client shares (streaming, tool round trip, auth, retries, aborts, cut
 * streams) is checked by tests/llm_conformance_test.ts; this file keeps what is particular.
 */

import assert from "node:assert/strict";
import type { Frame, FrameOf, LlmContext, ToolDecl } from "../core/frames.ts";
import { FlowcatError } from "../core/errors.ts";
import { memoryLogger } from "../core/log.ts";
import {
  createOpenAIChatLlm,
  OpenAIChatLlm,
  parseChatCompletionStream,
  toOpenAIChatMessages,
} from "../providers/openai/chat.ts";
import type { ServiceOptions } from "../providers/service_options.ts";
import {
  deltaChunk,
  errorChunk,
  errorReply,
  finishChunk,
  OpenAIChatFake,
  streamReply,
  textChunk,
  toolCallChunk,
  usageChunk,
} from "./fakes/openai_chat_fake.ts";

const KEY = "sk-test-0123456789abcdefSECRET";

const WEATHER: ToolDecl = {
  name: "get_weather",
  description: "Weather for a city",
  params: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};

const hello: LlmContext = {
  messages: [
    { role: "system", content: "Be brief." },
    { role: "user", content: "Hi" },
  ],
  tools: [],
};

/** Run the fake for one test and close it even when the test fails. */
async function withFake(fn: (fake: OpenAIChatFake) => Promise<void>): Promise<void> {
  const fake = new OpenAIChatFake();
  try {
    await fn(fake);
  } finally {
    await fake.close();
  }
}

function llmFor(fake: OpenAIChatFake, extra: Partial<ServiceOptions> = {}): OpenAIChatLlm {
  return new OpenAIChatLlm({ provider: "groq", apiKey: KEY, baseUrl: fake.baseUrl, ...extra });
}

async function collect(it: AsyncIterable<Frame>): Promise<Frame[]> {
  const out: Frame[] = [];
  for await (const f of it) out.push(f);
  return out;
}

async function failure(p: Promise<unknown>): Promise<FlowcatError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof FlowcatError, `expected FlowcatError, got ${err}`);
    return err;
  }
  assert.fail("expected a failure");
}

const texts = (frames: Frame[]) =>
  frames.filter((f): f is FrameOf<"LlmText"> => f.kind === "LlmText").map((f) => f.text);
const only = <K extends Frame["kind"]>(frames: Frame[], kind: K) =>
  frames.filter((f): f is FrameOf<K> => f.kind === kind);

Deno.test("request: path, bearer auth, body with tools and sampling options", async () => {
  await withFake(async (fake) => {
    fake.reply(streamReply([textChunk("ok"), finishChunk("stop")]));
    const llm = createOpenAIChatLlm({
      provider: "openai",
      apiKey: KEY,
      baseUrl: `${fake.baseUrl}/`,
      model: "gpt-4.1-mini",
      options: { temperature: 0.3, max_tokens: 64, top_p: 0.9, voice_speed: 2 },
    });
    await collect(llm.runLlm({ ...hello, tools: [WEATHER] }));
    assert.equal(fake.requests.length, 1);
    const req = fake.requests[0];
    assert.equal(req.method, "POST");
    assert.equal(req.path, "/v1/chat/completions");
    assert.equal(req.headers.authorization, `Bearer ${KEY}`);
    assert.match(req.headers["content-type"], /application\/json/);
    assert.deepEqual(req.body, {
      model: "gpt-4.1-mini",
      messages: [
        { role: "system", content: "Be brief." },
        { role: "user", content: "Hi" },
      ],
      stream: true,
      stream_options: { include_usage: true },
      tools: [{
        type: "function",
        function: {
          name: WEATHER.name,
          description: WEATHER.description,
          parameters: WEATHER.params,
        },
      }],
      temperature: 0.3,
      max_tokens: 64,
      top_p: 0.9,
    });
  });
});

Deno.test("request: no key -> no authorization header; no tools -> no tools field; defaults", async () => {
  await withFake(async (fake) => {
    fake.reply(streamReply([textChunk("ok"), finishChunk("stop")]));
    const llm = createOpenAIChatLlm({ provider: "ollama", baseUrl: fake.baseUrl });
    assert.equal(llm.name(), "ollama");
    await collect(llm.runLlm(hello));
    const req = fake.requests[0];
    assert.equal(req.headers.authorization, undefined);
    assert.equal("tools" in req.body, false);
    assert.equal("tool_choice" in req.body, false);
    assert.equal(req.body.model, "gpt-4o-mini");
  });
});

Deno.test("request: stream_usage false leaves out stream_options; extra_body merges", async () => {
  await withFake(async (fake) => {
    fake.reply(streamReply([textChunk("ok"), finishChunk("stop")]));
    const llm = llmFor(fake, {
      provider: "mistral",
      options: { stream_usage: false, extra_body: { safe_prompt: true, model: "ignored" } },
      model: "mistral-small-latest",
    });
    await collect(llm.runLlm(hello));
    const body = fake.requests[0].body;
    assert.equal("stream_options" in body, false);
    assert.equal(body.safe_prompt, true);
    assert.equal(body.model, "mistral-small-latest");
  });
});

Deno.test("stream: text deltas in order between LlmResponseStart and LlmResponseEnd", async () => {
  await withFake(async (fake) => {
    fake.reply(
      streamReply([
        deltaChunk({ role: "assistant", content: "" }),
        textChunk("Hello"),
        textChunk(", "),
        textChunk("world."),
        finishChunk("stop"),
      ]),
    );
    const frames = await collect(llmFor(fake).runLlm(hello));
    assert.deepEqual(frames.map((f) => f.kind), [
      "LlmResponseStart",
      "LlmText",
      "LlmText",
      "LlmText",
      "LlmResponseEnd",
    ]);
    assert.deepEqual(texts(frames), ["Hello", ", ", "world."]);
  });
});

Deno.test("tools: arguments in three fragments round trip into the next request", async () => {
  await withFake(async (fake) => {
    fake.reply(
      streamReply([
        toolCallChunk(0, { id: "call_abc", name: "get_weather" }),
        toolCallChunk(0, { arguments: '{"ci' }),
        toolCallChunk(0, { arguments: 'ty": "Par' }),
        toolCallChunk(0, { arguments: 'is"}' }),
        finishChunk("tool_calls"),
      ]),
      streamReply([textChunk("Sunny in Paris."), finishChunk("stop")]),
    );
    const llm = llmFor(fake);
    llm.setTools([WEATHER]);
    const first = await collect(llm.runLlm(hello));
    assert.deepEqual(first.map((f) => f.kind), [
      "LlmResponseStart",
      "FunctionCallsStarted",
      "LlmResponseEnd",
    ]);
    const calls = only(first, "FunctionCallsStarted")[0].calls;
    assert.deepEqual(calls, [
      { toolCallId: "call_abc", functionName: "get_weather", arguments: { city: "Paris" } },
    ]);
    assert.equal((fake.requests[0].body.tools as unknown[]).length, 1, "setTools offered");

    const next: LlmContext = {
      messages: [
        ...hello.messages,
        { role: "assistant", content: "", toolCalls: calls },
        { role: "tool", toolCallId: "call_abc", content: '{"sky":"sunny"}' },
      ],
      tools: [],
    };
    const second = await collect(llm.runLlm(next));
    assert.deepEqual(texts(second), ["Sunny in Paris."]);
    assert.deepEqual((fake.requests[1].body.messages as unknown[]).slice(2), [
      {
        role: "assistant",
        content: null,
        tool_calls: [{
          id: "call_abc",
          type: "function",
          function: { name: "get_weather", arguments: '{"city":"Paris"}' },
        }],
      },
      { role: "tool", tool_call_id: "call_abc", content: '{"sky":"sunny"}' },
    ]);
  });
});

Deno.test("tools: two parallel calls with interleaved fragments, in index order", async () => {
  await withFake(async (fake) => {
    fake.reply(
      streamReply([
        toolCallChunk(0, { id: "call_1", name: "get_weather", arguments: '{"city":' }),
        toolCallChunk(1, { id: "call_2", name: "get_weather", arguments: '{"city":' }),
        toolCallChunk(0, { arguments: '"Oslo"}' }),
        toolCallChunk(1, { arguments: '"Rome"}' }),
        finishChunk("tool_calls"),
      ]),
    );
    const frames = await collect(llmFor(fake).runLlm({ ...hello, tools: [WEATHER] }));
    assert.deepEqual(only(frames, "FunctionCallsStarted")[0].calls, [
      { toolCallId: "call_1", functionName: "get_weather", arguments: { city: "Oslo" } },
      { toolCallId: "call_2", functionName: "get_weather", arguments: { city: "Rome" } },
    ]);
  });
});

Deno.test("tools: parallel calls that all say index 0 (Ollama) are told apart by id", async () => {
  await withFake(async (fake) => {
    fake.reply(
      streamReply([
        toolCallChunk(0, { id: "call_a", name: "get_weather", arguments: '{"city":"Oslo"}' }),
        toolCallChunk(0, { id: "call_b", name: "get_time", arguments: "{}" }),
        finishChunk("tool_calls"),
      ]),
    );
    const frames = await collect(llmFor(fake, { provider: "ollama" }).runLlm(hello));
    const calls = only(frames, "FunctionCallsStarted")[0].calls;
    assert.deepEqual(calls.map((c) => [c.toolCallId, c.functionName]), [
      ["call_a", "get_weather"],
      ["call_b", "get_time"],
    ]);
  });
});

Deno.test("usage: Metrics frame after the calls, before LlmResponseEnd", async () => {
  await withFake(async (fake) => {
    fake.reply(
      streamReply([
        textChunk("Checking."),
        toolCallChunk(0, { id: "call_1", name: "get_weather", arguments: '{"city":"Oslo"}' }),
        finishChunk("tool_calls"),
        usageChunk({
          prompt_tokens: 120,
          completion_tokens: 30,
          total_tokens: 150,
          prompt_tokens_details: { cached_tokens: 64, audio_tokens: 0 },
          completion_tokens_details: { reasoning_tokens: 12, audio_tokens: 0 },
        }),
      ]),
    );
    const frames = await collect(llmFor(fake, { model: "llama-3.3-70b-versatile" }).runLlm(hello));
    assert.deepEqual(frames.map((f) => f.kind), [
      "LlmResponseStart",
      "LlmText",
      "FunctionCallsStarted",
      "Metrics",
      "LlmResponseEnd",
    ]);
    assert.deepEqual(only(frames, "Metrics")[0].data, [{
      type: "llm_usage",
      processor: "groq",
      model: "llama-3.3-70b-versatile",
      tokens: {
        promptTokens: 120,
        completionTokens: 30,
        totalTokens: 150,
        cacheReadInputTokens: 64,
        reasoningTokens: 12,
      },
    }]);
  });
});

Deno.test("errors: 500 twice then 200 -> retried and succeeds", async () => {
  await withFake(async (fake) => {
    fake.reply(
      errorReply(500, "The server had an error", "server_error"),
      errorReply(500, "The server had an error", "server_error"),
      streamReply([textChunk("made it"), finishChunk("stop")]),
    );
    const frames = await collect(llmFor(fake).runLlm(hello));
    assert.deepEqual(texts(frames), ["made it"]);
    assert.equal(fake.requests.length, 3);
  });
});

Deno.test("errors: 400 is not retried and is a protocol error with the reason", async () => {
  await withFake(async (fake) => {
    fake.reply(errorReply(400, "Invalid schema for function 'get_weather'"));
    const err = await failure(collect(llmFor(fake).runLlm(hello)));
    assert.equal(err.kind, "protocol");
    assert.match(err.message, /^groq: HTTP 400: .*Invalid schema/);
    assert.equal(fake.requests.length, 1);
  });
});

Deno.test("cancel: abort while waiting for data (no frame pending) ends promptly", async () => {
  await withFake(async (fake) => {
    fake.reply(streamReply([textChunk("one")], { hold: true }));
    const ctl = new AbortController();
    const seen: Frame[] = [];
    const run = (async () => {
      const llm = llmFor(fake, { timeoutMs: 20_000 });
      for await (const f of llm.runLlm(hello, ctl.signal)) seen.push(f);
      return "ended";
    })();
    while (texts(seen).length < 1) await new Promise((r) => setTimeout(r, 5));
    ctl.abort();
    // Loose bound: well under the 20 s idle deadline that would otherwise end it.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise((r) => timer = setTimeout(() => r("late"), 5000));
    assert.equal(await Promise.race([run, late]), "ended");
    clearTimeout(timer);
    await fake.waitDropped(1);
    assert.deepEqual(seen.map((f) => f.kind), ["LlmResponseStart", "LlmText"]);
  });
});

Deno.test("cancel: a consumer that breaks out early drops the stream", async () => {
  await withFake(async (fake) => {
    fake.reply(streamReply([textChunk("one")], { hold: true }));
    for await (const f of llmFor(fake).runLlm(hello)) if (f.kind === "LlmText") break;
    await fake.waitDropped(1);
  });
});

Deno.test("malformed: non-JSON data is skipped with a warning, the rest still arrives", async () => {
  await withFake(async (fake) => {
    fake.reply(
      streamReply([
        textChunk("a"),
        "{not json",
        '"just a string"',
        textChunk("b"),
        finishChunk("stop"),
      ]),
    );
    const logger = memoryLogger();
    const frames = await collect(llmFor(fake, { logger }).runLlm(hello));
    assert.deepEqual(texts(frames), ["a", "b"]);
    assert.equal(frames.at(-1)?.kind, "LlmResponseEnd");
    assert.equal(logger.records.filter((r) => r.level === "warn").length, 1);
    assert.equal(JSON.stringify(logger.records).includes(KEY), false);
  });
});

Deno.test("malformed: in-stream error chunk -> FlowcatError naming the provider", async () => {
  await withFake(async (fake) => {
    fake.reply(streamReply([textChunk("par"), errorChunk("The model is overloaded")]));
    const err = await failure(collect(llmFor(fake).runLlm(hello)));
    assert.equal(err.kind, "protocol");
    assert.equal(err.message, "groq: stream error: The model is overloaded");
  });
});

Deno.test("malformed: tool arguments that are not JSON -> protocol error", async () => {
  await withFake(async (fake) => {
    fake.reply(
      streamReply([
        toolCallChunk(0, { id: "call_1", name: "get_weather", arguments: '{"city": Par' }),
        finishChunk("tool_calls"),
      ]),
      streamReply([
        toolCallChunk(0, { id: "call_1", name: "get_weather", arguments: '["Paris"]' }),
        finishChunk("tool_calls"),
      ]),
    );
    const err = await failure(collect(llmFor(fake).runLlm(hello)));
    assert.equal(err.kind, "protocol");
    assert.equal(err.message, "groq: tool call get_weather arguments are not JSON");
    const notObject = await failure(collect(llmFor(fake).runLlm(hello)));
    assert.equal(notObject.kind, "protocol");
    assert.match(notObject.message, /^groq: tool call get_weather arguments/);
  });
});

Deno.test("malformed: stream cut before [DONE] and finish_reason -> closed error", async () => {
  await withFake(async (fake) => {
    fake.reply({ kind: "stream", events: [textChunk("half")] });
    const err = await failure(collect(llmFor(fake).runLlm(hello)));
    assert.equal(err.kind, "closed");
    assert.equal(err.message, "groq: stream ended before [DONE]");
  });
});

Deno.test("malformed: a JSON answer instead of an event stream -> protocol error", async () => {
  await withFake(async (fake) => {
    fake.reply({ kind: "json", status: 200, body: { object: "chat.completion", choices: [] } });
    const err = await failure(collect(llmFor(fake).runLlm(hello)));
    assert.equal(err.kind, "protocol");
    assert.match(err.message, /^groq: answered JSON, not an event stream/);
  });
});

Deno.test("deadline: a stream longer than timeoutMs completes; a silent one times out", async () => {
  await withFake(async (fake) => {
    const words = ["a", "b", "c", "d", "e", "f"].map(textChunk);
    fake.reply(streamReply([...words, finishChunk("stop")], { gapMs: 150 }));
    const frames = await collect(llmFor(fake, { timeoutMs: 500 }).runLlm(hello));
    assert.deepEqual(texts(frames), ["a", "b", "c", "d", "e", "f"]);

    fake.reply(streamReply([textChunk("a")], { hold: true }));
    const err = await failure(collect(llmFor(fake, { timeoutMs: 300 }).runLlm(hello)));
    assert.equal(err.kind, "timeout");
    assert.match(err.message, /^groq: no stream data within 300 ms/);
    await fake.waitDropped(1);
  });
});

Deno.test("tools: context tools win over setTools", async () => {
  await withFake(async (fake) => {
    fake.reply(streamReply([finishChunk("stop")]));
    const llm = llmFor(fake);
    llm.setTools([{ ...WEATHER, name: "from_set_tools" }]);
    await collect(llm.runLlm({ ...hello, tools: [WEATHER] }));
    const tools = fake.requests[0].body.tools as { function: { name: string } }[];
    assert.deepEqual(tools.map((t) => t.function.name), ["get_weather"]);
  });
});

Deno.test("toOpenAIChatMessages: every role in the wire shape", () => {
  const messages = toOpenAIChatMessages({
    messages: [
      { role: "system", content: "sys" },
      { role: "user", content: "u" },
      { role: "assistant", content: "plain" },
      {
        role: "assistant",
        content: "Let me check.",
        toolCalls: [{ toolCallId: "c1", functionName: "f", arguments: { n: 1, s: "x" } }],
      },
      { role: "tool", toolCallId: "c1", content: "42" },
    ],
    tools: [],
  });
  assert.deepEqual(messages, [
    { role: "system", content: "sys" },
    { role: "user", content: "u" },
    { role: "assistant", content: "plain" },
    {
      role: "assistant",
      content: "Let me check.",
      tool_calls: [{
        id: "c1",
        type: "function",
        function: { name: "f", arguments: '{"n":1,"s":"x"}' },
      }],
    },
    { role: "tool", tool_call_id: "c1", content: "42" },
  ]);
});

Deno.test("parseChatCompletionStream: usage from Groq's x_groq and no [DONE] after finish_reason", async () => {
  async function* events() {
    yield { data: textChunk("hi") };
    yield {
      data: JSON.stringify({
        choices: [{ index: 0, delta: {}, finish_reason: "stop" }],
        x_groq: { id: "req_1", usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 } },
      }),
    };
  }
  const out = [];
  for await (const ev of parseChatCompletionStream("groq", events())) out.push(ev);
  assert.deepEqual(out, [
    { type: "text", text: "hi" },
    { type: "usage", tokens: { promptTokens: 5, completionTokens: 2, totalTokens: 7 } },
  ]);
});

Deno.test("parseChatCompletionStream: usage repeated on every chunk (xAI, NVIDIA) keeps the largest", async () => {
  const withUsage = (text: string, prompt: number, completion: number) =>
    JSON.stringify({
      ...JSON.parse(textChunk(text)),
      usage: {
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: prompt + completion,
      },
    });
  async function* events() {
    yield { data: withUsage("a", 9, 1) };
    // Some servers count the prompt only on the first chunk.
    yield { data: withUsage("b", 0, 2) };
    yield { data: finishChunk("stop") };
    yield { data: "[DONE]" };
  }
  const out = [];
  for await (const ev of parseChatCompletionStream("xai", events())) out.push(ev);
  assert.deepEqual(out.at(-1), {
    type: "usage",
    tokens: { promptTokens: 9, completionTokens: 2, totalTokens: 11 },
  });
});
