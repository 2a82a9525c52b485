/**
 * The language-model conformance suite: what every LLM provider client must do, checked against
 * that provider's local fake through the real client code path. A provider joins by describing
 * an {@link LlmTarget} (its factory and a rig that scripts its fake) and calling
 * {@link llmConformance}; tests/llm_conformance_test.ts lists them.
 *
 * The checks: text streams between LlmResponseStart and LlmResponseEnd with an `llm_usage`
 * Metrics frame; a tool call comes out as FunctionCallsStarted with parsed arguments, and its
 * result goes back in the next request; an abort mid-stream ends the stream promptly and drops
 * the connection; a wrong key is a `FlowcatError` of kind `auth` naming the provider and never
 * holding the key; a rate limit and a server error are retried to success; a stream cut before
 * its end is an error naming the provider (never kind `auth`) and the next request works.
 * @module
 */

import assert from "node:assert/strict";
import { FlowcatError } from "../core/errors.ts";
import type { Frame, FrameOf, LlmContext, ToolDecl } from "../core/frames.ts";
import type { LlmService } from "../core/seams.ts";
import type { ServiceOptions } from "../providers/service_options.ts";
import { collectFrames, startParams } from "./_tts_conformance.ts";

/** How the fake answers the next request. */
export type LlmScenario =
  /** The text "Hello" in two pieces, with token usage. */
  | "text"
  /** One call of {@link WEATHER_TOOL} with `{"city":"Paris"}`, then (next request) "Sunny.". */
  | "tool"
  /** Some text, then the stream stays open until the client leaves. */
  | "stall"
  /** HTTP 429 once, then "Hello". */
  | "rate_limit"
  /** HTTP 5xx once, then "Hello". */
  | "server_error"
  /** Some text, then the stream ends before the provider's end-of-message marker. */
  | "cut";

/** A running fake of one provider. */
export interface LlmRig {
  /** Options that point the client at the fake with the key it accepts. */
  options: Omit<ServiceOptions, "provider">;
  /** The key the fake refuses (the secret an error must never hold). */
  wrongKey: string;
  /** Options carrying {@link wrongKey}; default `{ apiKey: wrongKey }` (AWS: credentials). */
  wrongOptions?: Partial<ServiceOptions>;
  /** Script how the fake answers the next request(s). */
  next(scenario: LlmScenario): void;
  /** Requests the fake has received. */
  requests(): number;
  /** The tool result (its content text) the last request carried, if any. */
  lastToolResult(): string | undefined;
  /** Streams the client abandoned before the fake finished them. */
  dropped(): number;
  /** Stop the fake. */
  close(): Promise<void>;
}

/** A provider under the suite. */
export interface LlmTarget {
  /** The provider's name as the config spells it (errors must carry it). */
  provider: string;
  /** Makes the client, exactly as the registry does. */
  create(opts: ServiceOptions): LlmService;
  /** Starts the fake. */
  rig(): Promise<LlmRig>;
}

/** The tool every rig's "tool" scenario calls. */
export const WEATHER_TOOL: ToolDecl = {
  name: "get_weather",
  description: "Weather for a city",
  params: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};

/** The tool result the suite sends back. */
export const WEATHER_RESULT = '{"sky":"sunny"}';

const HELLO: LlmContext = {
  messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "Hi" }],
  tools: [],
};

const textOf = (frames: Frame[]) =>
  frames.filter((f): f is FrameOf<"LlmText"> => f.kind === "LlmText").map((f) => f.text).join("");

async function failure(fn: () => Promise<unknown>): Promise<unknown> {
  try {
    await fn();
  } catch (err) {
    return err;
  }
  assert.fail("expected an error");
}

