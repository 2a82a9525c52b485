/**
 * Every text-to-speech provider client through the conformance suite (tests/_tts_conformance.ts),
 * each against its local fake. Clients are made by the registry's loaders, as the server makes
 * them.
 */

import { TTS_PROVIDERS } from "../providers/service_registry.ts";
import type { ServiceFactory } from "../providers/service_registry.ts";
import { ttsConformance, type TtsRig, type TtsScenario } from "./_tts_conformance.ts";
import { OpenAITtsFake, type SpeechReply } from "./fakes/openai_tts_fake.ts";
import { PiperFake } from "./fakes/piper_fake.ts";
import { ElevenLabsFake } from "./fakes/elevenlabs_fake.ts";
import { CartesiaFake } from "./fakes/cartesia_fake.ts";
import { AzureSpeechFake } from "./fakes/azure_speech_fake.ts";
import { AwsHttpFake } from "./fakes/aws_http_fake.ts";
import { GoogleTtsFake } from "./fakes/google_tts_fake.ts";
import { googleError } from "./fakes/gemini_generate_fake.ts";
import { startOAuthRig } from "./_google_helpers.ts";

import { DeepgramTtsFake } from "./fakes/deepgram_tts_fake.ts";
import { RimeFake } from "./fakes/rime_tts_fake.ts";
import { LmntFake } from "./fakes/lmnt_tts_fake.ts";
import { NeuphonicFake } from "./fakes/neuphonic_tts_fake.ts";
import { FishFake } from "./fakes/fish_tts_fake.ts";
import { HumeFake } from "./fakes/hume_tts_fake.ts";
import { type FakeWsServer, field } from "./fakes/_ws_fake_server.ts";
import type { HttpStreamFake } from "./fakes/_http_stream_fake.ts";

const factory = async (name: string): Promise<ServiceFactory<"tts">> =>
  await TTS_PROVIDERS[name].load();

/** 100 ms of a quiet ramp at `rate`, as little-endian PCM bytes, in `parts` chunks. */
function pcmChunks(rate: number, parts: number): Uint8Array[] {
  const bytes = new Uint8Array((rate / 10) * 2);
  for (let i = 0; i < bytes.length; i += 2) bytes[i] = i & 0x7f;
  const size = Math.ceil(bytes.length / parts);
  return Array.from({ length: parts }, (_, i) => bytes.slice(i * size, (i + 1) * size));
}

/**
 * The rig of a fake built on tests/fakes/_ws_fake_server.ts: a rate limit refuses handshakes
 * with 429 (clients dial per utterance or redial a closed socket), the others go to `mode`;
 * `isUtterance` picks the client messages that request speech.
 */
function serverRig(
  fake: FakeWsServer & { key: string },
  isUtterance: (msg: unknown) => boolean,
): Promise<TtsRig> {
  return Promise.resolve({
    options: { apiKey: fake.key, baseUrl: fake.url },
    wrongKey: `wrong-${fake.key}`,
    next(s) {
      fake.refuseWith = s === "rate_limit" ? 429 : undefined;
      fake.mode = s === "stall" || s === "drop" ? s : s === "server_error" ? "error" : "normal";
    },
    utterances: () => fake.messages.filter(isUtterance).length,
    close: () => fake.close(),
  });
}

/**
 * The rig of a fake built on tests/fakes/_http_stream_fake.ts: a rate limit or a server error is
 * one 429 / 500 answer (these clients retry), stall and drop go to `mode`.
 */
function httpRig(fake: HttpStreamFake): Promise<TtsRig> {
  return Promise.resolve({
    options: { apiKey: fake.key, baseUrl: fake.url },
    wrongKey: `wrong-${fake.key}`,
    next(s) {
      fake.mode = s === "stall" || s === "drop" ? s : "normal";
      if (s === "rate_limit") fake.failures.push(429);
      if (s === "server_error") fake.failures.push(500);
    },
    utterances: () => fake.requests.length,
    close: () => fake.close(),
  });
}

// ---------------------------------------------------------------- OpenAI-compatible speech

