/**
 * MCP tools in a call, end to end (and, last, a realtime call with a scripted model): the agent server built from a config with
 * `tools.mcp` (the test MCP server over stdio, then over streamable HTTP), a carrier call, and an
 * OpenAI-style model fake whose scripted first reply calls an MCP tool. The tool's result must be
 * in the model's next request, answering that call.
 */
import assert from "node:assert/strict";
import { silentLogger } from "../core/log.ts";
import type { RealtimeEvent, RealtimeLlm, RealtimeSetup } from "../core/seams.ts";
import { RealtimeEventQueue } from "../providers/realtime/_shared.ts";
import { sine } from "../core/audio/pcm.ts";
import { createAgentServer } from "../server/app.ts";
import { until } from "./_core_helpers.ts";
import { parse } from "./_server_config_helpers.ts";
import { agentServerCall } from "./_twilio_client.ts";
import {
  finishChunk,
  OpenAIChatFake,
  streamReply,
  textChunk,
  toolCallChunk,
} from "./fakes/openai_chat_fake.ts";
import { WhisperHttpFake } from "./fakes/whisper_http_fake.ts";
import { DENO_CHILD_ENV, serveMcpHttp } from "./_mcp_server.ts";

type ChatBody = {
  tools?: { function: { name: string } }[];
  messages: { role: string; content?: string; tool_call_id?: string }[];
};

/** Run one call whose model calls `tool` with `args`; the model's two request bodies. */
async function callWithTool(
  toolsYaml: string,
  env: (name: string) => string | undefined,
  tool: string,
  args: Record<string, unknown>,
): Promise<ChatBody[]> {
  const llm = new OpenAIChatFake();
  const stt = new WhisperHttpFake();
  await stt.start();
  llm.reply(streamReply([
    toolCallChunk(0, { id: "call_1", name: tool, arguments: JSON.stringify(args) }),
    finishChunk("tool_calls"),
  ]));
  llm.reply(streamReply([textChunk("It shipped on the twentieth."), finishChunk("stop")]));
  stt.reply({ body: { text: "where is my order A17" } });
  const res = await parse(`agent: { graph: graph.yaml, greeting: "Hi there." }
pipeline: cascaded
providers:
  stt: { name: speaches, url: "${stt.url}/v1" }
  llm: { name: ollama, url: "${llm.baseUrl}", model: tiny }
  tts: { name: espeak }
tools:
${toolsYaml}`);
  if (!res.ok) throw new Error(JSON.stringify(res.problems));
  const app = await createAgentServer({ config: res.config, env, logger: silentLogger });
  const { call, report } = await agentServerCall(app);
  try {
    await until(() => call.media().length > 20, 8000, "greeting audio");
    await call.speak(sine({ freq: 300, sampleRate: 8000, samples: 8000, amplitude: 9000 }));
    await call.speak(new Int16Array(8000));
    await until(() => llm.requests.length === 2, 15000, "the model asked again after the tool");
    await call.hangup();
    await report;
    return llm.requests.map((r) => r.body as ChatBody);
  } finally {
    await call.close();
    await app.calls.drain(1000);
    await app.close();
    await llm.close();
    await stt.close();
  }
}

/** The tool message answering `call_1` in `body`. */
function toolAnswer(body: ChatBody): string {
  const m = body.messages.find((m) => m.role === "tool");
  assert.ok(m !== undefined, `no tool message in ${JSON.stringify(body.messages)}`);
  assert.equal(m.tool_call_id, "call_1");
  return m.content ?? "";
}

Deno.test("mcp in a cascaded call: a stdio server's tool result reaches the model's next request", async () => {
  const env = (n: string) => Deno.env.get(n);
  const [first, second] = await callWithTool(
    `  mcp:
    - name: orders
      command: deno
      args: [run, --no-prompt, tests/_mcp_server.ts]
      env: [${DENO_CHILD_ENV.join(", ")}]`,
    env,
    "lookup_order",
    { order_id: "A17" },
  );
  const offered = (first!.tools ?? []).map((t) => t.function.name);
  // The graph node's own tools first, then the MCP server's.
  assert.deepEqual(offered, ["go", "end_call", "lookup_order", "slow", "fail", "crash"]);
  assert.equal(toolAnswer(second!), "Order A17: shipped on 2026-11-20");
});

Deno.test("mcp in a cascaded call: an HTTP server with a bearer token; a tool error reaches the model", async () => {
  const http = serveMcpHttp("s3cret");
  try {
    const [first, second] = await callWithTool(
      `  mcp:
    - name: orders
      url: ${http.url}
      bearer_env: ORDERS_MCP_TOKEN
      timeout_ms: 5000`,
      (n) => (n === "ORDERS_MCP_TOKEN" ? "s3cret" : undefined),
      "fail",
      {},
    );
    assert.deepEqual((first!.tools ?? []).map((t) => t.function.name), [
      "go",
      "end_call",
      "lookup_order",
      "slow",
      "fail",
    ]);
    assert.deepEqual(JSON.parse(toolAnswer(second!)), { error: "the order database is down" });
    assert.ok(http.auth.every((a) => a === "Bearer s3cret"));
  } finally {
    await http.close();
  }
});

/** A realtime model that calls `lookup_order` once connected and records what it is given. */
class ToolCallingModel implements RealtimeLlm {
  readonly #q = new RealtimeEventQueue();
  offered: string[] = [];
  results: { id: string; result: unknown }[] = [];
  connect(setup: RealtimeSetup): Promise<void> {
    this.offered = setup.tools.map((t) => t.name);
    this.#q.push({ type: "tool_call", id: "rt_1", name: "lookup_order", args: { order_id: "R9" } });
    return Promise.resolve();
  }
  sendAudio(): void {}
  updateSystem(): Promise<void> {
    return Promise.resolve();
  }
  sendToolResult(id: string, result: unknown): Promise<void> {
    this.results.push({ id, result });
    return Promise.resolve();
  }
  nextEvent(): Promise<RealtimeEvent | undefined> {
    return this.#q.next();
  }
  close(): Promise<void> {
    this.#q.close();
    return Promise.resolve();
  }
}

Deno.test("mcp in a realtime call: the model is offered the MCP tools and gets the result", async () => {
  const http = serveMcpHttp();
  const model = new ToolCallingModel();
  const res = await parse(`agent: { graph: graph.yaml }
providers: { realtime: { name: echo } }
tools:
  mcp: [{ name: orders, url: "${http.url}" }]`);
  if (!res.ok) throw new Error(JSON.stringify(res.problems));
  const app = await createAgentServer({
    config: res.config,
    env: () => undefined,
    logger: silentLogger,
    realtimeFactory: () => model,
    warm: false,
  });
  const { call, report } = await agentServerCall(app);
  try {
    await until(() => model.results.length === 1, 10_000, "the tool result sent to the model");
    assert.deepEqual(model.offered, ["go", "end_call", "lookup_order", "slow", "fail"]);
    assert.deepEqual(model.results, [{ id: "rt_1", result: "Order R9: shipped on 2026-11-20" }]);
    await call.hangup();
    await report;
  } finally {
    await call.close();
    await app.calls.drain(1000);
    await app.close();
    await http.close();
  }
});
