/**
 * Vertex AI Gemini client against local fakes: the Gemini wire fake in Vertex mode (project and
 * location path, OAuth bearer) and the OAuth token endpoint that verifies the signed JWT.
 */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import type { LlmContext } from "../core/frames.ts";
import {
  createVertexLlm,
  VERTEX_DEFAULT_MODEL,
  vertexLocation,
} from "../providers/google/vertex.ts";
import type { ServiceOptions } from "../providers/service_options.ts";
import { GeminiGenerateFake, geminiStream, googleError } from "./fakes/gemini_generate_fake.ts";
import type { GoogleOAuthFake } from "./fakes/google_oauth_fake.ts";
import { collect, rejects, withOAuth } from "./_google_helpers.ts";
import { until } from "./_core_helpers.ts";

const HELLO: LlmContext = { messages: [{ role: "user", content: "Hello" }], tools: [] };

async function withFakes(
  fn: (api: GeminiGenerateFake, oauth: GoogleOAuthFake, opts: ServiceOptions) => Promise<void>,
): Promise<void> {
  await withOAuth(async (oauth, keyJson) => {
    const api = await new GeminiGenerateFake({ acceptToken: (t) => oauth.accepts(t) }).start();
    try {
      await fn(api, oauth, { provider: "vertex", apiKey: keyJson, baseUrl: api.url });
    } finally {
      await api.close();
    }
  });
}

Deno.test("vertex: project/location path, OAuth bearer, Gemini stream parsed", async () => {
  await withFakes(async (api, oauth, opts) => {
    api.reply({ chunks: geminiStream({ text: ["Hel", "lo"], promptTokens: 5, outputTokens: 2 }) });
    const llm = createVertexLlm(opts);
    const frames = await collect(llm.runLlm(HELLO));
    assert.deepEqual(frames.flatMap((f) => f.kind === "LlmText" ? [f.text] : []), ["Hel", "lo"]);
    const usage = frames.find((f) => f.kind === "Metrics");
    assert.ok(usage?.kind === "Metrics");
    assert.equal(frames.at(-1)?.kind, "LlmResponseEnd");
    const req = api.requests[0];
    assert.equal(
      req.url.pathname,
      `/v1/projects/flowcat-test/locations/global/publishers/google/models/${VERTEX_DEFAULT_MODEL}:streamGenerateContent`,
    );
    assert.equal(req.url.search, "?alt=sse");
    assert.equal(req.headers.get("x-goog-api-key"), null, "no API key header");
    assert.ok(oauth.accepts(req.headers.get("authorization")!.slice("Bearer ".length)));
    // A second turn reuses the cached token.
    await collect(llm.runLlm(HELLO));
    assert.equal(oauth.grants.length, 1);
  });
});

Deno.test("vertex: options.project and options.location override the key and the URL", async () => {
  await withFakes(async (api, _oauth, opts) => {
    const llm = createVertexLlm({
      ...opts,
      model: "gemini-2.5-pro",
      options: { project: "other-proj", location: "europe-west4" },
    });
    await collect(llm.runLlm(HELLO));
    assert.match(
      api.requests[0].url.pathname,
      /^\/v1\/projects\/other-proj\/locations\/europe-west4\/publishers\/google\/models\/gemini-2\.5-pro:/,
    );
  });
  assert.equal(vertexLocation("https://europe-west4-aiplatform.googleapis.com"), "europe-west4");
  assert.equal(vertexLocation("https://us-central1-aiplatform.googleapis.com/"), "us-central1");
  assert.equal(vertexLocation("https://aiplatform.googleapis.com"), "global");
});

Deno.test("vertex: a revoked token is an auth error; the next turn gets a new token", async () => {
  await withFakes(async (_api, oauth, opts) => {
    const llm = createVertexLlm(opts);
    await collect(llm.runLlm(HELLO));
    oauth.revokeAll();
    const err = await rejects(collect(llm.runLlm(HELLO)));
    assert.equal(err.kind, "auth");
    assert.match(err.message, /^vertex: HTTP 401: .*UNAUTHENTICATED/);
    const frames = await collect(llm.runLlm(HELLO));
    assert.equal(frames.at(-1)?.kind, "LlmResponseEnd");
    assert.equal(oauth.grants.length, 2);
  });
});

