/**
 * What is particular to xAI Grok voice, against the OpenAI Realtime fake playing xAI's server
 * (the shared behaviour is in tests/realtime_conformance_test.ts): the endpoint defaults, the
 * `conversation.created` greeting, xAI's session shape and no truncation on barge-in.
 */

import assert from "node:assert/strict";
import { createXaiRealtime } from "../providers/xai/realtime.ts";
import {
  audioDeltaEvent,
  OpenAIRealtimeFake,
  responseCreatedEvent,
  speechStartedEvent,
} from "./fakes/openai_realtime_fake.ts";
import { until } from "./_realtime_conformance.ts";
import type { RealtimeEvent } from "../core/seams.ts";

const KEY = "xai-test-key";
const TOOL = { name: "lookup", description: "Look up", params: { type: "object" } };

Deno.test("xai: bearer auth, default model and voice, xAI's session shape", async () => {
  const fake = new OpenAIRealtimeFake({ apiKey: KEY, dialect: "xai" });
  await fake.start();
  const llm = createXaiRealtime({ apiKey: KEY, url: fake.url });
  try {
    await llm.connect({ systemPrompt: "Be brief.", tools: [TOOL] });
    assert.equal(fake.headers.authorization, `Bearer ${KEY}`);
    assert.equal(fake.query.model, "grok-voice-latest");
    assert.equal(fake.headers["openai-beta"], undefined);
    const format = { type: "audio/pcm", rate: 24000 };
    assert.deepEqual(fake.ofType("session.update")[0].session, {
      instructions: "Be brief.",
      voice: "eve",
      turn_detection: {
        type: "server_vad",
        threshold: 0.5,
        prefix_padding_ms: 300,
        silence_duration_ms: 500,
      },
      audio: { input: { format }, output: { format } },
      tools: [{
        type: "function",
        name: "lookup",
        description: "Look up",
        parameters: TOOL.params,
      }],
    });
  } finally {
    await llm.close();
    await fake.close();
  }
});

Deno.test("xai: a barge-in sends no conversation.item.truncate (xAI has none)", async () => {
  const fake = new OpenAIRealtimeFake({ apiKey: KEY, dialect: "xai" });
  await fake.start();
  const llm = createXaiRealtime({ apiKey: KEY, url: fake.url, voice: "ara" });
  const events: RealtimeEvent[] = [];
  llm.listen!((ev) => ev && events.push(ev));
  try {
    await llm.connect({ systemPrompt: "", tools: [] });
    fake.send(responseCreatedEvent());
    fake.send(audioDeltaEvent(new Int16Array(2400), "item_1"));
    fake.send(speechStartedEvent());
    await until(() => events.some((e) => e.type === "interrupted"), "interrupted");
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(fake.ofType("conversation.item.truncate"), []);
    assert.equal(fake.session.voice, "ara");
  } finally {
    await llm.close();
    await fake.close();
  }
});
