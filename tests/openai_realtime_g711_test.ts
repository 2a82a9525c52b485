/**
 * OpenAI Realtime in G.711 (`options.audioFormat: g711_ulaw`) against the local fake: the
 * session asks for mu-law both ways in the GA and beta shapes, caller audio goes out as 8 kHz
 * mu-law, mu-law deltas come back as 8 kHz audio, and a Twilio call on such a model runs at
 * 8 kHz with no resampler: the caller's bytes reach the model and the model's reach the caller
 * as they are.
 */

import assert from "node:assert/strict";
import { ulawDecode, ulawEncode } from "../core/audio/g711.ts";
import { sine } from "../core/audio/pcm.ts";
import { FlowcatError } from "../core/errors.ts";
import { audioFrame } from "../core/frames.ts";
import type { RealtimeLlm } from "../core/seams.ts";
import { createOpenAIRealtime } from "../providers/openai/realtime.ts";
import { until } from "./_core_helpers.ts";
import { s2sTwilioCall } from "./_s2s_twilio.ts";
import {
  audioDeltaEvent,
  OpenAIRealtimeFake,
  responseCreatedEvent,
  speechStartedEvent,
} from "./fakes/openai_realtime_fake.ts";

const SETUP = { systemPrompt: "Be brief.", tools: [] };

/** A client in `protocol` and G.711 on a started fake; both closed after `fn`. */
async function withG711(
  fn: (fake: OpenAIRealtimeFake, llm: RealtimeLlm) => Promise<void>,
  protocol: "ga" | "beta" = "ga",
): Promise<void> {
  const fake = new OpenAIRealtimeFake();
  await fake.start();
  const llm = createOpenAIRealtime({
    apiKey: "k",
    url: fake.url,
    options: { audioFormat: "g711_ulaw", protocol },
  });
  try {
    await fn(fake, llm);
  } finally {
    await llm.close();
    await fake.close();
  }
}

/** The mu-law bytes of every `input_audio_buffer.append` so far, in order. */
function appended(fake: OpenAIRealtimeFake): Uint8Array {
  return Uint8Array.from(
    fake.ofType("input_audio_buffer.append").flatMap((m) => [
      ...Uint8Array.fromBase64(m.audio as string),
    ]),
  );
}

Deno.test("openai g711: GA session asks for audio/pcmu both ways; 8 kHz goes out as mu-law", async () => {
  await withG711(async (fake, llm) => {
    assert.deepEqual(llm.audioRates?.(8000), { input: 8000, output: 8000 });
    await llm.connect(SETUP);
    const audio = (fake.session.audio ?? {}) as Record<string, Record<string, unknown>>;
    assert.deepEqual(audio.input.format, { type: "audio/pcmu" });
    assert.deepEqual(audio.output.format, { type: "audio/pcmu" });
    const tone = sine({ freq: 440, sampleRate: 8000, samples: 1600, amplitude: 7000 });
    for (let i = 0; i < tone.length; i += 160) {
      llm.sendAudio(audioFrame(tone.subarray(i, i + 160), 8000));
    }
    await fake.waitFor(() => fake.ofType("input_audio_buffer.append").length === 10);
    // 160 bytes per 20 ms, the caller's samples encoded as they are.
    assert.deepEqual(appended(fake), ulawEncode(tone));
    // Another rate is resampled to 8 kHz first: 20 ms at 16 kHz is 160 bytes too.
    llm.sendAudio(audioFrame(new Int16Array(320), 16000));
    await fake.waitFor(() => fake.ofType("input_audio_buffer.append").length === 11);
    assert.equal(appended(fake).length, 1760);
  });
});

Deno.test("openai g711: mu-law deltas are 8 kHz audio; a barge-in truncates at 8 kHz", async () => {
  await withG711(async (fake, llm) => {
    await llm.connect(SETUP);
    const bytes = ulawEncode(sine({ freq: 300, sampleRate: 8000, samples: 800, amplitude: 5000 }));
    fake.send(responseCreatedEvent());
    fake.send(audioDeltaEvent(bytes, "item_a"));
    fake.send(audioDeltaEvent(bytes, "item_a"));
    fake.send(speechStartedEvent());
    for (let i = 0; i < 2; i++) {
      const ev = await llm.nextEvent();
      assert.equal(ev?.type, "audio_out");
      if (ev?.type !== "audio_out") return;
      assert.equal(ev.audio.sampleRate, 8000);
      assert.deepEqual(ev.audio.pcm, ulawDecode(bytes));
    }
    assert.deepEqual(await llm.nextEvent(), { type: "interrupted" });
    const tr = await fake.waitFor((m) => m.type === "conversation.item.truncate");
    assert.equal(tr.audio_end_ms, 200, "1,600 samples at 8 kHz");
  });
});

Deno.test("openai g711: beta names g711_ulaw in the flat session", async () => {
  await withG711(async (fake, llm) => {
    await llm.connect(SETUP);
    assert.equal(fake.session.input_audio_format, "g711_ulaw");
    assert.equal(fake.session.output_audio_format, "g711_ulaw");
  }, "beta");
});

Deno.test("openai g711: pcm16 stays the default; a bad format or xAI is a config error", () => {
  const pcm = createOpenAIRealtime({ apiKey: "k" });
  assert.deepEqual(pcm.audioRates?.(8000), { input: 16000, output: 24000 });
  for (
    const options of [{ audioFormat: "g711_alaw" }, { audioFormat: "g711_ulaw", protocol: "xai" }]
  ) {
    assert.throws(
      () => createOpenAIRealtime({ apiKey: "k", options }),
      (e) => e instanceof FlowcatError && e.kind === "config" && /audioFormat/.test(e.message),
    );
  }
});

Deno.test("openai g711: a Twilio call passes mu-law through both ways, no resampler", async () => {
  const fake = new OpenAIRealtimeFake();
  await fake.start();
  const realtime = createOpenAIRealtime({
    apiKey: "k",
    url: fake.url,
    options: { audioFormat: "g711_ulaw" },
  });
  const { call, finished } = await s2sTwilioCall(realtime, { record: false }, "openai");
  try {
    await fake.waitForConnections(1);
    await until(() => fake.session.audio !== undefined, 3000, "session configured");
    // The caller speaks: its mu-law reaches the model unchanged (decoded and encoded again,
    // every code the encoder makes comes back as itself).
    const tone = sine({ freq: 350, sampleRate: 8000, samples: 1600, amplitude: 6000, phase: 0.3 });
    const sent = ulawEncode(tone);
    await call.speak(tone, 5);
    await until(() => appended(fake).length >= sent.length, 3000, "caller audio at the model");
    assert.deepEqual(appended(fake).subarray(0, sent.length), sent);
    // The model speaks 100 ms: the caller gets its bytes, 160 to a message.
    const voice = ulawEncode(
      sine({ freq: 500, sampleRate: 8000, samples: 800, amplitude: 4000, phase: 0.3 }),
    );
    fake.send(responseCreatedEvent());
    fake.send(audioDeltaEvent(voice, "item_b"));
    await until(() => call.media().length >= 5, 3000, "model audio at the caller");
    const got = call.media().map((m) =>
      Uint8Array.fromBase64((m.media as { payload: string }).payload)
    );
    got.forEach((b) => assert.equal(b.length, 160));
    assert.deepEqual(Uint8Array.from(got.flatMap((b) => [...b])), voice);
    await call.hangup();
    await finished;
  } finally {
    await call.close();
    await fake.close();
  }
});
