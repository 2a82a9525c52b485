// deno-lint-ignore-file no-explicit-any -- fake wire messages are loosely typed JSON
/**
 * The speech-to-speech call end to end with no key, once per provider: a local client speaking
 * Twilio framing -> buildS2sTask -> the real Gemini Live / OpenAI Realtime client -> a local
 * fake speaking the provider's wire protocol.
 */
import assert from "node:assert/strict";
import { GraphBrain } from "../core/agent/graph_brain.ts";
import { parseGraphSpec } from "../core/agent/graph_spec.ts";
import { concatInt16, rms, sine } from "../core/audio/pcm.ts";
import { silentLogger } from "../core/log.ts";
import type { RealtimeLlm } from "../core/seams.ts";
import { createGeminiLive } from "../providers/google/gemini_live.ts";
import { createOpenAIRealtime } from "../providers/openai/realtime.ts";
import { createAzureRealtime } from "../providers/azure/realtime.ts";
import { sleep, until } from "./_core_helpers.ts";
import { s2sTwilioCall } from "./_s2s_twilio.ts";
import { clientAudioPcm, GeminiLiveFake, serverAudio } from "./fakes/gemini_live_fake.ts";
import {
  audioDeltaEvent,
  botTranscriptEvent,
  functionCallDoneEvent,
  OpenAIRealtimeFake,
  pcm16FromBase64LE,
  responseDoneEvent,
  speechStartedEvent,
  userTranscriptEvent,
} from "./fakes/openai_realtime_fake.ts";

const GRAPH = `
version: 1
start: greet
nodes:
  - id: greet
    prompt: Greet the caller and ask what they need.
    transitions:
      - name: wants_booking
        description: The caller wants a table.
        target: booking
  - id: booking
    prompt: Take the booking details.
    transitions:
      - name: done
        description: Booking taken.
        target: bye
  - id: bye
    prompt: Say goodbye.
    terminal: true
`;

function brain(): GraphBrain {
  const r = parseGraphSpec(GRAPH);
  if (!r.ok) throw new Error(JSON.stringify(r.problems));
  return new GraphBrain(r.spec);
}

/** What differs between providers: how the fake is driven and read. */
interface ProviderDriver {
  name: string;
  start(): Promise<void>;
  client(): RealtimeLlm;
  /** Caller audio the fake received so far, at the rate the provider takes. */
  callerAudio(): { pcm: Int16Array; rate: number };
  /** The model speaks `pcm24k`. */
  speak(pcm24k: Int16Array): void;
  interrupt(): void;
  transcripts(user: string, bot: string): void;
  toolCall(id: string, name: string): void;
  /** System prompt the fake has now (after updates). */
  prompt(): string;
  toolNames(): string[];
  /** Tool result ids the fake received. */
  toolResultIds(): string[];
  close(): Promise<void>;
}

function geminiDriver(): ProviderDriver {
  const fake = new GeminiLiveFake();
  const setups = () => fake.messages("setup").map((m) => m.message.setup as Record<string, any>);
  return {
    name: "gemini",
    start: async () => void await fake.start(),
    client: () => createGeminiLive({ apiKey: "test-key", url: fake.url, logger: silentLogger }),
    callerAudio() {
      const msgs = fake.messages("realtimeInput").filter((m) =>
        (m.message.realtimeInput as Record<string, unknown>).audio !== undefined
      );
      const rates = new Set(
        msgs.map((
          m,
        ) => ((m.message.realtimeInput as { audio: { mimeType: string } }).audio.mimeType)),
      );
      assert.deepEqual([...rates], ["audio/pcm;rate=16000"]);
      return { pcm: concatInt16(msgs.map(clientAudioPcm)), rate: 16000 };
    },
    speak: (pcm) => fake.send(serverAudio(pcm)),
    interrupt: () => fake.send({ serverContent: { interrupted: true } }),
    transcripts(user, bot) {
      // Gemini keeps the session resumable; the prompt switch resumes with this handle.
      fake.send({ sessionResumptionUpdate: { newHandle: "h-1", resumable: true } });
      fake.send({ serverContent: { inputTranscription: { text: user } } });
      fake.send({ serverContent: { outputTranscription: { text: bot } } });
      fake.send({ serverContent: { turnComplete: true } });
    },
    toolCall: (id, name) => fake.send({ toolCall: { functionCalls: [{ id, name, args: {} }] } }),
    prompt: () => {
      const s = setups().at(-1);
      return (s?.systemInstruction?.parts?.[0]?.text as string) ?? "";
    },
    toolNames: () =>
      (setups().at(-1)?.tools?.[0]?.functionDeclarations ?? []).map((d: { name: string }) =>
        d.name
      ),
    toolResultIds: () =>
      fake.messages("toolResponse").flatMap((m) =>
        (m.message.toolResponse as { functionResponses: { id: string }[] }).functionResponses
          .map((r) => r.id)
      ),
    close: () => fake.close(),
  };
}

function openaiDriver(): ProviderDriver {
  const fake = new OpenAIRealtimeFake();
  return openaiStyleDriver(
    "openai",
    fake,
    () => createOpenAIRealtime({ apiKey: "test-key", url: fake.url, logger: silentLogger }),
  );
}

/** Azure OpenAI Realtime: the OpenAI client at Azure's URL, refused without its api-key header. */
function azureDriver(): ProviderDriver {
  const fake = new OpenAIRealtimeFake({ requireHeader: { name: "api-key", value: "test-key" } });
  return openaiStyleDriver("azure", fake, () =>
    createAzureRealtime({
      apiKey: "test-key",
      model: "my-realtime",
      url: fake.url.replace(/\/v1\/realtime$/, ""),
      logger: silentLogger,
    }));
}

