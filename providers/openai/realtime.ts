// Over 400 lines: one session class; the reconnect state its helper modules share.
/**
 * OpenAI Realtime client over WebSocket: the GA protocol by default, the older beta dialect with
 * `options.protocol: "beta"`. Also the client behind every `openAIStyleRealtime` wrapper.
 *
 * Audio both ways is 24 kHz PCM16 (caller audio at 16 kHz is resampled), or with
 * `options.audioFormat: "g711_ulaw"` 8 kHz mu-law, which a telephone call takes and plays as
 * it is: the call then runs at 8 kHz with no resampler ({@link OpenAIRealtimeClient.audioRates}).
 * Barge-in, tool calls, transcripts
 * and usage map onto {@link RealtimeEvent}s. See docs/realtime-openai.md.
 *
 * Permissions: `--allow-net=api.openai.com:443` (or the compatible service's host).
 *
 * @example
 * ```ts
 * import { createOpenAIRealtime } from "@flowcat/flowcat/realtime/openai";
 * declare const key: string;
 * const llm = createOpenAIRealtime({ apiKey: key });
 * await llm.connect({ systemPrompt: "Be brief.", tools: [], kickoff: "Say hello." });
 * ```
 * @module
 */

import { errorMessage, FlowcatError } from "../../core/errors.ts";
import { type AudioFrame, audioFrame, type KeypadEntry, type ToolDecl } from "../../core/frames.ts";
import type { Logger } from "../../core/log.ts";
import {
  DEFAULT_REALTIME_RATES,
  type RealtimeAudioRates,
  type RealtimeEvent,
  type RealtimeLlm,
  type RealtimeSetup,
} from "../../core/seams.ts";
import type { RealtimeFactory, RealtimeProviderOptions } from "../provider_types.ts";
import { handoverReply, reportHandover } from "../../core/handover.ts";
import { retryWithBackoff } from "../realtime/retry.ts";
import {
  closeSocket,
  dtmfUserText,
  openRealtimeSocket,
  RealtimeEventQueue,
} from "../realtime/_shared.ts";
import {
  AudioBacklog,
  continueAnswerText,
  type CutAnswer,
  OpenAIConversation,
} from "./realtime_history.ts";
import {
  OPENAI_REALTIME_SPEC,
  type OpenAIClientConfig,
  type OpenAIStyleSpec,
  resolveOpenAIConfig,
  sessionConfigFor,
} from "./realtime_config.ts";
import {
  AUDIO_DELTA_EVENTS,
  audioDeltaOf,
  BOT_TRANSCRIPT_DELTA_EVENTS,
  BOT_TRANSCRIPT_DONE_EVENTS,
  functionCallOf,
  parseServerEvent,
  serverErrorInfo,
  type ServerEvent,
  usageFromResponse,
} from "./realtime_inbound.ts";
import { SessionHandshake } from "./realtime_handshake.ts";
import { ResponseGate } from "./realtime_responses.ts";
import {
  type ClientEvent,
  functionOutputEvent,
  InputAudioEncoder,
  instructionsUpdateEvent,
  openAIFormatRate,
  sessionUpdateEvent,
  toolOutputText,
  userTextEvent,
} from "./realtime_wire.ts";

type State = "idle" | "connecting" | "open" | "reconnecting" | "closed";

const CLOSE_WAIT_MS = 2000;

/** A {@link RealtimeLlm} speaking the OpenAI Realtime protocol (GA or beta). */
export class OpenAIRealtimeClient implements RealtimeLlm {
  readonly #cfg: OpenAIClientConfig;
  readonly #log: Logger;
  readonly #queue = new RealtimeEventQueue();
  #state: State = "idle";
  #ws: WebSocket | undefined;
  #socketClosed: Promise<void> = Promise.resolve();
  #closing: Promise<void> | undefined;
  readonly #handshake: SessionHandshake;
  readonly #audioIn: InputAudioEncoder;
  readonly #responses: ResponseGate;
  #setup: RealtimeSetup | undefined;
  /** The conversation as heard, to seed a new session after a drop. */
  readonly #history = new OpenAIConversation();
  readonly #backlog: AudioBacklog;
  /** A tool result or keypad turn came while reconnecting: the new session must answer it. */
  #respondAfterSeed = false;
  #lastMessageAt = 0;
  readonly #stop = new AbortController();