async function until(cond: () => boolean, what: string, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Register the suite's tests for one provider. */
export function llmConformance(t: LlmTarget): void {
  const name = (what: string) => `llm conformance: ${t.provider}: ${what}`;

  async function withClient(
    fn: (llm: LlmService, rig: LlmRig) => Promise<void>,
    extra: Partial<ServiceOptions> = {},
  ): Promise<void> {
    const rig = await t.rig();
    const llm = t.create({ provider: t.provider, ...rig.options, ...extra });
    try {
      await llm.start(startParams(16000));
      await fn(llm, rig);
    } finally {
      await llm.stop?.();
      await rig.close();
    }
  }

  Deno.test(
    name("text streams between start and end, with token usage"),
    () =>
      withClient(async (llm, rig) => {
        rig.next("text");
        const frames = await collectFrames(llm.runLlm(HELLO));
        assert.equal(frames[0].kind, "LlmResponseStart");
        assert.equal(frames.at(-1)?.kind, "LlmResponseEnd");
        assert.equal(textOf(frames), "Hello");
        const usage = frames.flatMap((f) =>
          f.kind === "Metrics" ? f.data.filter((d) => d.type === "llm_usage") : []
        );
        assert.equal(usage.length, 1, "one llm_usage Metrics frame");
        const tokens = "tokens" in usage[0] ? usage[0].tokens : undefined;
        assert.ok(tokens && tokens.promptTokens > 0 && tokens.completionTokens > 0, "no tokens");
      }),
  );

  Deno.test(
    name("a tool call comes out parsed; its result goes back"),
    () =>
      withClient(async (llm, rig) => {
        llm.setTools([WEATHER_TOOL]);
        rig.next("tool");
        const first = await collectFrames(llm.runLlm(HELLO));
        const started = first.filter((f): f is FrameOf<"FunctionCallsStarted"> =>
          f.kind === "FunctionCallsStarted"
        );
        assert.equal(started.length, 1, "no FunctionCallsStarted");
        const calls = started[0].calls;
        assert.equal(calls.length, 1);
        assert.equal(calls[0].functionName, "get_weather");
        assert.deepEqual(calls[0].arguments, { city: "Paris" });
        assert.ok(calls[0].toolCallId, "no tool call id");
        assert.equal(first.at(-1)?.kind, "LlmResponseEnd");
        const next: LlmContext = {
          messages: [
            ...HELLO.messages,
            { role: "assistant", content: "", toolCalls: calls },
            { role: "tool", toolCallId: calls[0].toolCallId, content: WEATHER_RESULT },
          ],
          tools: [],
        };
        const second = await collectFrames(llm.runLlm(next));
        assert.equal(textOf(second), "Sunny.");
        assert.equal(rig.lastToolResult(), WEATHER_RESULT);
      }),
  );

  Deno.test(
    name("an abort mid-stream ends promptly and drops the connection"),
    () =>
      withClient(async (llm, rig) => {
        rig.next("stall");
        const ctl = new AbortController();
        const seen: Frame[] = [];
        let abortedAt = 0;
        for await (const f of llm.runLlm(HELLO, ctl.signal)) {
          seen.push(f);
          if (f.kind === "LlmText" && !ctl.signal.aborted) {
            abortedAt = performance.now();
            ctl.abort();
          }
        }
        assert.ok(ctl.signal.aborted, "the stream ended although the fake held it");
        assert.ok(!seen.some((f) => f.kind === "LlmResponseEnd"), "LlmResponseEnd after an abort");
        assert.ok(performance.now() - abortedAt < 2000, "the stream outlived the abort");
        await until(() => rig.dropped() >= 1, "the fake to see the stream dropped");
      }),
  );

  Deno.test(name("a wrong key is an auth error naming the provider, not the key"), async () => {
    const rig = await t.rig();
    const llm = t.create({
      provider: t.provider,
      ...rig.options,
      ...(rig.wrongOptions ?? { apiKey: rig.wrongKey }),
    });
    try {
      rig.next("text");
      const err = await failure(() => collectFrames(llm.runLlm(HELLO)));
      assert.ok(err instanceof FlowcatError, `not a FlowcatError: ${String(err)}`);
      assert.equal(err.kind, "auth");
      assert.ok(err.message.includes(t.provider), `"${err.message}" does not name the provider`);
      assert.ok(!err.message.includes(rig.wrongKey), "the error holds the key");
    } finally {
      await llm.stop?.();
      await rig.close();
    }
  });

  for (const scenario of ["rate_limit", "server_error"] as const) {
    const what = scenario === "rate_limit" ? "a rate limit" : "a server error";
    Deno.test(name(`${what} is retried to success`), () =>
      withClient(async (llm, rig) => {
        rig.next(scenario);
        const frames = await collectFrames(llm.runLlm(HELLO));
        assert.equal(textOf(frames), "Hello");
        assert.equal(rig.requests(), 2, "not retried exactly once");
      }, { options: {} }));
  }

  Deno.test(
    name("a stream cut before its end fails by name; the next works"),
    () =>
      withClient(async (llm, rig) => {
        rig.next("cut");
        const err = await failure(() => collectFrames(llm.runLlm(HELLO)));
        assert.ok(err instanceof Error);
        assert.ok(err.message.includes(t.provider), `"${err.message}" does not name the provider`);
        if (err instanceof FlowcatError) assert.notEqual(err.kind, "auth");
        rig.next("text");
        assert.equal(textOf(await collectFrames(llm.runLlm(HELLO))), "Hello");
      }),
  );
}
