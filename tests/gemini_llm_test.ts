/**
 * Gemini generateContent client against a local fake speaking the real wire protocol.
 * What every LLM client shares (streaming, tool round trip, auth, retries, aborts, cut
 * streams) is checked by tests/llm_conformance_test.ts; this file keeps what is particular.
 */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import type { Frame, FunctionCall, LlmContext, ToolDecl } from "../core/frames.ts";
import {
  CONVERSATION_START,
  createGeminiLlm,
  GEMINI_DEFAULT_MODEL,
  geminiSchema,
  geminiTools,
  SKIP_SIGNATURE,
} from "../providers/google/gemini_llm.ts";
import type { ServiceOptions } from "../providers/service_options.ts";
import { GeminiGenerateFake, geminiStream, googleError } from "./fakes/gemini_generate_fake.ts";

const WEATHER: ToolDecl = {
  name: "get_weather",
  description: "Weather for a city",
  params: {
    $schema: "http://json-schema.org/draft-07/schema#",
    type: "object",
    properties: { city: { type: "string", description: "City name" } },
    required: ["city"],
    additionalProperties: false,
  },
};

const HELLO: LlmContext = { messages: [{ role: "user", content: "Hello" }], tools: [] };

async function collect(it: AsyncIterable<Frame>): Promise<Frame[]> {
  const out: Frame[] = [];
  for await (const f of it) out.push(f);
  return out;
}

function texts(frames: Frame[]): string[] {
  return frames.flatMap((f) => f.kind === "LlmText" ? [f.text] : []);
}

function callsOf(frames: Frame[]): FunctionCall[] {
  const f = frames.find((x) => x.kind === "FunctionCallsStarted");
  assert.ok(f?.kind === "FunctionCallsStarted", "a FunctionCallsStarted frame");
  return f.calls;
}

