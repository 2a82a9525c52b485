/**
 * Every language-model protocol family through the conformance suite (tests/_llm_conformance.ts),
 * each against its local fake. Clients are made by the registry's loaders, as the server makes
 * them; the OpenAI-compatible family stands for every provider that wraps it.
 */

import { LLM_PROVIDERS } from "../providers/service_registry.ts";
import { llmConformance, type LlmRig, type LlmScenario } from "./_llm_conformance.ts";
import {
  errorReply,
  finishChunk,
  OpenAIChatFake,
  streamReply,
  textChunk,
  toolCallChunk,
  usageChunk,
} from "./fakes/openai_chat_fake.ts";
import { anthropicError, AnthropicFake, anthropicStream } from "./fakes/anthropic_fake.ts";
import { GeminiGenerateFake, geminiStream, googleError } from "./fakes/gemini_generate_fake.ts";
import { AwsHttpFake, converseStream } from "./fakes/aws_http_fake.ts";
import { startOAuthRig } from "./_google_helpers.ts";

type Message = Record<string, unknown>;
const messagesOf = (body: Record<string, unknown> | undefined, field: string): Message[] =>
  (body?.[field] as Message[] | undefined) ?? [];

// ---------------------------------------------------------------- OpenAI chat completions

/** A rig around the OpenAI chat fake: OpenAI's wire, or Azure's URL and `api-key` header. */
function chatRig(azure: boolean): Promise<LlmRig> {
  const fake = new OpenAIChatFake();
  fake.apiKey = "sk-conformance-good-key";
  if (azure) fake.keyHeader = "api-key";
  const usage = usageChunk({ prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 });
  const hello = streamReply([textChunk("Hel"), textChunk("lo"), finishChunk("stop"), usage]);
  const replies: Record<LlmScenario, Parameters<OpenAIChatFake["reply"]>> = {
    text: [hello],
    tool: [
      streamReply([
        toolCallChunk(0, { id: "call_1", name: "get_weather" }),
        toolCallChunk(0, { arguments: '{"city":' }),
        toolCallChunk(0, { arguments: '"Paris"}' }),
        finishChunk("tool_calls"),
        usage,
      ]),
      streamReply([textChunk("Sunny."), finishChunk("stop")]),
    ],
    stall: [streamReply([textChunk("Hel")], { hold: true })],
    rate_limit: [errorReply(429, "Rate limit reached", "requests"), hello],
    server_error: [errorReply(500, "The server had an error", "server_error"), hello],
    cut: [{ kind: "stream", events: [textChunk("Hel")] }],
  };
  const root = fake.baseUrl.replace(/\/v1$/, "");
  return Promise.resolve({
    options: azure
      ? { apiKey: fake.apiKey, baseUrl: root, model: "conformance-deployment" }
      : { apiKey: fake.apiKey, baseUrl: fake.baseUrl },
    wrongKey: "sk-conformance-wrong-key",
    next: (s) => fake.reply(...replies[s]),
    requests: () => fake.requests.length,
    lastToolResult: () => {
      const tool = messagesOf(fake.requests.at(-1)?.body, "messages")
        .findLast((m) => m.role === "tool");
      return tool?.content as string | undefined;
    },
    dropped: () => fake.dropped,
    close: () => fake.close(),
  });
}

llmConformance({
  provider: "openai",
  create: await LLM_PROVIDERS.openai.load(),
  rig: () => chatRig(false),
});

// ---------------------------------------------------------------- Azure OpenAI (deployment URL)

llmConformance({
  provider: "azure",
  create: await LLM_PROVIDERS.azure.load(),
  rig: () => chatRig(true),
});

// ---------------------------------------------------------------- Anthropic Messages

llmConformance({
  provider: "anthropic",
  create: await LLM_PROVIDERS.anthropic.load(),
  async rig(): Promise<LlmRig> {
    const fake = await new AnthropicFake().start();
    const hello = { events: anthropicStream({ text: ["Hel", "lo"] }) };
    // Everything up to the first text delta: no message_delta, no message_stop.
    const opening = anthropicStream({ text: ["Hel"] }).filter((e) =>
      e.event !== "message_delta" && e.event !== "message_stop" &&
      e.event !== "content_block_stop"
    );
    const replies: Record<LlmScenario, Parameters<AnthropicFake["reply"]>> = {
      text: [hello],
      tool: [
        {
          events: anthropicStream({
            tools: [{ id: "toolu_1", name: "get_weather", json: ['{"city":', '"Paris"}'] }],
          }),
        },
        { events: anthropicStream({ text: ["Sunny."] }) },
      ],
      stall: [{ events: opening, hang: true }],
      rate_limit: [
        { status: 429, body: anthropicError("rate_limit_error", "Number of requests exceeded") },
        hello,
      ],
      server_error: [
        { status: 529, body: anthropicError("overloaded_error", "Overloaded") },
        hello,
      ],
      cut: [{ events: opening }],
    };
    return {
      options: { apiKey: fake.apiKey, baseUrl: fake.url },
      wrongKey: "sk-ant-conformance-wrong",
      next: (s) => fake.reply(...replies[s]),
      requests: () => fake.requests.length,
      lastToolResult: () => {
        const parts = messagesOf(fake.requests.at(-1)?.body, "messages")
          .flatMap((m) => Array.isArray(m.content) ? m.content as Message[] : []);
        const result = parts.findLast((p) => p.type === "tool_result");
        return result?.content as string | undefined;
      },
      dropped: () => fake.cancelledStreams,
      close: () => fake.close(),
    };
  },
});

