/**
 * The Bedrock ConverseStream client against a local fake speaking Bedrock's wire (SigV4
 * checked by the fake with its own copy of the secret, event-stream answers): text streaming,
 * usage, a tool call round trip, temporary credentials, refused signatures, throttling and
 * server errors, exceptions and cuts mid-stream, cancellation.
 * What every LLM client shares is checked by tests/llm_conformance_test.ts.
 */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import type { Frame, LlmContext } from "../core/frames.ts";
import { createBedrockLlm } from "../providers/aws/bedrock.ts";
import type { ServiceOptions } from "../providers/service_options.ts";
import {
  awsEnv,
  AwsHttpFake,
  converseStream,
  exceptionEvent,
  FAKE_AWS_CREDENTIALS,
} from "./fakes/aws_http_fake.ts";

const HELLO: LlmContext = {
  messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Hi" }],
  tools: [],
};

async function collect(it: AsyncIterable<Frame>): Promise<Frame[]> {
  const out: Frame[] = [];
  for await (const f of it) out.push(f);
  return out;
}

async function rejectsWith(p: Promise<unknown>): Promise<FlowcatError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof FlowcatError, `not a FlowcatError: ${err}`);
    return err;
  }
  throw new Error("did not reject");
}

async function withFake(
  fn: (fake: AwsHttpFake, opts: ServiceOptions) => Promise<void>,
  fakeOpts: ConstructorParameters<typeof AwsHttpFake>[0] = {},
): Promise<void> {
  const fake = new AwsHttpFake({ region: "eu-west-1", ...fakeOpts }).start();
  try {
    await fn(fake, {
      provider: "bedrock",
      baseUrl: fake.url,
      credentials: fake.env,
      options: { max_tokens: 200, temperature: 0.2, region: "eu-west-1" },
    });
  } finally {
    await fake.close();
  }
}

Deno.test("bedrock: streams text, signs for the region, sends Converse's body, reports usage", async () => {
  await withFake(async (fake, opts) => {
    fake.reply({
      pieces: converseStream({ text: ["Hel", "lo."], usage: { inputTokens: 12, outputTokens: 3 } }),
    });
    const frames = await collect(createBedrockLlm(opts).runLlm(HELLO));
    assert.deepEqual(frames.map((f) => f.kind), [
      "LlmResponseStart",
      "LlmText",
      "LlmText",
      "Metrics",
      "LlmResponseEnd",
    ]);
    assert.equal(frames.filter((f) => f.kind === "LlmText").map((f) => f.text).join(""), "Hello.");
    const req = fake.requests[0];
    assert.equal(req.refused, undefined, "the fake accepted the signature");
    assert.equal(req.path, "/model/amazon.nova-lite-v1%3A0/converse-stream");
    assert.match(req.headers.get("authorization")!, /\/eu-west-1\/bedrock\/aws4_request/);
    assert.match(req.headers.get("authorization")!, /SignedHeaders=[^,]*x-amz-content-sha256/);
    assert.deepEqual(req.body, {
      messages: [{ role: "user", content: [{ text: "Hi" }] }],
      system: [{ text: "Be brief." }],
      inferenceConfig: { maxTokens: 200, temperature: 0.2 },
    });
    const metrics = frames.find((f) => f.kind === "Metrics")!;
    assert.deepEqual(metrics.data[0], {
      type: "llm_usage",
      processor: "bedrock",
      model: "amazon.nova-lite-v1:0",
      tokens: { promptTokens: 12, completionTokens: 3, totalTokens: 15 },
    });
  });
});

Deno.test("bedrock: a tool call streams as toolUse deltas and its result goes back as toolResult", async () => {
  await withFake(async (fake, opts) => {
    const llm = createBedrockLlm(opts);
    const tools = [{
      name: "lookup",
      description: "Find an order",
      params: { type: "object", properties: { id: { type: "string" } } },
    }];
    fake.reply({
      pieces: converseStream({
        text: ["One moment."],
        tools: [{ id: "tu_1", name: "lookup", json: ['{"id":', '"A7"}'] }],
      }),
    });
    const ctx: LlmContext = { messages: [{ role: "user", content: "Where is A7?" }], tools };
    const first = await collect(llm.runLlm(ctx));
    const started = first.find((f) => f.kind === "FunctionCallsStarted");
    assert.ok(started, first.map((f) => f.kind).join());
    assert.deepEqual(started.calls, [
      { toolCallId: "tu_1", functionName: "lookup", arguments: { id: "A7" } },
    ]);
    assert.deepEqual(fake.requests[0].body.toolConfig, {
      tools: [{
        toolSpec: {
          name: "lookup",
          description: "Find an order",
          inputSchema: { json: tools[0].params },
        },
      }],
    });
    fake.reply({ pieces: converseStream({ text: ["It ships today."] }) });
    ctx.messages.push(
      { role: "assistant", content: "One moment.", toolCalls: started.calls },
      { role: "tool", toolCallId: "tu_1", content: '{"status":"packed"}' },
    );
    const second = await collect(llm.runLlm(ctx));
    assert.equal(fake.requests[1].refused, undefined);
    assert.ok(second.some((f) => f.kind === "LlmText" && f.text === "It ships today."));
    const sent = fake.requests[1].body.messages as unknown[];
    assert.deepEqual(sent.slice(1), [
      {
        role: "assistant",
        content: [
          { text: "One moment." },
          { toolUse: { toolUseId: "tu_1", name: "lookup", input: { id: "A7" } } },
        ],
      },
      {
        role: "user",
        content: [{
          toolResult: {
            toolUseId: "tu_1",
            content: [{ text: '{"status":"packed"}' }],
            status: "success",
          },
        }],
      },
    ]);
  });
});

