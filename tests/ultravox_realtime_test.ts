/**
 * What is particular to Ultravox, against its fake (tests/fakes/ultravox_fake.ts); the shared
 * realtime behaviour is in tests/realtime_conformance_test.ts: the call it creates, the join,
 * the kickoff, and a brain transition as a new call stage.
 */

import assert from "node:assert/strict";
import type { RealtimeEvent } from "../core/seams.ts";
import { createUltravoxRealtime } from "../providers/ultravox/realtime.ts";
import { until } from "./_realtime_conformance.ts";
import { UltravoxFake } from "./fakes/ultravox_fake.ts";

const KEY = "uv-test-key";
const TOOL = {
  name: "get_weather",
  description: "Weather for a city",
  params: {
    type: "object",
    properties: { city: { type: "string" }, days: { type: "integer" } },
    required: ["city"],
  },
};

async function harness(options: Record<string, unknown> = {}) {
  const fake = new UltravoxFake({ apiKey: KEY });
  await fake.start();
  const llm = createUltravoxRealtime({ apiKey: KEY, url: fake.apiUrl, voice: "Mark", options });
  const events: RealtimeEvent[] = [];
  llm.listen!((ev) => ev && events.push(ev));
  return { fake, llm, events };
}

Deno.test("ultravox: the call: prompt, model, voice, client tools, socket rates; apiVersion", async () => {
  const { fake, llm } = await harness();
  try {
    await llm.connect({ systemPrompt: "Be brief.", tools: [TOOL] });
    assert.deepEqual(fake.calls[0], {
      systemPrompt: "Be brief.",
      model: "fixie-ai/ultravox",
      voice: "Mark",
      selectedTools: [{
        temporaryTool: {
          modelToolName: "get_weather",
          description: "Weather for a city",
          dynamicParameters: [
            {
              name: "city",
              location: "PARAMETER_LOCATION_BODY",
              schema: { type: "string" },
              required: true,
            },
            {
              name: "days",
              location: "PARAMETER_LOCATION_BODY",
              schema: { type: "integer" },
              required: false,
            },
          ],
          client: {},
        },
      }],
      firstSpeaker: "FIRST_SPEAKER_USER",
      medium: { serverWebSocket: { inputSampleRate: 16000, outputSampleRate: 24000 } },
    });
    assert.equal(fake.joinQueries[0].apiVersion, "1");
  } finally {
    await llm.close();
    await fake.close();
  }
});

Deno.test("ultravox: a kickoff makes the agent speak first and is sent as user text", async () => {
  const { fake, llm } = await harness();
  try {
    await llm.connect({ systemPrompt: "", tools: [], kickoff: "Greet the caller." });
    assert.equal(fake.calls[0].firstSpeaker, "FIRST_SPEAKER_AGENT");
    await until(() => fake.ofType("user_text_message").length === 1, "the kickoff");
    assert.equal(fake.ofType("user_text_message")[0].text, "Greet the caller.");
  } finally {
    await llm.close();
    await fake.close();
  }
});

Deno.test("ultravox: new instructions ride on the next tool result as a new call stage", async () => {
  const { fake, llm, events } = await harness();
  try {
    await llm.connect({ systemPrompt: "Node A", tools: [TOOL] });
    fake.send({
      type: "client_tool_invocation",
      toolName: "get_weather",
      invocationId: "inv-1",
      parameters: { city: "Oslo" },
    });
    await until(() => events.some((e) => e.type === "tool_call"), "tool_call");
    await llm.updateSystem("Node B", []);
    await llm.sendToolResult("inv-1", { ok: true });
    await until(() => fake.ofType("client_tool_result").length === 1, "the tool result");
    const r = fake.ofType("client_tool_result")[0];
    assert.equal(r.responseType, "new-stage");
    assert.deepEqual(JSON.parse(r.result as string), {
      systemPrompt: "Node B",
      selectedTools: [],
      toolResultText: '{"ok":true}',
    });
  } finally {
    await llm.close();
    await fake.close();
  }
});

Deno.test("ultravox: after a drop a new call continues the last one (priorCallId)", async () => {
  const { fake, llm, events } = await harness({ reconnectBackoffMs: 10 });
  try {
    await llm.connect({ systemPrompt: "Node A", tools: [TOOL] });
    await until(() => fake.joined, "joined");
    fake.sendAudio(new Int16Array(2400)); // an answer under way when the socket drops
    await until(() => events.some((e) => e.type === "audio_out"), "audio");
    await fake.dropAbruptly();
    await until(() => fake.joinQueries.length === 2 && fake.joined, "the new call joined");
    assert.deepEqual(fake.priorCallIds, [undefined, "call-1"]);
    assert.equal(fake.calls[1].systemPrompt, "Node A");
    assert.equal(fake.calls[1].firstSpeaker, "FIRST_SPEAKER_USER");
    // The cut answer is closed; the session goes on.
    assert.deepEqual(events.map((e) => e.type), ["audio_out", "turn_complete"]);
  } finally {
    await llm.close();
    await fake.close();
  }
});

Deno.test("ultravox: with reconnects off a drop ends the session with the reason", async () => {
  const { fake, llm, events } = await harness({ reconnectAttempts: 0 });
  try {
    await llm.connect({ systemPrompt: "", tools: [] });
    await until(() => fake.joined, "joined");
    await fake.dropAbruptly();
    await until(() => events.some((e) => e.type === "closed"), "closed");
    const closed = events.find((e) => e.type === "closed");
    assert.ok(closed?.type === "closed" && /dropped/.test(closed.reason ?? ""), "no reason");
    assert.equal(fake.calls.length, 1);
  } finally {
    await llm.close();
    await fake.close();
  }
});
