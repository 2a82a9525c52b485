/**
 * Ultravox realtime client: `POST /api/calls` (header `X-API-Key`) creates a call whose medium is
 * a server WebSocket; the answer's `joinUrl` is that socket. Caller audio goes out as binary
 * 16-bit PCM at 16 kHz, the model's comes back binary at 24 kHz; JSON data messages carry
 * transcripts, state, client tool invocations and `playback_clear_buffer` (barge-in). A call
 * cannot be rejoined: after a dropped socket a new call continues its conversation
 * (`priorCallId`), or with reconnects off the session ends with a `closed` event.
 * See docs/providers/ultravox.md.
 *
 * Permissions: `--allow-net=api.ultravox.ai:443` and the host of the join URL Ultravox returns.
 *
 * @example
 * ```ts
 * import { createUltravoxRealtime } from "@flowcat/flowcat/realtime/ultravox";
 * declare const key: string;
 * const llm = createUltravoxRealtime({ apiKey: key, voice: "Mark" });
 * await llm.connect({ systemPrompt: "Be brief.", tools: [] });
 * ```
 * @module
 */

import { Resampler } from "../../core/audio/resample.ts";
import { bytesToInt16, int16ToBytes } from "../../core/audio/pcm.ts";
import { errorMessage, FlowcatError } from "../../core/errors.ts";
import { type AudioFrame, audioFrame, type KeypadEntry, type ToolDecl } from "../../core/frames.ts";
import { type Logger, silentLogger } from "../../core/log.ts";
import type { RealtimeEvent, RealtimeLlm, RealtimeSetup } from "../../core/seams.ts";
import { providerFetch } from "../http.ts";
import { retryWithBackoff } from "../realtime/retry.ts";
import type { RealtimeFactory, RealtimeProviderOptions } from "../provider_types.ts";
import {
  closeSocket,
  dtmfUserText,
  messageText,
  openRealtimeSocket,
  RealtimeEventQueue,
} from "../realtime/_shared.ts";
import {
  createCallBody,
  parseUltravoxMessage,
  toolResultMessage,
  ULTRAVOX_API_URL,
  ULTRAVOX_DEFAULT_MODEL,
  ULTRAVOX_INPUT_RATE,
  ULTRAVOX_OUTPUT_RATE,
  type UltravoxMessage,
  ultravoxTools,
  userTextMessage,
} from "./realtime_wire.ts";

const P = "ultravox";
const CLOSE_WAIT_MS = 2000;

/** A {@link RealtimeLlm} on an Ultravox server-WebSocket call. */
export class UltravoxRealtime implements RealtimeLlm {
  readonly #key: string;
  readonly #api: string;
  readonly #model: string;
  readonly #voice: string | undefined;
  readonly #outputRate: number;
  readonly #timeoutMs: number;
  readonly #log: Logger;
  readonly #queue = new RealtimeEventQueue();
  #ws: WebSocket | undefined;
  #socketClosed: Promise<void> = Promise.resolve();
  #closed = false;
  #up: Resampler | undefined;
  /** Transcript so far of the utterance each side is speaking. */
  readonly #said = { user: "", agent: "" };
  /** The agent spoke since the last turn end. */
  #turnOpen = false;
  /** Invocations awaiting their result. */
  readonly #open = new Set<string>();
  /** New instructions and tools waiting for the next tool result, which opens the stage. */
  #stage: Record<string, unknown> | undefined;
  /** The prompt, tools and voice in force, for a replacement call. */
  #prompt = "";
  #tools: ToolDecl[] = [];
  #setupVoice: string | undefined;
  /** The joined call, for `priorCallId`. */
  #callId: string | undefined;
  readonly #reconnectAttempts: number;
  readonly #reconnectBackoffMs: number;
  readonly #stop = new AbortController();
  #stagePrompt = "";
  #stageTools: ToolDecl[] = [];
  /** `call_started` (or a first `state`) arrived: text turns may go out. */
  #started = false;
  readonly #heldText: string[] = [];

