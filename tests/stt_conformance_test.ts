/**
 * Every speech-to-text protocol family through the conformance suite
 * (tests/_stt_conformance.ts), each against its local fake: Deepgram streaming (WebSocket) and
 * the Whisper-style batch family (OpenAI dialect), and the vendors on the shared streaming client
 * (providers/ws_stt.ts). Clients are made by the registry's loaders.
 */

import { STT_PROVIDERS } from "../providers/service_registry.ts";
import { sttConformance, type SttRig } from "./_stt_conformance.ts";
import { DeepgramFake } from "./fakes/deepgram_fake.ts";
import { AzureSpeechFake, type FakeSpeechConnection } from "./fakes/azure_speech_fake.ts";
import { WhisperHttpFake } from "./fakes/whisper_http_fake.ts";
import { TranscribeFake } from "./fakes/transcribe_fake.ts";
import { awsEnv } from "./fakes/aws_http_fake.ts";
import {
  GOOGLE_SPEECH_PROTO,
  GrpcRecognizeFake,
  RIVA_ASR_PROTO,
} from "./fakes/grpc_recognize_fake.ts";
import { GOOGLE_STT_PATH } from "../providers/google/speech.ts";
import { RIVA_ASR_PATH } from "../providers/nvidia/riva.ts";
import { startOAuthRig } from "./_google_helpers.ts";

import { type WsSttFake, wsSttRig } from "./fakes/_ws_stt_fake.ts";
import { AssemblyAiSttFake } from "./fakes/assemblyai_stt_fake.ts";
import { SpeechmaticsSttFake } from "./fakes/speechmatics_stt_fake.ts";
import { GladiaSttFake } from "./fakes/gladia_stt_fake.ts";
import { SonioxSttFake } from "./fakes/soniox_stt_fake.ts";
import { CartesiaSttFake } from "./fakes/cartesia_stt_fake.ts";
import { ElevenLabsSttFake } from "./fakes/elevenlabs_stt_fake.ts";

// ---------------------------------------------------------------- Deepgram live (WebSocket)

sttConformance({
  provider: "deepgram",
  create: await STT_PROVIDERS.deepgram.load(),
  rig(): Promise<SttRig> {
    const key = "dg-conformance-good-key";
    const fake = new DeepgramFake({ apiKey: key });
    fake.start();
    // Results go to the connection the client has after any drop the test caused.
    let connection = 1;
    return Promise.resolve({
      options: { apiKey: key, baseUrl: fake.url, options: { reconnect_delay_ms: 10 } },
      wrongKey: "dg-conformance-wrong-key",
      say(text) {
        fake.waitForConnection(connection).then(
          () => fake.sendResult({ transcript: text, isFinal: true, speechFinal: true }),
          () => {}, // refused (wrong key): nothing to say
        );
      },
      fail() {
        connection++;
        void fake.dropConnection();
      },
      audioBytes: () => fake.audioBytes(),
      close: () => fake.close(),
    });
  },
});

// ---------------------------------------------------------------- Azure Speech (WebSocket)

sttConformance({
  provider: "azure",
  create: await STT_PROVIDERS.azure.load(),
  rig(): Promise<SttRig> {
    const key = "azure-conformance-key";
    const fake = new AzureSpeechFake({ key });
    fake.start();
    const sum = (f: (c: FakeSpeechConnection) => number) =>
      fake.connections.reduce((n, c) => n + f(c), 0);
    return Promise.resolve({
      options: { apiKey: key, baseUrl: fake.url, options: { retry_interval_ms: 50 } },
      wrongKey: "azure-conformance-wrong-key",
      async say(text) {
        // To the recognition turn open now, once the client (re)connected.
        const end = Date.now() + 3000;
        while (Date.now() < end) {
          const c = fake.connections.at(-1);
          if (c?.turn !== undefined && c.socket.readyState === WebSocket.OPEN) {
            return fake.phrase(text);
          }
          await new Promise((r) => setTimeout(r, 5));
        }
      },
      fail() {
        void fake.drop(1011, "Internal service error");
      },
      audioBytes: () => sum((c) => [...c.audio.values()].reduce((a, b) => a + b, 0)),
      loudBytes: () => sum((c) => c.loud),
      close: () => fake.close(),
    });
  },
});

// ---------------------------------------------------------------- Whisper-style batch (OpenAI)

sttConformance({
  provider: "openai",
  create: await STT_PROVIDERS.openai.load(),
  async rig(): Promise<SttRig> {
    const key = "sk-conformance-good-key";
    const fake = new WhisperHttpFake({ apiKey: key });
    await fake.start();
    return {
      options: { apiKey: key, baseUrl: `${fake.url}/v1` },
      wrongKey: "sk-conformance-wrong-key",
      say(text) {
        fake.defaultText = text;
      },
      fail() {
        fake.reply({
          status: 503,
          body: { error: { message: "overloaded", type: "server_error" } },
        });
      },
      audioBytes: () => fake.requests.reduce((n, r) => n + (r.wav?.samples ?? 0) * 2, 0),
      close: () => fake.close(),
    };
  },
});