// ---------------------------------------------------------------- Gemini generateContent

/** A rig around a Gemini-wire fake (the Gemini API, or Vertex AI with OAuth). */
function geminiRig(
  fake: GeminiGenerateFake,
  auth: Pick<LlmRig, "options" | "wrongKey" | "wrongOptions">,
  close: () => Promise<void>,
): LlmRig {
  const hello = { chunks: geminiStream({ text: ["Hel", "lo"] }) };
  // The first chunk only: no finishReason, no usage.
  const opening = geminiStream({ text: ["Hel", "lo"] }).slice(0, 1);
  const replies: Record<LlmScenario, Parameters<GeminiGenerateFake["reply"]>> = {
    text: [hello],
    tool: [
      { chunks: geminiStream({ calls: [{ name: "get_weather", args: { city: "Paris" } }] }) },
      { chunks: geminiStream({ text: ["Sunny."] }) },
    ],
    stall: [{ chunks: opening, hang: true }],
    rate_limit: [
      { status: 429, body: googleError(429, "RESOURCE_EXHAUSTED", "Quota exceeded") },
      hello,
    ],
    server_error: [
      { status: 503, body: googleError(503, "UNAVAILABLE", "The model is overloaded") },
      hello,
    ],
    cut: [{ chunks: opening }],
  };
  return {
    ...auth,
    next: (s) => fake.reply(...replies[s]),
    requests: () => fake.requests.length,
    lastToolResult: () => {
      const parts = messagesOf(fake.requests.at(-1)?.body, "contents")
        .flatMap((c) => (c.parts as Message[] | undefined) ?? []);
      const fr = parts.findLast((p) => p.functionResponse)?.functionResponse as
        | { response: Record<string, unknown> }
        | undefined;
      if (!fr) return undefined;
      const r = fr.response;
      return typeof r.result === "string" ? r.result : JSON.stringify(r);
    },
    dropped: () => fake.cancelledStreams,
    close,
  };
}

llmConformance({
  provider: "gemini",
  create: await LLM_PROVIDERS.gemini.load(),
  async rig(): Promise<LlmRig> {
    const fake = await new GeminiGenerateFake().start();
    const auth = {
      options: { apiKey: fake.apiKey, baseUrl: fake.url },
      wrongKey: "AIzaCONFORMANCE-wrong-key",
    };
    return geminiRig(fake, auth, () => fake.close());
  },
});

// ---------------------------------------------------------------- Vertex AI (Gemini, OAuth)

llmConformance({
  provider: "vertex",
  create: await LLM_PROVIDERS.vertex.load(),
  async rig(): Promise<LlmRig> {
    const oauth = await startOAuthRig();
    const fake = await new GeminiGenerateFake({ acceptToken: (t) => oauth.oauth.accepts(t) })
      .start();
    const auth = {
      options: { apiKey: oauth.keyJson, baseUrl: fake.url },
      wrongKey: oauth.wrongSecret,
      wrongOptions: { apiKey: oauth.wrongJson },
    };
    return geminiRig(fake, auth, async () => {
      await fake.close();
      await oauth.close();
    });
  },
});

// ---------------------------------------------------------------- Amazon Bedrock ConverseStream

llmConformance({
  provider: "bedrock",
  create: await LLM_PROVIDERS.bedrock.load(),
  rig(): Promise<LlmRig> {
    const fake = new AwsHttpFake().start();
    const wrongSecret = "wJalrXUtnFEMI/CONFORMANCE/WRONGSECRET";
    const hello = { pieces: converseStream({ text: ["Hel", "lo"] }) };
    const opening = converseStream({ text: ["Hel"], truncate: true });
    type Reply = Parameters<AwsHttpFake["reply"]>[0];
    const replies: Record<LlmScenario, Reply[]> = {
      text: [hello],
      tool: [
        {
          pieces: converseStream({
            tools: [{ id: "tooluse_1", name: "get_weather", json: ['{"city":', '"Paris"}'] }],
          }),
        },
        { pieces: converseStream({ text: ["Sunny."] }) },
      ],
      stall: [{ pieces: opening, hold: true }],
      rate_limit: [
        { status: 429, code: "ThrottlingException", message: "Too many requests" },
        hello,
      ],
      server_error: [{ status: 500, code: "InternalServerException", message: "Internal" }, hello],
      cut: [{ pieces: opening }],
    };
    return Promise.resolve({
      options: { baseUrl: fake.url, credentials: fake.env },
      wrongKey: wrongSecret,
      wrongOptions: { credentials: { ...fake.env, AWS_SECRET_ACCESS_KEY: wrongSecret } },
      next: (s) => replies[s].forEach((r) => fake.reply(r)),
      requests: () => fake.requests.length,
      lastToolResult: () => {
        const blocks = messagesOf(fake.requests.at(-1)?.body, "messages")
          .flatMap((m) => (m.content as Message[] | undefined) ?? []);
        const result = blocks.findLast((b) => b.toolResult)?.toolResult as
          | { content: { text?: string; json?: unknown }[] }
          | undefined;
        const first = result?.content[0];
        return first === undefined ? undefined : first.text ?? JSON.stringify(first.json);
      },
      dropped: () => fake.cancelled,
      close: () => fake.close(),
    });
  },
});
