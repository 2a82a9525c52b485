/**
 * Every speech-to-text protocol family through the conformance suite
 * (tests/_stt_conformance.ts), each against its local fake: Deepgram streaming (WebSocket) and
 * the Whisper-style batch family (OpenAI dialect), and the vendors on the shared streaming client
 * (providers/ws_stt.ts). Clients are made by the registry's loaders.
 */

import { STT_PROVIDERS } from "../providers/service_registry.ts";
import { sttConformance, type SttRig } from "./_stt_conformance.ts";
import { DeepgramFake } from "./fakes/deepgram_fake.ts";
import { WhisperHttpFake } from "./fakes/whisper_http_fake.ts";
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
