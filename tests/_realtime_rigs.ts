/**
 * Rigs of the realtime conformance suite (tests/_realtime_conformance.ts): each scripts one
 * protocol family's local fake, or drives the local echo model, for the suite's checks.
 * @module
 */

import type { RealtimeEvent } from "../core/seams.ts";
import { type RealtimeRig, speak, until } from "./_realtime_conformance.ts";
import { clientAudioPcm, GeminiLiveFake, serverAudio } from "./fakes/gemini_live_fake.ts";
import {
  audioDeltaEvent,
  botTranscriptEvent,
  functionCallDoneEvent,
  OpenAIRealtimeFake,
  responseCreatedEvent,
  responseDoneEvent,
  speechStartedEvent,
  userTranscriptEvent,
} from "./fakes/openai_realtime_fake.ts";
import { UltravoxFake } from "./fakes/ultravox_fake.ts";

/** 100 ms of a model's voice at `rate`. */
export const modelVoice = (rate: number): Int16Array =>
  Int16Array.from({ length: rate / 10 }, (_, i) => Math.round(6000 * Math.sin(i / 4)));

/** The local echo model: driven through its own audio, VAD and keypad. */
export function echoRig(): Promise<RealtimeRig> {
  return Promise.resolve({
    options: { options: { tts: "none", greeting: "hello" } },
    answer(llm) {
      // A turn: speech, then silence long enough for its turn-taking to end the turn.
      speak(llm, 16000, 0.5, 0.8);
      return Promise.resolve();
    },
    async startAnswer(llm) {
      // Speech over the greeting's chime (0.4 s) would itself be a barge-in.
      await new Promise((r) => setTimeout(r, 450));
      speak(llm, 16000, 0.5, 0.8);
    },
    bargeIn(llm) {
      // Fed at once, the speech lands while the echo still plays.
      speak(llm, 16000, 0.4);
      return Promise.resolve();
    },
    callTool(llm) {
      // Digit 1 calls the first tool offered.
      void llm.sendDtmf!("1");
      return Promise.resolve();
    },
    async toolOutput(id: string, events: RealtimeEvent[]) {
      const prefix = `(tool ${id} answered `;
      const said = (e: RealtimeEvent) => e.type === "bot_text" && e.text.startsWith(prefix);
      await until(() => events.some(said), "the tool output's acknowledgement");
      const e = events.find(said)!;
      return JSON.parse((e as { text: string }).text.slice(prefix.length, -1));
    },
    close: () => Promise.resolve(),
  });
}

/** OpenAI Realtime and the providers speaking its protocol, by whose server the fake plays. */
export async function openAIStyleRig(
  key: string,
  dialect: "openai" | "xai" = "openai",
): Promise<RealtimeRig> {
  const fake = new OpenAIRealtimeFake({ apiKey: key, dialect });
  await fake.start();
  let connection = 1;
  // Events are scripted only once the current session is configured (after a drop, the new one).
  const ready = () =>
    until(
      () => fake.connections === connection && Object.keys(fake.session).length > 0,
      "a configured session",
    );
  return {
    options: {
      apiKey: key,
      url: fake.url,
      options: { reconnectBackoffMs: 10, timeoutMs: 3000 },
    },
    wrongKey: `${key}-wrong`,
    async answer(_llm, turn) {
      await ready();
      fake.send(userTranscriptEvent(turn.user, true));
      fake.send(responseCreatedEvent());
      fake.send(audioDeltaEvent(modelVoice(24000), `item_${connection}`));
      fake.send(botTranscriptEvent(turn.bot, true));
      fake.send(responseDoneEvent());
    },
    async startAnswer() {
      await ready();
      fake.send(responseCreatedEvent());
      fake.send(audioDeltaEvent(modelVoice(24000), "item_cut"));
    },
    bargeIn() {
      fake.send(speechStartedEvent());
      return Promise.resolve();
    },
    // xAI's server cuts its answer itself: there is nothing to tell it.
    providerToldOfBargeIn: dialect === "xai" ? undefined : async () => {
      await fake.waitFor((m) =>
        m.type === "conversation.item.truncate" && m.item_id === "item_cut"
      );
    },
    async callTool(_llm, name, args) {
      await ready();
      fake.send(functionCallDoneEvent("call_conf", name, args));
    },
    async toolOutput(id) {
      const m = await fake.waitFor((m) =>
        m.type === "conversation.item.create" &&
        (m.item as Record<string, unknown>).type === "function_call_output" &&
        (m.item as Record<string, unknown>).call_id === id
      );
      return JSON.parse((m.item as { output: string }).output);
    },
    audioIn: () =>
      fake.ofType("input_audio_buffer.append").reduce(
        (n, m) => n + Uint8Array.fromBase64(m.audio as string).length / 2,
        0,
      ),
    async fail(kind) {
      await ready();
      fake.send({
        type: "error",
        error: kind === "rate_limit"
          ? { type: "rate_limit_error", code: "rate_limit_exceeded", message: "Rate limit reached" }
          : { type: "server_error", code: "server_error", message: "The server had an error" },
      });
    },
    async drop() {
      await ready();
      connection++;
      await fake.dropAbruptly();
    },
    close: () => fake.close(),
  };
}