  /** Make a client from provider options (`apiKey` required; `url`: the API root). */
  constructor(opts: RealtimeProviderOptions) {
    if (!opts.apiKey) throw new FlowcatError("config", `${P}: missing API key`);
    this.#key = opts.apiKey;
    this.#api = (opts.url ?? ULTRAVOX_API_URL).replace(/\/+$/, "");
    this.#model = opts.model ?? ULTRAVOX_DEFAULT_MODEL;
    this.#voice = opts.voice;
    const o = opts.options ?? {};
    const rate = o.outputSampleRate ?? ULTRAVOX_OUTPUT_RATE;
    if (![8000, 16000, 24000, 48000].includes(rate as number)) {
      throw new FlowcatError("config", `${P}: options.outputSampleRate is invalid`);
    }
    this.#outputRate = rate as number;
    const timeout = o.timeoutMs ?? 10_000;
    if (typeof timeout !== "number" || !(timeout > 0)) {
      throw new FlowcatError("config", `${P}: options.timeoutMs is invalid`);
    }
    this.#timeoutMs = timeout;
    const attempts = o.reconnectAttempts ?? 3;
    if (!Number.isInteger(attempts) || (attempts as number) < 0) {
      throw new FlowcatError("config", `${P}: options.reconnectAttempts is invalid`);
    }
    this.#reconnectAttempts = attempts as number;
    const backoff = o.reconnectBackoffMs ?? 250;
    if (typeof backoff !== "number" || !(backoff > 0)) {
      throw new FlowcatError("config", `${P}: options.reconnectBackoffMs is invalid`);
    }
    this.#reconnectBackoffMs = backoff;
    this.#log = opts.logger ?? silentLogger;
  }

  /** Create the call, join its socket and, with `setup.kickoff`, have the agent answer it. */
  async connect(setup: RealtimeSetup): Promise<void> {
    if (this.#ws !== undefined || this.#closed) {
      throw new FlowcatError("other", `${P}: connect called twice`);
    }
    const kickoff = setup.kickoff !== undefined && setup.kickoff !== "";
    this.#prompt = setup.systemPrompt;
    this.#tools = [...setup.tools];
    this.#setupVoice = setup.voice;
    try {
      await this.#join(kickoff);
    } catch (err) {
      this.#closed = true;
      this.#queue.close("connect failed");
      throw err;
    }
    if (kickoff) this.#sendText(setup.kickoff!);
  }