ttsConformance({
  provider: "openai",
  create: await factory("openai"),
  sampleRates: [24000],
  retries: true,
  async rig(): Promise<TtsRig> {
    const fake = new OpenAITtsFake();
    fake.apiKey = "sk-conformance-good-key";
    fake.defaultReply = { chunks: pcmChunks(24000, 3) };
    await fake.start();
    const replies: Record<TtsScenario, SpeechReply[]> = {
      audio: [],
      stall: [{ chunks: pcmChunks(24000, 2), delayMs: 60_000 }],
      rate_limit: [{ status: 429, message: "Rate limit reached", headers: { "retry-after": "0" } }],
      server_error: [{ status: 500, message: "The server had an error" }],
      drop: [{ chunks: pcmChunks(24000, 2), cut: true }],
    };
    return {
      options: { apiKey: fake.apiKey, baseUrl: fake.baseUrl },
      wrongKey: "sk-conformance-wrong-key",
      next: (s) => fake.replies.splice(0, fake.replies.length, ...replies[s]),
      utterances: () => fake.requests.length,
      close: () => fake.close(),
    };
  },
});

// ---------------------------------------------------------------- Piper HTTP server (local)

ttsConformance({
  provider: "piper",
  create: await factory("piper"),
  sampleRates: [22050, 16000, 8000],
  retries: true,
  skip: {
    auth: "a local Piper server takes no key",
    rate_limit: "a local Piper server has no rate limit",
  },
  async rig(): Promise<TtsRig> {
    const fake = new PiperFake({ api: "synthesize" });
    await fake.start();
    return {
      options: { baseUrl: fake.baseUrl },
      wrongKey: "",
      next(s) {
        fake.partial = s === "stall" ? "stall" : s === "drop" ? "cut" : undefined;
        if (s === "server_error") fake.failures.push(500);
      },
      utterances: () => fake.requests.length,
      close: () => fake.close(),
    };
  },
});

// ---------------------------------------------------------------- ElevenLabs stream-input

ttsConformance({
  provider: "elevenlabs",
  create: await factory("elevenlabs"),
  sampleRates: [16000, 8000, 24000],
  async rig(): Promise<TtsRig> {
    const fake = new ElevenLabsFake({ audio: pcmChunks(16000, 3) });
    await fake.start();
    return {
      options: { apiKey: fake.key, baseUrl: fake.url },
      wrongKey: "wrong-eleven-key",
      next(s) {
        fake.refuseWith = s === "rate_limit" ? 429 : undefined;
        fake.mode = s === "stall"
          ? "stall"
          : s === "drop"
          ? "drop"
          : s === "server_error"
          ? "error"
          : "normal";
      },
      utterances: () => fake.connections.length + fake.refused.length,
      close: () => fake.close(),
    };
  },
});

// ---------------------------------------------------------------- Cartesia WebSocket

ttsConformance({
  provider: "cartesia",
  create: await factory("cartesia"),
  sampleRates: [24000, 16000, 8000],
  async rig(): Promise<TtsRig> {
    const fake = new CartesiaFake({ audio: pcmChunks(24000, 3) });
    await fake.start();
    return {
      options: { apiKey: fake.key, baseUrl: fake.url },
      wrongKey: "wrong-cartesia-key",
      next(s) {
        fake.mode = s === "audio" ? "normal" : s === "server_error" ? "error" : s;
      },
      utterances: () => fake.messages.filter((m) => typeof m.transcript === "string").length,
      close: () => fake.close(),
    };
  },
});

// ---------------------------------------------------------------- Azure Speech WebSocket

ttsConformance({
  provider: "azure",
  create: await factory("azure"),
  sampleRates: [24000, 16000, 8000],
  skip: {
    rate_limit: "Azure throttles at the WebSocket upgrade (HTTP 429, azure_tts_test.ts); " +
      "an open synthesis socket has no rate-limit message",
  },
  rig(): Promise<TtsRig> {
    const fake = new AzureSpeechFake({ key: "azure-conformance-key" });
    fake.start();
    return Promise.resolve({
      options: { apiKey: "azure-conformance-key", baseUrl: fake.url },
      wrongKey: "azure-wrong-key",
      next(s) {
        fake.holdAudio = s === "stall";
        fake.dropMidAudio = s === "drop";
        fake.failNextSynthesis = s === "server_error";
      },
      utterances: () => fake.sent("ssml").length,
      close: () => fake.close(),
    });
  },
});

// ---------------------------------------------------------------- Amazon Polly (SigV4)