/** Gemini Live (BidiGenerateContent). */
export async function geminiRig(): Promise<RealtimeRig> {
  const key = "AIza-conformance-good-key";
  const fake = await new GeminiLiveFake({ apiKey: key }).start();
  let connection = 1;
  const ready = () =>
    until(
      () => fake.timeline.includes(`c${connection} >setupComplete`),
      "a set-up session",
    );
  const send = async (msg: unknown) => {
    await ready();
    fake.send(msg, connection);
  };
  return {
    options: {
      apiKey: key,
      url: fake.url,
      options: { reconnectBackoffMs: 10, setupTimeoutMs: 3000 },
    },
    wrongKey: "AIza-conformance-wrong-key",
    async answer(_llm, turn) {
      await send({ serverContent: { inputTranscription: { text: turn.user } } });
      await send(serverAudio(modelVoice(24000)));
      await send({ serverContent: { outputTranscription: { text: turn.bot } } });
      await send({
        usageMetadata: { promptTokenCount: 90, responseTokenCount: 30, totalTokenCount: 120 },
      });
      await send({ serverContent: { turnComplete: true } });
    },
    startAnswer: () => send(serverAudio(modelVoice(24000))),
    // The service's own voice detection hears the caller and cuts its answer.
    bargeIn: () => send({ serverContent: { interrupted: true } }),
    callTool: (_llm, name, args) =>
      send({ toolCall: { functionCalls: [{ id: "fc-conf", name, args }] } }),
    async toolOutput(id) {
      const answered = () =>
        fake.messages("toolResponse").find((m) =>
          (m.message.toolResponse as { functionResponses: { id: string }[] })
            .functionResponses[0].id === id
        );
      await until(() => answered() !== undefined, "a toolResponse");
      const r = answered()!.message.toolResponse as { functionResponses: { response: unknown }[] };
      return r.functionResponses[0].response;
    },
    audioIn: () =>
      fake.messages("realtimeInput").reduce((n, m) => {
        const input = m.message.realtimeInput as Record<string, unknown>;
        return input.audio === undefined ? n : n + clientAudioPcm(m).length;
      }, 0),
    // Gemini Live reports both by closing the socket with 1011; the client resumes.
    async fail(kind) {
      await ready();
      connection++;
      fake.dropConnection(
        1011,
        kind === "rate_limit"
          ? "Resource has been exhausted (e.g. check quota)."
          : "Internal error encountered.",
      );
      await Promise.resolve();
    },
    async drop() {
      await ready();
      connection++;
      fake.dropAbruptly(connection - 1);
      await Promise.resolve();
    },
    close: () => fake.close(),
  };
}

/** Ultravox (server WebSocket call). */
export async function ultravoxRig(): Promise<RealtimeRig> {
  const key = "uv-conformance-good-key";
  const fake = new UltravoxFake({ apiKey: key });
  await fake.start();
  let call = 1;
  // After a drop, the replacement call must be joined before the fake speaks on it.
  const joined = () =>
    until(() => fake.joinQueries.length === call && fake.joined, "a joined call");
  return {
    options: {
      apiKey: key,
      url: fake.apiUrl,
      options: { timeoutMs: 3000, reconnectBackoffMs: 10 },
    },
    wrongKey: "uv-conformance-wrong-key",
    async answer(_llm, turn) {
      await joined();
      fake.send({ type: "transcript", role: "user", text: turn.user, final: true, ordinal: 0 });
      fake.send({ type: "state", state: "thinking" });
      fake.sendAudio(modelVoice(24000));
      fake.send({ type: "transcript", role: "agent", delta: turn.bot, final: false, ordinal: 1 });
      fake.send({ type: "transcript", role: "agent", text: turn.bot, final: true, ordinal: 1 });
      fake.send({ type: "state", state: "listening" });
    },
    async startAnswer() {
      await joined();
      fake.send({ type: "state", state: "speaking" });
      fake.sendAudio(modelVoice(24000));
    },
    // Ultravox hears the caller itself and tells the client to drop what it has buffered.
    bargeIn() {
      fake.send({ type: "playback_clear_buffer" });
      return Promise.resolve();
    },
    async callTool(_llm, name, args) {
      await joined();
      fake.send({
        type: "client_tool_invocation",
        toolName: name,
        invocationId: "inv-conf",
        parameters: args,
      });
    },
    async toolOutput(id) {
      const sent = () => fake.ofType("client_tool_result").find((m) => m.invocationId === id);
      await until(() => sent() !== undefined, "a client_tool_result");
      return JSON.parse(sent()!.result as string);
    },
    audioIn: () => fake.audioBytes / 2,
    async drop() {
      await joined();
      call++;
      await fake.dropAbruptly();
    },
    close: () => fake.close(),
  };
}