  /** Caller audio, resampled to 16 kHz, as a binary message. Dropped before the call is joined. */
  sendAudio(audio: AudioFrame): void {
    if (this.#ws?.readyState !== WebSocket.OPEN) return;
    let pcm = audio.pcm;
    if (audio.sampleRate !== ULTRAVOX_INPUT_RATE) {
      if (this.#up?.inRate !== audio.sampleRate) {
        this.#up = new Resampler(audio.sampleRate, ULTRAVOX_INPUT_RATE);
      }
      pcm = this.#up.process(pcm);
    }
    if (pcm.length > 0) this.#ws.send(int16ToBytes(pcm).slice());
  }

  /**
   * New instructions and tools. Ultravox changes them by a new call stage, which a client tool
   * result opens: they go with the next tool result (a brain transition always follows a tool
   * call). With no call awaiting its result, the instructions are sent as a text turn and the
   * tools stay.
   */
  updateSystem(prompt: string, tools: ToolDecl[]): Promise<void> {
    if (this.#closed) return Promise.reject(new FlowcatError("closed", `${P}: session is closed`));
    if (this.#open.size > 0) {
      this.#stage = { systemPrompt: prompt, selectedTools: ultravoxTools(tools) };
      [this.#stagePrompt, this.#stageTools] = [prompt, [...tools]];
    } else {
      this.#log.warn(`${P}: new instructions without a pending tool call; tools unchanged`);
      this.#sendText(`<instruction>${prompt}</instruction>`);
    }
    return Promise.resolve();
  }

  /** Answer invocation `id` (opening the new stage when {@link updateSystem} left one). */
  sendToolResult(id: string, result: unknown): Promise<void> {
    if (this.#closed) return Promise.reject(new FlowcatError("closed", `${P}: session is closed`));
    if (!this.#open.has(id)) {
      // A call of a dropped call (the new one never asked) or an unknown id: nobody to answer.
      this.#log.warn(`${P}: no open tool call with this id; result dropped`, { id });
      return Promise.resolve();
    }
    const text = typeof result === "string" ? result : JSON.stringify(result ?? {}) ?? "null";
    // `toolResultText` keeps the tool's own result in the history the new stage inherits.
    const stage = this.#stage === undefined ? undefined : { ...this.#stage, toolResultText: text };
    if (stage !== undefined) [this.#prompt, this.#tools] = [this.#stagePrompt, this.#stageTools];
    this.#stage = undefined;
    this.#open.delete(id);
    this.#sendJson(toolResultMessage(id, text, stage));
    return Promise.resolve();
  }

  /** A keypad press, as a text turn the agent answers ({@link dtmfUserText}). */
  sendDtmf(key: KeypadEntry): void {
    this.#sendText(dtmfUserText(key));
  }

  /** Next event; `undefined` after the `closed` event. */
  nextEvent(): Promise<RealtimeEvent | undefined> {
    return this.#queue.next();
  }

  /** Push mode: every event to `deliver` as it arrives, `undefined` once closed. */
  listen(deliver: (ev: RealtimeEvent | undefined) => void): void {
    this.#queue.listen(deliver);
  }

  /** Leave the call (closing the socket ends it); idempotent. */
  async close(): Promise<void> {
    if (this.#closed && this.#ws === undefined) return;
    this.#closed = true;
    this.#stop.abort();
    this.#queue.close("closed by client");
    const ws = this.#ws;
    if (ws === undefined) return;
    await closeSocket(ws, this.#socketClosed, CLOSE_WAIT_MS);
  }

  /**
   * Create a call with the prompt and tools in force (continuing the last one's conversation
   * when there was one: `priorCallId`) and join its socket.
   */
  async #join(agentFirst: boolean): Promise<void> {
    const prior = this.#callId === undefined
      ? ""
      : `?priorCallId=${encodeURIComponent(this.#callId)}`;
    const res = await providerFetch(P, `${this.#api}/calls${prior}`, {
      method: "POST",
      headers: { "X-API-Key": this.#key, "Content-Type": "application/json" },
      body: JSON.stringify(createCallBody({
        systemPrompt: this.#prompt,
        model: this.#model,
        voice: this.#voice ?? this.#setupVoice,
        tools: this.#tools,
        inputSampleRate: ULTRAVOX_INPUT_RATE,
        outputSampleRate: this.#outputRate,
        agentFirst,
      })),
    }, { timeoutMs: this.#timeoutMs, retries: 0 });
    const call = await res.json() as { joinUrl?: unknown; callId?: unknown };
    if (typeof call.joinUrl !== "string") {
      throw new FlowcatError("protocol", `${P}: the created call has no joinUrl`);
    }
    const url = new URL(call.joinUrl);
    url.searchParams.set("apiVersion", "1");
    const ws = await openRealtimeSocket(url.href, { provider: P, timeoutMs: this.#timeoutMs });
    if (this.#closed) {
      ws.close(1000); // close() ran while the call was being joined
      throw new FlowcatError("closed", `${P}: closed while joining`);
    }
    this.#callId = typeof call.callId === "string" ? call.callId : undefined;
    this.#started = false;
    this.#attach(ws);
    this.#log.info(`${P}: call joined`, { callId: this.#callId ?? "", model: this.#model });
  }

  /**
   * The socket dropped: its call is over. A new call continuing its conversation replaces it
   * (bounded tries with backoff); after them, or with reconnects off, the session ends.
   */
  async #rejoin(reason: string): Promise<void> {
    if (this.#turnOpen) this.#queue.push({ type: "turn_complete" });
    this.#turnOpen = false;
    if (this.#open.size > 0) {
      this.#log.warn(`${P}: tool calls of the dropped call go unanswered`, { n: this.#open.size });
    }
    this.#open.clear();
    this.#stage = undefined;
    const out = await retryWithBackoff({
      attempts: this.#reconnectAttempts,
      backoffMs: this.#reconnectBackoffMs,
      signal: this.#stop.signal,
      what: `${P}: rejoin attempt`,
      log: this.#log,
    }, () => this.#join(false));
    if (this.#closed) return;
    if (!out.ok) {
      this.#closed = true;
      const why = "error" in out ? errorMessage(out.error) : "stopped";
      this.#queue.close(`${reason}; no new call after ${this.#reconnectAttempts} attempts: ${why}`);
    }
  }

  #attach(ws: WebSocket): void {
    this.#ws = ws;
    this.#socketClosed = new Promise((resolve) => {
      ws.addEventListener("close", (ev) => {
        if (!this.#closed && ws === this.#ws) {
          const reason = ev.reason
            ? `socket closed (${ev.code}: ${ev.reason.slice(0, 200)})`
            : ev.code === 0 || ev.code === 1006
            ? "socket dropped (no close frame)"
            : `socket closed (${ev.code})`;
          if (this.#reconnectAttempts > 0 && this.#callId !== undefined) {
            this.#log.warn(`${P}: connection lost; continuing in a new call`, { reason });
            void this.#rejoin(reason);
          } else {
            this.#closed = true;
            this.#queue.close(reason);
          }
        }
        resolve();
      }, { once: true });
    });
    ws.addEventListener("message", (ev) => {
      try {
        this.#onMessage(ev.data);
      } catch (err) {
        this.#log.warn(`${P}: could not handle a server message`, { error: errorMessage(err) });
      }
    });
  }

  /** A text turn; held until the call has started (the server drops earlier ones). */
  #sendText(text: string): void {
    if (this.#started) this.#sendJson(userTextMessage(text));
    else this.#heldText.push(text);
  }

  #sendJson(msg: Record<string, unknown>): void {
    if (this.#ws?.readyState === WebSocket.OPEN) this.#ws.send(JSON.stringify(msg));
  }

  #onMessage(data: unknown): void {
    if (data instanceof ArrayBuffer) {
      if (data.byteLength < 2) return;
      const pcm = bytesToInt16(new Uint8Array(data, 0, data.byteLength & ~1));
      this.#turnOpen = true;
      this.#queue.push({ type: "audio_out", audio: audioFrame(pcm, this.#outputRate) });
      return;
    }
    const text = messageText(data);
    const msg = text === undefined ? undefined : parseUltravoxMessage(text);
    if (msg === undefined) {
      this.#log.debug(`${P}: skipped a malformed server message`);
      return;
    }
    this.#dispatch(msg);
  }

  #dispatch(msg: UltravoxMessage): void {
    if (!this.#started && (msg.type === "call_started" || msg.type === "state")) {
      this.#started = true;
      for (const text of this.#heldText.splice(0)) this.#sendJson(userTextMessage(text));
    }
    switch (msg.type) {
      case "transcript":
        return this.#onTranscript(msg.role, msg.text, msg.delta, msg.final);
      case "playback_clear_buffer":
        return this.#queue.push({ type: "interrupted" });
      case "client_tool_invocation":
        this.#open.add(msg.invocationId);
        this.#turnOpen = true;
        return this.#queue.push({
          type: "tool_call",
          id: msg.invocationId,
          name: msg.toolName,
          args: msg.parameters,
        });
      case "state":
        if (msg.state === "listening" && this.#turnOpen) {
          this.#turnOpen = false;
          this.#queue.push({ type: "turn_complete" });
        }
        return;
    }
  }

  #onTranscript(role: "user" | "agent", text?: string, delta?: string, final = false): void {
    const type = role === "user" ? "user_text" : "bot_text";
    const before = this.#said[role];
    // `text` is the utterance so far, `delta` what it grew by.
    const now = text ?? before + (delta ?? "");
    if (role === "agent") this.#turnOpen = true;
    if (final) {
      this.#said[role] = "";
      if (now !== "") this.#queue.push({ type, text: now, final: true });
      return;
    }
    this.#said[role] = now;
    if (now.startsWith(before) && now.length > before.length) {
      this.#queue.push({ type, text: now.slice(before.length), final: false });
    }
  }
}

/**
 * Registry factory. Options: `outputSampleRate` (8000, 16000, 24000 or 48000; default 24000),
 * `timeoutMs` (call creation and socket, each; default 10000), `reconnectAttempts` (new calls
 * tried after a drop; default 3, 0: the session ends), `reconnectBackoffMs` (default 250).
 */
export const createUltravoxRealtime: RealtimeFactory = (opts): RealtimeLlm =>
  new UltravoxRealtime(opts);