function openaiStyleDriver(
  name: string,
  fake: OpenAIRealtimeFake,
  client: () => RealtimeLlm,
): ProviderDriver {
  const sessions = () => fake.ofType("session.update").map((m) => m.session as Record<string, any>);
  return {
    name,
    start: () => fake.start(),
    client,
    callerAudio() {
      const parts = fake.ofType("input_audio_buffer.append").map((m) =>
        pcm16FromBase64LE(m.audio as string)
      );
      return { pcm: concatInt16(parts), rate: 24000 };
    },
    speak: (pcm) => fake.send(audioDeltaEvent(pcm, "item_bot")),
    interrupt: () => fake.send(speechStartedEvent(100)),
    transcripts(user, bot) {
      fake.send(userTranscriptEvent(user, true));
      fake.send(botTranscriptEvent(bot, true));
      fake.send(responseDoneEvent());
    },
    toolCall: (id, name) => fake.send(functionCallDoneEvent(id, name, {})),
    prompt: () =>
      (sessions().filter((s) => s.instructions !== undefined).at(-1)?.instructions as string) ?? "",
    toolNames: () =>
      (sessions().filter((s) => s.tools !== undefined).at(-1)?.tools ?? []).map((
        t: { name: string },
      ) => t.name),
    toolResultIds: () =>
      fake.ofType("conversation.item.create")
        .map((m) => m.item as { type: string; call_id?: string })
        .filter((i) => i.type === "function_call_output")
        .map((i) => i.call_id!),
    close: () => fake.close(),
  };
}

async function soxAccepts(path: string): Promise<boolean | undefined> {
  try {
    const out = await new Deno.Command("sox", { args: ["--i", path], stderr: "null" }).output();
    return out.success;
  } catch {
    return undefined; // sox not installed or not allowed: the header check below still runs
  }
}

for (const makeDriver of [geminiDriver, openaiDriver, azureDriver]) {
  const driver = makeDriver();
  Deno.test(`s2s over Twilio framing with the ${driver.name} client against its fake`, async () => {
    await driver.start();
    const { call, finished, sessions, completions } = await s2sTwilioCall(
      driver.client(),
      { brain: brain(), model: driver.name },
      driver.name,
    );

    // Caller audio (8 kHz mu-law) reaches the fake at the provider's input rate.
    const tone = sine({ freq: 400, sampleRate: 8000, samples: 1600, amplitude: 8000 });
    await call.speak(tone);
    await until(() => driver.callerAudio().pcm.length >= 1600 * 1.8, 3000, "caller audio at fake");
    const heard = driver.callerAudio();
    assert.ok(rms(heard.pcm) > 2000, `caller audio has the tone's energy: ${rms(heard.pcm)}`);

    // The model's 24 kHz voice reaches the caller as 8 kHz mu-law.
    driver.speak(sine({ freq: 500, sampleRate: 24000, samples: 24000, amplitude: 8000 }));
    await until(() => call.media().length >= 10, 3000, "model audio at caller");
    assert.ok(rms(call.decode(call.media())) > 2000);

    // Barge-in about 0.8 s into the model's 1 s line: the transport sends Twilio's clear.
    await until(() => call.media().length >= 40, 3000, "more model audio at caller");
    driver.interrupt();
    await until(() => call.got.some((m) => m.event === "clear"), 3000, "clear");
    const sent = call.media().length * 20;

    // The transcripts come after the barge-in, as the providers send them at the turn's end.
    driver.transcripts("I'd like a table", "Sure, let me help.");
    await sleep(50);

    // A transition tool call: the fake gets the new prompt and tools, then the result.
    driver.toolCall("call-1", "wants_booking");
    await until(() => driver.prompt().includes("Take the booking details"), 3000, "new prompt");
    assert.deepEqual(driver.toolNames().sort(), ["done", "end_call"]);
    await until(() => driver.toolResultIds().includes("call-1"), 3000, "tool result id");

    // The end tool: the pipeline drains and the call completes once.
    driver.toolCall("call-2", "end_call");
    const report = await finished;
    assert.equal(completions(), 1);
    assert.match(String(report.usage.endedBy), /^end: brain/);
    assert.ok(report.recordingUrl && report.transcriptUrl);
    const wav = sessions.memoryArtifact("run-1-recording.wav")!;
    assert.equal(new TextDecoder().decode(wav.subarray(0, 4)), "RIFF");
    await Deno.mkdir(".tmp", { recursive: true });
    const path = `.tmp/s2s-${driver.name}.wav`;
    await Deno.writeFile(path, wav);
    const sox = await soxAccepts(path);
    if (sox !== undefined) assert.ok(sox, "sox --i accepts the recording");
    const doc = JSON.parse(
      new TextDecoder().decode(sessions.memoryArtifact("run-1-transcript.json")),
    );
    const text = doc.lines.map((l: { role: string; text: string }) => `${l.role}:${l.text}`);
    assert.ok(text.includes("user:I'd like a table"), JSON.stringify(text));
    assert.ok(text.includes("node:booking"), JSON.stringify(text));
    // The bot's line ends where its playout stopped and says it was interrupted: its words came
    // after the cut, so they are placed by the share of its audio that played (about 0.8 of 15
    // letters, back to a whole word).
    const bot = doc.lines.find((l: { role: string }) => l.role === "bot");
    assert.ok(sent >= 800 && sent < 1000, `${sent} ms sent before the clear`);
    assert.deepEqual(bot, { role: "bot", text: "Sure, let me", atMs: bot.atMs, interrupted: true });
    await call.close();
    await driver.close();
  });
}