  /**
   * Make a client from provider options (`apiKey` required). `spec` says the endpoint, auth and
   * defaults; it is OpenAI's own unless an OpenAI-style wrapper passes another.
   */
  constructor(opts: RealtimeProviderOptions, spec: OpenAIStyleSpec = OPENAI_REALTIME_SPEC) {
    this.#cfg = resolveOpenAIConfig(spec, opts);
    this.#log = this.#cfg.logger;
    this.#handshake = new SessionHandshake(this.#cfg.provider);
    this.#audioIn = new InputAudioEncoder(this.#cfg.audioFormat);
    this.#responses = new ResponseGate(
      (ev) => this.#send(ev),
      openAIFormatRate(this.#cfg.audioFormat),
    );
    this.#backlog = new AudioBacklog(
      this.#cfg.audioBufferMs,
      () =>
        this.#log.warn(`${this.#cfg.provider}: reconnect buffer full; oldest caller audio dropped`),
    );
  }

  /**
   * In G.711 (`audioFormat: g711_ulaw`) 8 kHz both ways, whatever the leg; in PCM16 16 kHz in
   * (the client makes it 24) and 24 kHz out.
   */
  audioRates(_legRate: number): RealtimeAudioRates {
    return this.#cfg.audioFormat === "g711_ulaw"
      ? { input: 8000, output: 8000 }
      : DEFAULT_REALTIME_RATES;
  }

  /** Open the socket, configure the session and, with `setup.kickoff`, make the model speak. */
  async connect(setup: RealtimeSetup): Promise<void> {
    const p = this.#cfg.provider;
    if (this.#state !== "idle") throw new FlowcatError("other", `${p}: connect called twice`);
    this.#state = "connecting";
    this.#setup = { ...setup, tools: [...setup.tools] };
    const session = sessionConfigFor(this.#cfg, setup);
    try {
      await this.#dial(sessionUpdateEvent(this.#cfg.protocol, session));
    } catch (err) {
      if (this.#ws === undefined) {
        this.#state = "closed";
        this.#queue.close("connect failed");
      } else await this.close();
      throw err;
    }
    this.#state = "open";
    this.#log.info(`${p}: session ready`, {
      model: this.#cfg.model,
      protocol: this.#cfg.protocol,
      voice: session.voice,
    });
    if (setup.kickoff !== undefined && setup.kickoff !== "") {
      this.#send(userTextEvent(setup.kickoff));
      this.#responses.request();
    }
  }

  /**
   * Send caller audio (any rate, usually 16 kHz); dropped until the session is ready, kept while
   * a dropped session is replaced (and until the server transcribed the turn it belongs to).
   */
  sendAudio(audio: AudioFrame): void {
    if (this.#state !== "open" && this.#state !== "reconnecting") return;
    const b64 = this.#audioIn.encode(audio);
    if (b64 === undefined) return;
    const ms = (audio.pcm.length / audio.numChannels / audio.sampleRate) * 1000;
    const sent = this.#state === "open" &&
      this.#send({ type: "input_audio_buffer.append", audio: b64 });
    this.#backlog.push(b64, ms, sent);
  }

  /** Replace the instructions and tools mid-call (OpenAI allows it with `session.update`). */
  updateSystem(prompt: string, tools: ToolDecl[]): Promise<void> {
    if (this.#state !== "open" && this.#state !== "reconnecting") {
      return Promise.reject(this.#notOpen());
    }
    this.#setup = { ...this.#setup!, systemPrompt: prompt, tools: [...tools] };
    // While reconnecting, the new session is configured with these.
    if (this.#state === "open") {
      this.#send(instructionsUpdateEvent(this.#cfg.protocol, prompt, tools));
    }
    return Promise.resolve();
  }

  /** Answer a tool call and ask the model to go on (after the current response, if one runs). */
  sendToolResult(id: string, result: unknown): Promise<void> {
    if (this.#state !== "open" && this.#state !== "reconnecting") {
      return Promise.reject(this.#notOpen());
    }
    const output = toolOutputText(result);
    this.#history.toolResult(id, output);
    if (this.#state === "reconnecting") this.#respondAfterSeed = true;
    else {
      this.#send(functionOutputEvent(id, output));
      this.#responses.request();
    }
    return Promise.resolve();
  }

  /** A keypad press, as a user message the model answers ({@link dtmfUserText}). */
  sendDtmf(key: KeypadEntry): void {
    if (this.#state !== "open" && this.#state !== "reconnecting") return;
    this.#history.userSaid(dtmfUserText(key));
    if (this.#state === "reconnecting") this.#respondAfterSeed = true;
    else {
      this.#send(userTextEvent(dtmfUserText(key)));
      this.#responses.request();
    }
  }

  /** Next event; `undefined` after the `closed` event. */
  nextEvent(): Promise<RealtimeEvent | undefined> {
    return this.#queue.next();
  }

  /** Push mode: every event to `deliver` as it arrives, `undefined` once closed. */
  listen(deliver: (ev: RealtimeEvent | undefined) => void): void {
    this.#queue.listen(deliver);
  }

  /** Close the session; idempotent. Resolves once the socket is closed (or after 2 s). */
  close(): Promise<void> {
    this.#closing ??= this.#doClose();
    return this.#closing;
  }

  async #doClose(): Promise<void> {
    this.#state = "closed";
    this.#stop.abort();
    this.#handshake.fail(new FlowcatError("closed", `${this.#cfg.provider}: closed by client`));
    this.#queue.close("closed by client");
    const ws = this.#ws;
    if (ws === undefined) return;
    await closeSocket(ws, this.#socketClosed, CLOSE_WAIT_MS);
  }

  /** Open a socket and run the session handshake with `update`; it becomes the current one. */
  async #dial(update: ClientEvent): Promise<void> {
    const p = this.#cfg.provider;
    // The server sends session.created at once: the message listener must be attached in the
    // very continuation of the open (no extra `.then` hop), or the event can be dispatched first.
    const ws = await openRealtimeSocket(this.#cfg.url, {
      headers: this.#cfg.headers,
      timeoutMs: this.#cfg.timeoutMs,
      provider: p,
    });
    this.#ws = ws;
    this.#socketClosed = new Promise((resolve) => {
      ws.addEventListener("close", (ev) => {
        this.#onSocketClose(ws, ev);
        resolve();
      }, { once: true });
    });
    // close() may have run while the socket was opening (TS cannot see that across the await).
    if ((this.#state as State) === "closed") {
      ws.close(1000);
      await this.#socketClosed;
      throw new FlowcatError("closed", `${p}: closed while connecting`);
    }
    ws.addEventListener("message", (ev) => this.#onMessage(ws, ev.data));
    await this.#handshake.run(update, (ev) => this.#send(ev), this.#cfg.timeoutMs);
  }

  /**
   * Replace a dropped session: a new one with the same instructions, tools and voice, seeded
   * with the conversation so far, then the caller audio no transcribed turn covers. Bounded
   * tries with backoff; after them the session ends as a drop always did.
   */
  async #reconnect(reason: string): Promise<void> {
    const p = this.#cfg.provider;
    const lastAt = this.#lastMessageAt || Date.now();
    const cut = this.#history.takeCutAnswer();
    if (this.#responses.active) this.#queue.push({ type: "turn_complete" });
    this.#responses.reset();
    const attempts = this.#cfg.reconnectAttempts;
    const out = await retryWithBackoff({
      attempts,
      backoffMs: this.#cfg.reconnectBackoffMs,
      signal: this.#stop.signal,
      what: `${p}: reconnect attempt`,
      log: this.#log,
    }, async () => {
      try {
        await this.#dial(
          sessionUpdateEvent(this.#cfg.protocol, sessionConfigFor(this.#cfg, this.#setup!)),
        );
      } catch (err) {
        try {
          this.#ws?.close(1000);
        } catch { /* already closing */ }
        throw err;
      }
    });
    if (this.#state !== "reconnecting") return;
    if (!out.ok) {
      this.#state = "closed";
      const why = "error" in out ? errorMessage(out.error) : "stopped";
      this.#queue.close(`${reason}; reconnect failed after ${attempts} attempts: ${why}`);
      return;
    }
    this.#state = "open";
    const replayedMs = this.#seed(cut);
    reportHandover(this.#log, {
      provider: p,
      reason,
      gapMs: Math.max(0, Date.now() - lastAt),
      replayedMs,
      reply: handoverReply(cut?.heard),
      resumed: true,
    });
  }

  /** Seed a new session; returns the ms of caller audio written again. */
  #seed(cut: CutAnswer | undefined): number {
    for (const ev of this.#history.seedEvents(this.#cfg.protocol)) this.#send(ev);
    if (cut !== undefined) {
      this.#send(userTextEvent(continueAnswerText(cut)));
      this.#responses.request();
    } else if (this.#respondAfterSeed) this.#responses.request();
    this.#respondAfterSeed = false;
    const { chunks, ms, missingMs } = this.#backlog.replay();
    if (missingMs > 0) {
      this.#log.warn(`${this.#cfg.provider}: the new session misses caller audio`, {
        missingMs: Math.round(missingMs),
      });
    }
    for (const audio of chunks) this.#send({ type: "input_audio_buffer.append", audio });
    return ms;
  }

  #notOpen(): FlowcatError {
    return new FlowcatError("closed", `${this.#cfg.provider}: session is not open`);
  }

  #send(ev: ClientEvent): boolean {
    const ws = this.#ws;
    if (ws === undefined || ws.readyState !== WebSocket.OPEN) return false;
    ws.send(JSON.stringify(ev));
    return true;
  }

  #onSocketClose(ws: WebSocket, ev: CloseEvent): void {
    if (ws !== this.#ws) return;
    const p = this.#cfg.provider;
    const reason = ev.reason
      ? `socket closed (${ev.code}: ${ev.reason.slice(0, 200)})`
      : ev.code === 0 || ev.code === 1006
      ? "socket dropped (no close frame)"
      : `socket closed (${ev.code})`;
    this.#handshake.fail(new FlowcatError("closed", `${p}: ${reason} during session setup`));
    if (this.#state === "reconnecting") return; // the reconnect loop sees the failed handshake
    if (this.#state === "open" && this.#cfg.reconnectAttempts > 0) {
      this.#state = "reconnecting";
      this.#log.warn(`${p}: connection lost; opening a new session`, { reason });
      void this.#reconnect(reason);
      return;
    }
    // The reason travels with the closed event: the call reports it once, as its end.
    if (this.#state !== "closed") this.#log.debug(`${p}: ${reason}`);
    this.#state = "closed";
    this.#queue.close(reason);
  }

  #onMessage(ws: WebSocket, data: unknown): void {
    if (ws !== this.#ws) return;
    this.#lastMessageAt = Date.now();
    const ev = parseServerEvent(data);
    if (ev === undefined) {
      this.#log.debug(`${this.#cfg.provider}: skipped a malformed server message`);
      return;
    }
    try {
      this.#dispatch(ev);
    } catch (err) {
      // A provider quirk must not end the call: skip the event.
      this.#log.warn(`${this.#cfg.provider}: could not handle a server event`, {
        type: ev.type,
        error: errorMessage(err),
      });
    }
  }

  #dispatch(ev: ServerEvent): void {
    const t = ev.type;
    if (this.#handshake.running) return this.#handshake.onEvent(ev);
    if (AUDIO_DELTA_EVENTS.has(t)) return this.#onAudioDelta(ev);
    if (BOT_TRANSCRIPT_DELTA_EVENTS.has(t)) {
      if (typeof ev.delta === "string") this.#history.answerPart(ev.delta);
      return this.#pushText("bot_text", ev.delta, false);
    }
    if (BOT_TRANSCRIPT_DONE_EVENTS.has(t)) {
      this.#history.answerDone(typeof ev.transcript === "string" ? ev.transcript : "");
      return this.#pushText("bot_text", ev.transcript, true);
    }
    switch (t) {
      case "input_audio_buffer.speech_started":
        return this.#onSpeechStarted();
      case "input_audio_buffer.committed":
        return this.#backlog.committed();
      case "conversation.item.input_audio_transcription.delta":
        return this.#pushText("user_text", ev.delta, false);
      case "conversation.item.input_audio_transcription.completed":
        if (typeof ev.transcript === "string") this.#history.userSaid(ev.transcript);
        this.#backlog.transcribed();
        return this.#pushText("user_text", ev.transcript, true);
      case "conversation.item.input_audio_transcription.failed":
        this.#backlog.transcribed();
        return this.#logError("input transcription failed", ev.error);
      case "response.created":
        return this.#responses.created();
      case "response.function_call_arguments.done":
        return this.#onToolCall(ev);
      case "response.done":
        return this.#onResponseDone(ev);
      case "error":
        return this.#logError("server error", ev.error);
    }
  }

  #pushText(type: "user_text" | "bot_text", text: unknown, final: boolean): void {
    if (typeof text !== "string" || (!final && text === "")) return;
    this.#queue.push({ type, text, final });
  }

  #onAudioDelta(ev: ServerEvent): void {
    const format = this.#cfg.audioFormat;
    const delta = audioDeltaOf(ev, format);
    if (delta === undefined) {
      this.#log.debug(`${this.#cfg.provider}: skipped an audio delta that is not base64 ${format}`);
      return;
    }
    const { pcm, itemId } = delta;
    if (pcm.length === 0) return;
    if (itemId !== undefined) this.#responses.audio(itemId, delta.contentIndex, pcm.length);
    this.#history.answerPart("");
    this.#queue.push({ type: "audio_out", audio: audioFrame(pcm, openAIFormatRate(format)) });
  }

  #onSpeechStarted(): void {
    this.#queue.push({ type: "interrupted" });
    this.#history.answerCut();
    // xAI has no `conversation.item.truncate`: its server cuts the answer itself.
    this.#responses.bargeIn(this.#cfg.serverInterrupt, this.#cfg.protocol !== "xai");
  }

  #onToolCall(ev: ServerEvent): void {
    const p = this.#cfg.provider;
    const call = functionCallOf(ev);
    if (call === undefined) {
      this.#log.warn(`${p}: skipped a function call without call_id or name`);
      return;
    }
    const { callId: id, name } = call;
    if (call.args === undefined) {
      this.#log.warn(`${p}: function call arguments are not a JSON object`, { name, callId: id });
    }
    this.#history.toolCall(id, name, call.args ?? {});
    this.#queue.push({ type: "tool_call", id, name, args: call.args ?? {} });
  }

  #onResponseDone(ev: ServerEvent): void {
    this.#history.responseDone();
    const usage = usageFromResponse(ev.response);
    if (usage !== undefined) this.#queue.push({ type: "usage", usage });
    this.#queue.push({ type: "turn_complete" });
    this.#responses.done();
  }

  #logError(what: string, error: unknown): void {
    const e = serverErrorInfo(error);
    this.#log.warn(`${this.#cfg.provider}: ${what}`, {
      code: e.code ?? null,
      errorType: e.type ?? null,
      message: e.message ?? null,
    });
  }
}

/** Factory for the registry: an {@link OpenAIRealtimeClient} on OpenAI's endpoint. */
export const createOpenAIRealtime: RealtimeFactory = (opts): RealtimeLlm =>
  new OpenAIRealtimeClient(opts);
