/**
 * A Twilio-framed call through the agent server on the Google Cloud providers: the key file
 * named by GOOGLE_APPLICATION_CREDENTIALS is read at start, and Speech (gRPC), Vertex AI and
 * Text-to-Speech run against their local fakes with tokens from the local OAuth endpoint.
 */

import assert from "node:assert/strict";
import { silentLogger } from "../core/log.ts";
import { sine } from "../core/audio/pcm.ts";
import { createAgentServer } from "../server/app.ts";
import { GOOGLE_STT_PATH } from "../providers/google/speech.ts";
import { GeminiGenerateFake, geminiStream } from "./fakes/gemini_generate_fake.ts";
import { GoogleTtsFake } from "./fakes/google_tts_fake.ts";
import { GOOGLE_SPEECH_PROTO, GrpcRecognizeFake } from "./fakes/grpc_recognize_fake.ts";
import { withOAuth } from "./_google_helpers.ts";
import { parse } from "./_server_config_helpers.ts";
import { agentServerCall } from "./_twilio_client.ts";
import { until } from "./_core_helpers.ts";

Deno.test("google cascaded: a call runs Cloud Speech, Vertex AI and Cloud TTS", async () => {
  await withOAuth(async (oauth, keyJson) => {
    const accept = (t: string) => oauth.accepts(t);
    const stt = await new GrpcRecognizeFake({
      proto: GOOGLE_SPEECH_PROTO,
      pkg: "google.cloud.speech.v1",
      path: GOOGLE_STT_PATH,
      bearer: accept,
    }).start();
    const llm = await new GeminiGenerateFake({ acceptToken: accept }).start();
    const tts = await new GoogleTtsFake(accept).start();
    await Deno.mkdir(".tmp", { recursive: true });
    const keyFile = await Deno.makeTempFile({ dir: ".tmp", suffix: ".json" });
    await Deno.writeTextFile(keyFile, keyJson);
    stt.plans.push({ kind: "transcribe", final: "what time is it" });
    llm.reply({ chunks: geminiStream({ text: ["It is noon."] }) });
    const res = await parse(`agent: { graph: graph.yaml, greeting: "Hi there." }
pipeline: cascaded
providers:
  stt: { name: google, url: "${stt.url}", language: en-US }
  llm: { name: vertex, url: "${llm.url}" }
  tts: { name: google, url: "${tts.url}", options: { sample_rate: 8000 } }
`);
    if (!res.ok) throw new Error(JSON.stringify(res.problems));
    const app = await createAgentServer({
      config: res.config,
      env: (n) => n === "GOOGLE_APPLICATION_CREDENTIALS" ? keyFile : undefined,
      logger: silentLogger,
    });
    const { call, report } = await agentServerCall(app);
    try {
      await until(() => call.media().length > 10, 8000, "greeting audio");
      assert.deepEqual(tts.bodies[0].input, { text: "Hi there." });
      await call.speak(sine({ freq: 300, sampleRate: 8000, samples: 8000, amplitude: 9000 }));
      await call.speak(new Int16Array(8000));
      await until(() => llm.requests.length === 1, 8000, "Vertex asked");
      const contents = llm.requests[0].body!.contents as { parts: { text?: string }[] }[];
      assert.equal(contents.at(-1)!.parts.at(-1)!.text, "what time is it");
      assert.match(
        llm.requests[0].url.pathname,
        /^\/v1\/projects\/flowcat-test\/locations\/global\//,
      );
      await until(
        () => tts.bodies.some((b) => (b.input as { text?: string }).text === "It is noon."),
        8000,
        "the reply spoken",
      );
      assert.equal(oauth.grants.length, 1, "one token for the three services");
      await call.hangup();
      await report;
    } finally {
      await call.close();
      await app.calls.drain(1000);
      await app.close();
      stt.close();
      await llm.close();
      await tts.close();
      await Deno.remove(keyFile);
    }
  });
});
