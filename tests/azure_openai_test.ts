/**
 * Azure OpenAI: chat completions at a deployment URL (the OpenAI chat client, Azure's URL and
 * `api-key` header) and Realtime (the OpenAI Realtime client at Azure's GA and preview socket
 * URLs), each against a local fake of the wire; and the `openai-compatible` realtime provider.
 */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import type { Frame, FrameOf, LlmContext, ToolDecl } from "../core/frames.ts";
import { silentLogger } from "../core/log.ts";
import type { RealtimeEvent, RealtimeLlm } from "../core/seams.ts";
import { createAzureOpenAILlm } from "../providers/azure/openai_llm.ts";
import { createAzureRealtime } from "../providers/azure/realtime.ts";
import { createOpenAICompatibleRealtime } from "../providers/openai/realtime_style.ts";
import type { ServiceOptions } from "../providers/service_options.ts";
import {
  errorReply,
  finishChunk,
  OpenAIChatFake,
  streamReply,
  textChunk,
  toolCallChunk,
  usageChunk,
} from "./fakes/openai_chat_fake.ts";
import {
  audioDeltaEvent,
  functionCallDoneEvent,
  OpenAIRealtimeFake,
  responseCreatedEvent,
  speechStartedEvent,
} from "./fakes/openai_realtime_fake.ts";
import { until } from "./_core_helpers.ts";
import { drainFrames as collect } from "./_service_helpers.ts";

const KEY = "azure-openai-SECRET-99";
const WEATHER: ToolDecl = {
  name: "get_weather",
  description: "Weather for a city",
  params: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};
const hello: LlmContext = { messages: [{ role: "user", content: "Hi" }], tools: [WEATHER] };

async function withChat(fn: (fake: OpenAIChatFake, root: string) => Promise<void>) {
  const fake = new OpenAIChatFake();
  try {
    await fn(fake, fake.baseUrl.replace(/\/v1$/, ""));
  } finally {
    await fake.close();
  }
}

const llm = (root: string, extra: Partial<ServiceOptions> = {}) =>
  createAzureOpenAILlm({
    provider: "azure",
    apiKey: KEY,
    baseUrl: root,
    model: "my-dep",
    ...extra,
  });

Deno.test("azure llm: deployment URL, api-version, api-key header; text, tool call, usage", async () => {
  await withChat(async (fake, root) => {
    fake.reply(streamReply([
      textChunk("Let me check."),
      toolCallChunk(0, { id: "call_1", name: "get_weather", arguments: '{"city":' }),
      toolCallChunk(0, { arguments: '"Oslo"}' }),
      finishChunk("tool_calls"),
      usageChunk({ prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 }),
    ]));
    const frames = await collect(llm(root).runLlm(hello));
    const req = fake.requests[0];
    assert.equal(req.path, "/openai/deployments/my-dep/chat/completions");
    assert.deepEqual(req.query, { "api-version": "2024-10-21" });
    assert.equal(req.headers["api-key"], KEY);
    assert.equal(req.headers.authorization, undefined);
    assert.equal(req.body.stream, true);
    assert.deepEqual(req.body.stream_options, { include_usage: true });
    assert.deepEqual(frames.map((f) => f.kind), [
      "LlmResponseStart",
      "LlmText",
      "FunctionCallsStarted",
      "Metrics",
      "LlmResponseEnd",
    ]);
    const calls = (frames[2] as FrameOf<"FunctionCallsStarted">).calls;
    assert.deepEqual(calls, [{
      toolCallId: "call_1",
      functionName: "get_weather",
      arguments: { city: "Oslo" },
    }]);
  });
});

Deno.test("azure llm: options.api_version; a deployment name is escaped into the path", async () => {
  await withChat(async (fake, root) => {
    fake.reply(streamReply([textChunk("ok"), finishChunk("stop")]));
    await collect(
      llm(root, { model: "dep/../x", options: { api_version: "2025-01-01-preview" } }).runLlm(
        hello,
      ),
    );
    assert.equal(fake.requests[0].path, "/openai/deployments/dep%2F..%2Fx/chat/completions");
    assert.equal(fake.requests[0].query["api-version"], "2025-01-01-preview");
  });
});