Deno.test("vertex: a token endpoint refusing the key is an auth error before any API call", async () => {
  await withFakes(async (api, oauth, opts) => {
    await oauth.account(); // the endpoint now trusts a different key
    const err = await rejects(collect(createVertexLlm(opts).runLlm(HELLO)));
    assert.equal(err.kind, "auth");
    assert.match(err.message, /invalid_grant/);
    assert.equal(api.requests.length, 0);
  });
});

Deno.test("vertex: quota (429 RESOURCE_EXHAUSTED) is retried, then reported", async () => {
  await withFakes(async (api, _oauth, opts) => {
    const quota = {
      status: 429,
      body: googleError(429, "RESOURCE_EXHAUSTED", "Quota exceeded for aiplatform"),
    };
    api.reply(quota, quota, quota);
    const err = await rejects(collect(createVertexLlm(opts).runLlm(HELLO)));
    assert.equal(err.kind, "protocol");
    assert.match(err.message, /^vertex: HTTP 429: .*RESOURCE_EXHAUSTED/);
    assert.equal(api.requests.length, 3);
  });
});

Deno.test("vertex: a 500 then success streams the reply", async () => {
  await withFakes(async (api, _oauth, opts) => {
    api.reply({ status: 500, body: googleError(500, "INTERNAL", "internal") });
    const frames = await collect(createVertexLlm(opts).runLlm(HELLO));
    assert.ok(frames.some((f) => f.kind === "LlmText"));
  });
});

Deno.test("vertex: aborting mid-stream ends the iterator and drops the connection", async () => {
  await withFakes(async (api, _oauth, opts) => {
    api.reply({ chunks: geminiStream({ text: ["first", "never"] }).slice(0, 1), hang: true });
    const ac = new AbortController();
    const seen: string[] = [];
    await (async () => {
      for await (const f of createVertexLlm(opts).runLlm(HELLO, ac.signal)) {
        seen.push(f.kind);
        if (f.kind === "LlmText") ac.abort();
      }
    })().catch((err) => assert.equal((err as Error).name, "AbortError"));
    assert.deepEqual(seen, ["LlmResponseStart", "LlmText"]);
    await until(() => api.cancelledStreams === 1, 2000, "the fake sees the stream dropped");
  });
});

Deno.test("vertex: no key, no project or a region on the global host is one config line", () => {
  const key = JSON.stringify({
    type: "service_account",
    client_email: "a@b",
    private_key: "-----BEGIN PRIVATE KEY-----",
  });
  // Project given, global location: nothing to refuse.
  createVertexLlm({ provider: "vertex", apiKey: key, options: { project: "p" } });
  assert.throws(() => createVertexLlm({ provider: "vertex", apiKey: key }), (e: unknown) => {
    assert.ok(e instanceof FlowcatError && e.kind === "config");
    assert.equal(e.message, "vertex: no project (set options.project; the key names none)");
    return true;
  });
  assert.throws(
    () =>
      createVertexLlm({
        provider: "vertex",
        apiKey: key,
        options: { project: "p", location: "europe-west4" },
      }),
    (e: unknown) => {
      assert.ok(e instanceof FlowcatError && e.kind === "config");
      assert.equal(
        e.message,
        "vertex: location europe-west4 is served at https://europe-west4-aiplatform.googleapis.com (set url)",
      );
      return true;
    },
  );
  assert.throws(() => createVertexLlm({ provider: "vertex" }), (e: unknown) => {
    assert.ok(e instanceof FlowcatError && e.kind === "config");
    assert.equal(e.message, "vertex: no service-account key (set GOOGLE_APPLICATION_CREDENTIALS)");
    return true;
  });
});