ttsConformance({
  provider: "aws",
  create: await factory("aws"),
  sampleRates: [16000, 8000],
  retries: true,
  rig(): Promise<TtsRig> {
    const fake = new AwsHttpFake().start();
    const wrongSecret = "wJalrXUtnFEMI/CONFORMANCE/WRONGSECRET";
    const ramp = pcmChunks(16000, 2);
    return Promise.resolve({
      options: { baseUrl: fake.url, credentials: fake.env },
      wrongKey: wrongSecret,
      wrongOptions: { credentials: { ...fake.env, AWS_SECRET_ACCESS_KEY: wrongSecret } },
      next(s) {
        if (s === "stall") fake.reply({ pieces: ramp, hold: true });
        if (s === "drop") fake.reply({ pieces: ramp, reset: true });
        if (s === "rate_limit") {
          fake.reply({ status: 400, code: "ThrottlingException", message: "Rate exceeded" });
        }
        if (s === "server_error") {
          fake.reply({ status: 500, code: "ServiceFailureException", message: "Internal error" });
        }
      },
      utterances: () => fake.requests.length,
      close: () => fake.close(),
    });
  },
});

// ---------------------------------------------------------------- Google Cloud TTS (REST)

ttsConformance({
  provider: "google",
  create: await factory("google"),
  sampleRates: [24000, 16000, 8000],
  retries: true,
  skip: { drop: "text:synthesize answers one JSON body; a cut one is a failed request" },
  async rig(): Promise<TtsRig> {
    const auth = await startOAuthRig();
    const fake = await new GoogleTtsFake((t) => auth.oauth.accepts(t)).start();
    return {
      options: { apiKey: auth.keyJson, baseUrl: fake.url },
      wrongKey: auth.wrongSecret,
      wrongOptions: { apiKey: auth.wrongJson },
      next(s) {
        if (s === "stall") fake.replies.push({ delayMs: 60_000 });
        if (s === "rate_limit") {
          fake.replies.push({
            status: 429,
            body: googleError(429, "RESOURCE_EXHAUSTED", "Quota exceeded"),
          });
        }
        if (s === "server_error") {
          fake.replies.push({ status: 503, body: googleError(503, "UNAVAILABLE", "Try again") });
        }
      },
      utterances: () => fake.bodies.length,
      async close() {
        await fake.close();
        await auth.close();
      },
    };
  },
});

// ---------------------------------------------------------------- Deepgram Aura WebSocket

ttsConformance({
  provider: "deepgram",
  create: await factory("deepgram"),
  sampleRates: [24000, 16000, 8000, 48000],
  rig: () =>
    serverRig(
      new DeepgramTtsFake({ audio: pcmChunks(24000, 3) }),
      (m) => field(m, "type") === "Speak",
    ),
});

// ---------------------------------------------------------------- Rime JSON WebSocket

ttsConformance({
  provider: "rime",
  create: await factory("rime"),
  sampleRates: [24000, 16000, 8000, 44100],
  rig: () =>
    serverRig(
      new RimeFake({ audio: pcmChunks(24000, 3) }),
      (m) => typeof field(m, "text") === "string",
    ),
});

// ---------------------------------------------------------------- LMNT speech session

ttsConformance({
  provider: "lmnt",
  create: await factory("lmnt"),
  sampleRates: [24000, 16000, 8000],
  rig: () =>
    serverRig(
      new LmntFake({ audio: pcmChunks(24000, 3) }),
      (m) => typeof field(m, "text") === "string",
    ),
});

// ---------------------------------------------------------------- Neuphonic SSE

ttsConformance({
  provider: "neuphonic",
  create: await factory("neuphonic"),
  sampleRates: [22050, 16000, 8000],
  retries: true,
  rig: () => httpRig(new NeuphonicFake({ audio: pcmChunks(22050, 3) })),
});

// ---------------------------------------------------------------- Fish Audio live WebSocket

ttsConformance({
  provider: "fish",
  create: await factory("fish"),
  sampleRates: [24000, 16000, 8000, 44100],
  rig: () =>
    serverRig(new FishFake({ audio: pcmChunks(24000, 3) }), (m) => field(m, "event") === "text"),
});

// ---------------------------------------------------------------- Hume Octave JSON streaming

ttsConformance({
  provider: "hume",
  create: await factory("hume"),
  sampleRates: [48000],
  retries: true,
  rig: () => httpRig(new HumeFake({ audio: pcmChunks(48000, 3) })),
});

// ---------------------------------------------------------------- eSpeak NG (in process)

ttsConformance({
  provider: "espeak",
  create: await factory("espeak"),
  sampleRates: [22050, 16000, 8000],
});