Deno.test("bedrock: temporary credentials sign their session token", async () => {
  const credentials = { ...FAKE_AWS_CREDENTIALS, sessionToken: "FQoGZXIvYXdzEXAMPLETOKEN" };
  await withFake(async (fake, opts) => {
    const frames = await collect(createBedrockLlm(opts).runLlm(HELLO));
    assert.equal(fake.requests[0].refused, undefined);
    assert.equal(fake.requests[0].headers.get("x-amz-security-token"), credentials.sessionToken);
    assert.ok(frames.some((f) => f.kind === "LlmResponseEnd"));
    // Without the token the same keys are refused.
    const noToken = { ...opts, credentials: awsEnv(FAKE_AWS_CREDENTIALS, "eu-west-1") };
    const err = await rejectsWith(collect(createBedrockLlm(noToken).runLlm(HELLO)));
    assert.equal(err.kind, "auth");
  }, { credentials });
});

Deno.test("bedrock: throttling is retried, then given up with the status", async () => {
  await withFake(async (fake, opts) => {
    fake.reply({
      status: 429,
      code: "ThrottlingException",
      message: "Too many requests",
      retryAfter: "0",
    });
    fake.reply({ pieces: converseStream({ text: ["fine"] }) });
    const frames = await collect(createBedrockLlm(opts).runLlm(HELLO));
    assert.ok(frames.some((f) => f.kind === "LlmText" && f.text === "fine"));
    assert.equal(fake.requests.length, 2);
    assert.ok(fake.requests.every((r) => r.refused === undefined), "the retry is signed too");
    for (let i = 0; i < 3; i++) {
      fake.reply({
        status: 429,
        code: "ThrottlingException",
        message: "slow down",
        retryAfter: "0",
      });
    }
    const err = await rejectsWith(collect(createBedrockLlm(opts).runLlm(HELLO)));
    assert.equal(err.kind, "protocol");
    assert.match(err.message, /^bedrock: HTTP 429: .*slow down.*\(3 attempts\)/);
  });
});

Deno.test("bedrock: a server error after the retries is an error naming the provider", async () => {
  await withFake(async (fake, opts) => {
    for (let i = 0; i < 3; i++) {
      fake.reply({ status: 500, code: "InternalServerException", message: "boom" });
    }
    const err = await rejectsWith(collect(createBedrockLlm(opts).runLlm(HELLO)));
    assert.match(err.message, /^bedrock: HTTP 500: .*boom/);
    assert.equal(fake.requests.length, 3);
  });
});

Deno.test("bedrock: an exception event mid-stream ends the turn with that error", async () => {
  await withFake(async (fake, opts) => {
    const events = converseStream({ text: ["partial"] }).slice(0, 2);
    fake.reply({ pieces: [...events, exceptionEvent("throttlingException", "Rate exceeded")] });
    const seen: string[] = [];
    const err = await rejectsWith((async () => {
      for await (const f of createBedrockLlm(opts).runLlm(HELLO)) seen.push(f.kind);
    })());
    assert.deepEqual(seen, ["LlmResponseStart", "LlmText"]);
    assert.equal(err.message, "bedrock: throttlingException: Rate exceeded");
  });
});

Deno.test("bedrock: a stream that ends early or inside a message is a closed error", async () => {
  await withFake(async (fake, opts) => {
    fake.reply({ pieces: converseStream({ text: ["cut"], truncate: true }) });
    const early = await rejectsWith(collect(createBedrockLlm(opts).runLlm(HELLO)));
    assert.equal(early.kind, "closed");
    assert.match(early.message, /before messageStop/);
    const whole = converseStream({ text: ["x"] });
    fake.reply({ pieces: [whole[0], whole[1].subarray(0, 10)] });
    const torn = await rejectsWith(collect(createBedrockLlm(opts).runLlm(HELLO)));
    assert.equal(torn.kind, "closed");
    assert.equal(torn.message, "bedrock: stream ended inside a message");
  });
});

Deno.test("bedrock: missing credentials or a bad region are config errors at construction", () => {
  assert.throws(
    () => createBedrockLlm({ provider: "bedrock", credentials: { AWS_ACCESS_KEY_ID: "AKID" } }),
    (e) =>
      e instanceof FlowcatError && e.kind === "config" &&
      e.message === "bedrock: missing AWS credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)",
  );
  assert.throws(
    () =>
      createBedrockLlm({
        provider: "bedrock",
        credentials: awsEnv(FAKE_AWS_CREDENTIALS, "us-east-1"),
        options: { region: "evil.example.com/" },
      }),
    /not a region name/,
  );
  assert.throws(
    () =>
      createBedrockLlm({
        provider: "bedrock",
        credentials: awsEnv(FAKE_AWS_CREDENTIALS, "us-east-1"),
        options: { max_tokens: 0 },
      }),
    /options.max_tokens must be a positive integer/,
  );
  const llm = createBedrockLlm({
    provider: "bedrock",
    credentials: awsEnv(FAKE_AWS_CREDENTIALS, "ap-southeast-2"),
  });
  assert.equal(
    llm.url().href,
    "https://bedrock-runtime.ap-southeast-2.amazonaws.com/model/amazon.nova-lite-v1%3A0/converse-stream",
  );
});

Deno.test("bedrock: a connection dropped mid-stream is an error, not a short answer", async () => {
  await withFake(async (fake, opts) => {
    fake.reply({ pieces: converseStream({ text: ["half"] }).slice(0, 2), reset: true });
    const err = await collect(createBedrockLlm(opts).runLlm(HELLO)).catch((e) => e);
    assert.ok(err instanceof FlowcatError, String(err));
    assert.equal(err.kind, "closed");
    assert.match(err.message, /^bedrock: stream broke: /);
  });
});