// ---------------------------------------------------------------- Amazon Transcribe streaming

sttConformance({
  provider: "aws",
  create: await STT_PROVIDERS.aws.load(),
  rig(): Promise<SttRig> {
    const fake = new TranscribeFake().start();
    const env = awsEnv(fake.credentials, fake.region);
    const wrongSecret = "wJalrXUtnFEMI/CONFORMANCE/WRONGSECRET";
    let connection = 1;
    const bytes = (loud: boolean) =>
      fake.connections.reduce(
        (n, c) =>
          n + c.audio.reduce((m, a) => {
            if (!loud) return m + a.length;
            return m + a.filter((b) => b !== 0).length;
          }, 0),
        0,
      );
    return Promise.resolve({
      options: { baseUrl: fake.url, credentials: env, options: { reconnect_delay_ms: 10 } },
      wrongKey: wrongSecret,
      wrongOptions: { credentials: { ...env, AWS_SECRET_ACCESS_KEY: wrongSecret } },
      say(text) {
        const want = connection;
        const send = () => {
          if (fake.connections.length >= want) fake.sendResults([{ text, partial: false }]);
          else setTimeout(send, 10);
        };
        send();
      },
      fail() {
        connection++;
        fake.drop();
      },
      audioBytes: () => bytes(false),
      loudBytes: () => bytes(true),
      close: () => fake.close(),
    });
  },
});

// ---------------------------------------------------------------- gRPC StreamingRecognize

/** A rig around a gRPC recognizer fake (Google Cloud Speech or NVIDIA Riva). */
function grpcRig(
  fake: GrpcRecognizeFake,
  auth: Pick<SttRig, "options" | "wrongKey" | "wrongOptions">,
  close: () => Promise<void>,
): SttRig {
  return {
    ...auth,
    say: (text) => void fake.plans.push({ kind: "transcribe", final: text }),
    // UNAVAILABLE, as a server going away ends a stream.
    fail: () => void fake.plans.push({ kind: "fail", code: 14, details: "backend restarting" }),
    audioBytes: () => fake.streams.reduce((n, s) => n + s.audioBytes, 0),
    close,
  };
}

sttConformance({
  provider: "google",
  create: await STT_PROVIDERS.google.load(),
  async rig(): Promise<SttRig> {
    const oauth = await startOAuthRig();
    const fake = await new GrpcRecognizeFake({
      proto: GOOGLE_SPEECH_PROTO,
      pkg: "google.cloud.speech.v1",
      path: GOOGLE_STT_PATH,
      bearer: (t) => oauth.oauth.accepts(t),
    }).start();
    const auth = {
      options: { apiKey: oauth.keyJson, baseUrl: fake.url, options: { retry_interval_ms: 0 } },
      wrongKey: oauth.wrongSecret,
      wrongOptions: { apiKey: oauth.wrongJson },
    };
    return grpcRig(fake, auth, async () => {
      fake.close();
      await oauth.close();
    });
  },
});

sttConformance({
  provider: "riva",
  create: await STT_PROVIDERS.riva.load(),
  skip: { auth: "a local Riva server takes no key" },
  async rig(): Promise<SttRig> {
    const fake = await new GrpcRecognizeFake({
      proto: RIVA_ASR_PROTO,
      pkg: "nvidia.riva.asr",
      path: RIVA_ASR_PATH,
    }).start();
    const auth = {
      options: { baseUrl: fake.url, options: { retry_interval_ms: 0 } },
      wrongKey: "",
    };
    return grpcRig(fake, auth, () => Promise.resolve(fake.close()));
  },
});

// ---------------------------------------------------------------- shared WebSocket client

/** The vendors on providers/ws_stt.ts, each with the fake speaking its wire. */
const WS_VENDORS: [provider: string, fake: (key: string) => WsSttFake][] = [
  ["assemblyai", (key) => new AssemblyAiSttFake(key)],
  ["speechmatics", (key) => new SpeechmaticsSttFake(key)],
  ["gladia", (key) => new GladiaSttFake(key)],
  ["soniox", (key) => new SonioxSttFake(key)],
  ["cartesia", (key) => new CartesiaSttFake(key)],
  ["elevenlabs", (key) => new ElevenLabsSttFake(key)],
];

for (const [provider, makeFake] of WS_VENDORS) {
  const key = `${provider}-conformance-good-key`;
  sttConformance({
    provider,
    create: await STT_PROVIDERS[provider].load(),
    rig: () => {
      const fake = makeFake(key).start();
      const options = { apiKey: key, baseUrl: fake.baseUrl, options: { reconnect_delay_ms: 10 } };
      return Promise.resolve(wsSttRig(fake, options, `${provider}-conformance-wrong-key`));
    },
  });
}