async function withFake(
  fn: (fake: GeminiGenerateFake, opts: ServiceOptions) => Promise<void>,
): Promise<void> {
  const fake = await new GeminiGenerateFake().start();
  try {
    await fn(fake, { provider: "gemini", apiKey: fake.apiKey, baseUrl: fake.url });
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

Deno.test("gemini: path, header auth (key never in the URL), body with system and tools", async () => {
  await withFake(async (fake, opts) => {
    const llm = createGeminiLlm({ ...opts, options: { temperature: 0.2, max_tokens: 300 } });
    await collect(llm.runLlm({
      messages: [
        { role: "system", content: "You are a voice agent." },
        { role: "system", content: "Be brief." },
        { role: "user", content: "Hi" },
      ],
      tools: [WEATHER],
    }));
    const req = fake.requests[0];
    assert.equal(req.method, "POST");
    assert.equal(req.url.pathname, `/v1beta/models/${GEMINI_DEFAULT_MODEL}:streamGenerateContent`);
    assert.equal(req.url.search, "?alt=sse");
    assert.ok(!req.url.href.includes(fake.apiKey));
    assert.equal(req.headers.get("x-goog-api-key"), fake.apiKey);
    assert.match(req.headers.get("content-type") ?? "", /application\/json/);
    assert.deepEqual(req.body, {
      systemInstruction: { parts: [{ text: "You are a voice agent.\n\nBe brief." }] },
      contents: [{ role: "user", parts: [{ text: "Hi" }] }],
      tools: [{
        functionDeclarations: [{
          name: "get_weather",
          description: "Weather for a city",
          parameters: {
            type: "object",
            properties: { city: { type: "string", description: "City name" } },
            required: ["city"],
          },
        }],
      }],
      generationConfig: { temperature: 0.2, maxOutputTokens: 300 },
    });
  });
});

Deno.test("gemini: tool round trip keeps ids, names and thought signatures", async () => {
  await withFake(async (fake, opts) => {
    const llm = createGeminiLlm(opts);
    fake.reply({
      chunks: geminiStream({
        text: ["Checking."],
        calls: [
          { name: "get_weather", args: { city: "Oslo" }, signature: "c2lnLUE=" },
          { name: "get_weather", args: { city: "Rome" } },
        ],
      }),
    });
    const ask: LlmContext = {
      messages: [{ role: "user", content: "Oslo and Rome?" }],
      tools: [WEATHER],
    };
    const first = await collect(llm.runLlm(ask));
    const calls = callsOf(first);
    assert.deepEqual(calls.map((c) => c.toolCallId), ["call_1", "call_2"]);
    await collect(llm.runLlm({
      messages: [
        ...ask.messages,
        { role: "assistant", content: "Checking.", toolCalls: calls },
        // Results in the other order: names come from the call ids, not positions.
        { role: "tool", toolCallId: "call_2", content: "sunny" },
        { role: "tool", toolCallId: "call_1", content: '{"temp":3}' },
        { role: "user", content: "Thanks" },
      ],
      tools: [WEATHER],
    }));
    assert.equal(fake.requests.length, 2, "the fake accepted both requests");
    assert.deepEqual(fake.requests[1].body!.contents, [
      { role: "user", parts: [{ text: "Oslo and Rome?" }] },
      {
        role: "model",
        parts: [
          { text: "Checking." },
          {
            functionCall: { name: "get_weather", args: { city: "Oslo" } },
            thoughtSignature: "c2lnLUE=",
          },
          { functionCall: { name: "get_weather", args: { city: "Rome" } } },
        ],
      },
      {
        role: "user",
        parts: [
          { functionResponse: { name: "get_weather", response: { output: "sunny" } } },
          { functionResponse: { name: "get_weather", response: { temp: 3 } } },
          { text: "Thanks" },
        ],
      },
    ]);
  });
});

Deno.test("gemini: calls it never saw get the placeholder signature on Gemini 3 only", async () => {
  await withFake(async (fake, opts) => {
    const context: LlmContext = {
      messages: [
        {
          role: "assistant",
          content: "",
          toolCalls: [{ toolCallId: "x1", functionName: "f", arguments: {} }],
        },
        { role: "tool", toolCallId: "x1", content: "ok" },
      ],
      tools: [],
    };
    await collect(createGeminiLlm(opts).runLlm(context));
    await collect(createGeminiLlm({ ...opts, model: "models/gemini-2.5-flash" }).runLlm(context));
    const [a, b] = fake.requests;
    assert.equal(b.url.pathname, "/v1beta/models/gemini-2.5-flash:streamGenerateContent");
    const modelTurn = (r: typeof a) =>
      (r.body!.contents as { parts: Record<string, unknown>[] }[])[1];
    assert.equal(modelTurn(a).parts[0].thoughtSignature, SKIP_SIGNATURE);
    assert.equal(modelTurn(b).parts[0].thoughtSignature, undefined);
    // The bot spoke first: a user line leads.
    assert.deepEqual((a.body!.contents as unknown[])[0], {
      role: "user",
      parts: [{ text: CONVERSATION_START }],
    });
  });
});

Deno.test("gemini: text streams in order between start and end, usage as Metrics", async () => {
  await withFake(async (fake, opts) => {
    fake.reply({
      chunks: geminiStream({
        text: ["Hel", "lo", " there"],
        promptTokens: 40,
        outputTokens: 6,
        cachedTokens: 32,
        thoughtsTokens: 10,
      }),
    });
    const frames = await collect(createGeminiLlm(opts).runLlm(HELLO));
    assert.deepEqual(frames.map((f) => f.kind), [
      "LlmResponseStart",
      "LlmText",
      "LlmText",
      "LlmText",
      "Metrics",
      "LlmResponseEnd",
    ]);
    assert.deepEqual(texts(frames), ["Hel", "lo", " there"]);
    const metrics = frames.find((f) => f.kind === "Metrics");
    assert.ok(metrics?.kind === "Metrics");
    assert.deepEqual(metrics.data, [{
      type: "llm_usage",
      processor: "gemini",
      model: GEMINI_DEFAULT_MODEL,
      tokens: {
        promptTokens: 40,
        completionTokens: 16,
        totalTokens: 56,
        cacheReadInputTokens: 32,
        reasoningTokens: 10,
      },
    }]);
  });
});

Deno.test("gemini: a function call becomes FunctionCallsStarted; thought parts are not spoken", async () => {
  await withFake(async (fake, opts) => {
    const chunks = geminiStream({ calls: [{ name: "hang_up", args: { reason: "done" } }] });
    chunks.unshift({
      candidates: [{ content: { role: "model", parts: [{ text: "planning", thought: true }] } }],
    });
    fake.reply({ chunks });
    const frames = await collect(createGeminiLlm(opts).runLlm(HELLO));
    assert.deepEqual(frames.map((f) => f.kind), [
      "LlmResponseStart",
      "FunctionCallsStarted",
      "Metrics",
      "LlmResponseEnd",
    ]);
    assert.deepEqual(callsOf(frames), [
      { toolCallId: "call_1", functionName: "hang_up", arguments: { reason: "done" } },
    ]);
  });
});

Deno.test("gemini: 403 without a key and 400 'API key not valid' are auth errors", async () => {
  await withFake(async (fake, opts) => {
    const missing = await rejectsWith(
      collect(createGeminiLlm({ ...opts, apiKey: undefined }).runLlm(HELLO)),
    );
    assert.equal(missing.kind, "auth");
    assert.match(missing.message, /^gemini: HTTP 403/);
    const key = "AIza-WRONG-secret-99";
    const wrong = await rejectsWith(
      collect(createGeminiLlm({ ...opts, apiKey: key }).runLlm(HELLO)),
    );
    assert.equal(wrong.kind, "auth");
    assert.match(wrong.message, /^gemini: HTTP 400.*API key not valid/);
    assert.ok(!wrong.message.includes(key));
    assert.equal(fake.requests.length, 2, "auth errors are not retried");
  });
});

Deno.test("gemini: 401 is auth and a body echoing the key is redacted", async () => {
  await withFake(async (fake, opts) => {
    fake.reply({
      status: 401,
      body: googleError(401, "UNAUTHENTICATED", `bad key ${fake.apiKey}`),
    });
    const err = await rejectsWith(collect(createGeminiLlm(opts).runLlm(HELLO)));
    assert.equal(err.kind, "auth");
    assert.ok(!err.message.includes(fake.apiKey), err.message);
    assert.match(err.message, /\[redacted\]/);
  });
});

Deno.test("gemini: 503 that persists ends in an error naming the provider", async () => {
  await withFake(async (fake, opts) => {
    const busy = { status: 503, body: googleError(503, "UNAVAILABLE", "The model is overloaded.") };
    fake.reply(busy, busy, busy, busy);
    const err = await rejectsWith(collect(createGeminiLlm(opts).runLlm(HELLO)));
    assert.match(err.message, /^gemini: HTTP 503.*overloaded/);
    assert.equal(fake.requests.length, 3);
  });
});

Deno.test("gemini: an error object mid-stream is a FlowcatError naming the provider", async () => {
  await withFake(async (fake, opts) => {
    const chunks = geminiStream({ text: ["Hel", "lo"] }).slice(0, 1);
    chunks.push(googleError(500, "INTERNAL", "An internal error has occurred."));
    fake.reply({ chunks });
    const seen: string[] = [];
    const err = await rejectsWith((async () => {
      for await (const f of createGeminiLlm(opts).runLlm(HELLO)) seen.push(f.kind);
    })());
    assert.equal(err.kind, "protocol");
    assert.equal(err.message, "gemini: INTERNAL: An internal error has occurred.");
    assert.deepEqual(seen, ["LlmResponseStart", "LlmText"]);
  });
});

Deno.test("gemini: a reply streaming longer than timeoutMs is not cut", async () => {
  await withFake(async (fake, opts) => {
    fake.reply({ chunks: geminiStream({ text: ["a", "b", "c", "d"] }), gapMs: 60 });
    const frames = await collect(createGeminiLlm({ ...opts, timeoutMs: 200 }).runLlm(HELLO));
    assert.deepEqual(texts(frames), ["a", "b", "c", "d"]);
  });
});

Deno.test("gemini: setTools applies when the context has no tools", async () => {
  await withFake(async (fake, opts) => {
    const llm = createGeminiLlm(opts);
    llm.setTools([WEATHER]);
    await collect(llm.runLlm(HELLO));
    const tools = fake.requests[0].body!.tools as { functionDeclarations: { name: string }[] }[];
    assert.deepEqual(tools[0].functionDeclarations.map((d) => d.name), ["get_weather"]);
    assert.equal(llm.name(), "gemini");
  });
});

Deno.test("gemini: schema mapping (nullable types, nested items, empty parameters left out)", () => {
  assert.deepEqual(
    geminiSchema({
      type: "object",
      properties: {
        note: { type: ["string", "null"], maxLength: 50 },
        tags: { type: "array", items: { type: "string", additionalProperties: false } },
      },
      additionalProperties: false,
    }),
    {
      type: "object",
      properties: {
        note: { type: "string", nullable: true, maxLength: 50 },
        tags: { type: "array", items: { type: "string" } },
      },
    },
  );
  assert.deepEqual(
    geminiTools([{
      name: "hang_up",
      description: "End",
      params: { type: "object", properties: {} },
    }]),
    [
      { functionDeclarations: [{ name: "hang_up", description: "End" }] },
    ],
  );
  assert.equal(geminiTools([]), undefined);
});