Deno.test("azure llm: 401 is auth, 429 and 500 fail after retries, none leaks the key", async () => {
  await withChat(async (fake, root) => {
    fake.reply(errorReply(401, "Access denied due to invalid subscription key.", "invalid_key"));
    await assert.rejects(
      collect(llm(root).runLlm(hello)),
      (e: unknown) =>
        e instanceof FlowcatError && e.kind === "auth" && /HTTP 401/.test(e.message) &&
        !e.message.includes(KEY),
    );
    for (const status of [429, 500]) {
      for (let i = 0; i < 3; i++) fake.reply(errorReply(status, "busy", "server_error"));
      await assert.rejects(
        collect(llm(root).runLlm(hello)),
        (e: unknown) => e instanceof FlowcatError && new RegExp(`HTTP ${status}`).test(e.message),
      );
    }
  });
});

Deno.test("azure llm: abort mid-stream ends the iterator and drops the connection", async () => {
  await withChat(async (fake, root) => {
    fake.reply(streamReply([textChunk("one"), textChunk("two")], { hold: true }));
    const ctl = new AbortController();
    const seen: Frame[] = [];
    for await (const f of llm(root).runLlm(hello, ctl.signal)) {
      seen.push(f);
      if (f.kind === "LlmText") ctl.abort();
    }
    assert.equal(seen.some((f) => f.kind === "LlmResponseEnd"), false);
    await fake.waitDropped(1);
  });
});

Deno.test("azure llm: a missing resource, deployment or key is a config error", () => {
  const isConfig = (re: RegExp) => (e: unknown) =>
    e instanceof FlowcatError && e.kind === "config" && re.test(e.message);
  assert.throws(
    () => createAzureOpenAILlm({ provider: "azure", apiKey: "k", model: "d" }),
    isConfig(/options\.resource/),
  );
  assert.throws(
    () =>
      createAzureOpenAILlm({ provider: "azure", apiKey: "k", options: { resource: "contoso" } }),
    isConfig(/deployment/),
  );
  assert.throws(
    () => createAzureOpenAILlm({ provider: "azure", model: "d", options: { resource: "contoso" } }),
    isConfig(/key/),
  );
});

// ---------------------------------------------------------------- realtime

async function next(rt: RealtimeLlm): Promise<RealtimeEvent | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      rt.nextEvent(),
      new Promise<never>((_, rej) => (timer = setTimeout(() => rej(new Error("no event")), 3000))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

async function withRealtime(
  options: Record<string, unknown>,
  fn: (fake: OpenAIRealtimeFake, rt: RealtimeLlm) => Promise<void>,
): Promise<void> {
  const fake = new OpenAIRealtimeFake({ requireHeader: { name: "api-key", value: KEY } });
  await fake.start();
  const rt = createAzureRealtime({
    apiKey: KEY,
    model: "my-realtime",
    url: fake.url.replace(/\/v1\/realtime$/, ""),
    logger: silentLogger,
    options,
  });
  try {
    await rt.connect({ systemPrompt: "Be brief.", tools: [WEATHER] });
    await fn(fake, rt);
  } finally {
    await rt.close();
    await fake.close();
  }
}

Deno.test("azure realtime: GA URL, api-key header, GA session; barge-in and tool calls", async () => {
  await withRealtime({}, async (fake, rt) => {
    assert.equal(fake.path, "/openai/v1/realtime");
    assert.deepEqual(fake.query, { model: "my-realtime" });
    assert.equal(fake.headers["api-key"], KEY);
    assert.equal(fake.headers.authorization, undefined);
    const session = fake.ofType("session.update")[0].session as Record<string, unknown>;
    assert.equal(session.type, "realtime", "the GA session shape");
    fake.send(responseCreatedEvent());
    fake.send(audioDeltaEvent(new Int16Array(2400), "item_a"));
    fake.send(speechStartedEvent());
    assert.equal((await next(rt))?.type, "audio_out");
    assert.deepEqual(await next(rt), { type: "interrupted" });
    await fake.waitFor((m) => m.type === "conversation.item.truncate");
    fake.send(functionCallDoneEvent("call_7", "get_weather", { city: "Oslo" }));
    assert.deepEqual(await next(rt), {
      type: "tool_call",
      id: "call_7",
      name: "get_weather",
      args: { city: "Oslo" },
    });
  });
});

Deno.test("azure realtime: a preview api_version uses the deployment URL and beta protocol", async () => {
  await withRealtime({ api_version: "2025-04-01-preview" }, (fake) => {
    assert.equal(fake.path, "/openai/realtime");
    assert.deepEqual(fake.query, {
      "api-version": "2025-04-01-preview",
      deployment: "my-realtime",
    });
    assert.equal(fake.headers["openai-beta"], "realtime=v1");
    const session = fake.ofType("session.update")[0].session as Record<string, unknown>;
    assert.equal(session.type, undefined, "the beta session shape");
    return Promise.resolve();
  });
});

Deno.test("azure realtime: a dropped socket reconnects to the same URL with the same key", async () => {
  await withRealtime({ reconnectBackoffMs: 10 }, async (fake) => {
    await fake.dropAbruptly();
    await until(() => fake.connections === 2, 5000, "a second session");
    assert.equal(fake.path, "/openai/v1/realtime");
    assert.equal(fake.headers["api-key"], KEY);
  });
});

/** Connect an azure client to a fake that refuses the upgrade; the rejection must not leak. */
async function refusedConnect(fake: OpenAIRealtimeFake): Promise<void> {
  await fake.start();
  try {
    const rt = createAzureRealtime({
      apiKey: KEY,
      model: "d",
      url: fake.url.replace(/\/v1\/realtime$/, ""),
      options: { reconnectAttempts: 0 },
    });
    await assert.rejects(
      rt.connect({ systemPrompt: "x", tools: [] }),
      (e: unknown) => e instanceof FlowcatError && !e.message.includes(KEY),
    );
    assert.equal(fake.connections, 0);
  } finally {
    await fake.close();
  }
}

Deno.test("azure realtime: a wrong key (401) or a busy service (503) fails connect", async () => {
  await refusedConnect(
    new OpenAIRealtimeFake({ requireHeader: { name: "api-key", value: "right" } }),
  );
  const busy = new OpenAIRealtimeFake();
  busy.refuseConnections = true;
  await refusedConnect(busy);
});

Deno.test("azure realtime: a missing resource or deployment is a config error", () => {
  const isConfig = (re: RegExp) => (e: unknown) =>
    e instanceof FlowcatError && e.kind === "config" && re.test(e.message);
  assert.throws(
    () => createAzureRealtime({ apiKey: "k", model: "d" }),
    isConfig(/options\.resource/),
  );
  assert.throws(
    () => createAzureRealtime({ apiKey: "k", options: { resource: "c" } }),
    isConfig(/deployment/),
  );
});

Deno.test("openai-compatible realtime: url, auth header and default model from the config", async () => {
  const fake = new OpenAIRealtimeFake({ requireHeader: { name: "x-gateway-key", value: KEY } });
  await fake.start();
  const rt = createOpenAICompatibleRealtime({
    apiKey: KEY,
    url: fake.url,
    options: { auth_header: "x-gateway-key", key_env: "GATEWAY_KEY" },
  });
  try {
    await rt.connect({ systemPrompt: "x", tools: [] });
    assert.equal(fake.path, "/v1/realtime");
    assert.deepEqual(fake.query, { model: "gpt-realtime" });
  } finally {
    await rt.close();
    await fake.close();
  }
  const isConfig = (re: RegExp) => (e: unknown) =>
    e instanceof FlowcatError && e.kind === "config" && re.test(e.message);
  assert.throws(() => createOpenAICompatibleRealtime({ apiKey: "k" }), isConfig(/url is required/));
  assert.throws(
    () =>
      createOpenAICompatibleRealtime({ apiKey: "k", url: "wss://x", options: { key_env: "a b" } }),
    isConfig(/key_env/),
  );
  assert.throws(
    () =>
      createOpenAICompatibleRealtime({
        apiKey: "k",
        url: "wss://x",
        options: { auth_header: "a: b" },
      }),
    isConfig(/auth_header/),
  );
});
