/**
 * Gemini Live (BidiGenerateContent) realtime client: one WebSocket session per call, with
 * session-resumption reconnects on `goAway`, on a dropped socket and on `updateSystem`.
 * Message building/parsing lives in gemini_wire.ts / gemini_parse.ts; the design and its
 * trade-offs are in docs/realtime.md.
 *
 * @example
 * ```ts
 * import { createGeminiLive } from "@flowcat/flowcat/realtime/gemini";
 * const llm = createGeminiLive({ apiKey: "..." });
 * await llm.connect({ systemPrompt: "You are a phone agent.", tools: [], kickoff: "Greet." });
 * ```
 * @module
 */

import { errorMessage, FlowcatError } from "../../core/errors.ts";
import { type Logger, silentLogger } from "../../core/log.ts";
import type { AudioChunk, KeypadEntry } from "../../core/frames.ts";
import type { RealtimeEvent, RealtimeLlm, RealtimeSetup, ToolDecl } from "../../core/seams.ts";
import type { RealtimeFactory } from "../provider_types.ts";
import { dtmfUserText, messageText, RealtimeEventQueue } from "./_shared.ts";
import { DEFAULT_VOICES } from "./env.ts";
import { parseGeminiServerMessage } from "./gemini_parse.ts";
import { OutboundBuffer } from "./gemini_outbox.ts";
import { abortableDelay, SocketPool } from "./gemini_sockets.ts";
import { GeminiTurnTracker } from "./gemini_turns.ts";
import {
  GEMINI_DEFAULT_MODEL,
  GEMINI_LIVE_URL,
  geminiAudioMessage,
  geminiLiveUrl,
  geminiSetupMessage,
  geminiToolResponseMessage,
  geminiUserTurnMessage,
} from "./gemini_wire.ts";

/** Options of {@link GeminiLiveClient}. */
export interface GeminiLiveOptions {
  /** Gemini API key; sent only in the URL query, never logged. */
  apiKey: string;
  /** Endpoint override (tests, proxies); `?key=` is appended. */
  url?: string;
  /** Model name (default {@link GEMINI_DEFAULT_MODEL}); `models/` is added when missing. */
  model?: string;
  /** Voice; wins over `RealtimeSetup.voice`. Default Fenrir. */
  voice?: string;
  /** BCP-47 speech language for `speechConfig.languageCode`. */
  languageCode?: string;
  /** Logger for connection and protocol events (default silent). */
  logger?: Logger;
  /** WebSocket open deadline (default 10 s). */
  connectTimeoutMs?: number;
  /** Deadline for `setupComplete` after `setup` was sent (default 10 s). */
  setupTimeoutMs?: number;
  /** Reconnect tries after `goAway`, a dropped socket or `updateSystem` (default 3). */
  reconnectAttempts?: number;
  /** Wait before the second try; doubles for each further one (default 250 ms). */
  reconnectBackoffMs?: number;
  /** Caller audio kept while no session is ready; oldest dropped beyond this (default 2 s). */
  audioBufferMs?: number;
}

/** How long before a `goAway` deadline the client moves even when the model is mid-answer. */
const GOAWAY_MARGIN_MS = 1000;

/** How long close() waits for the server to acknowledge the WebSocket close. */
const CLOSE_WAIT_MS = 2000;

interface Connection {
  ws: WebSocket;
  /** setupComplete arrived and this is (or was) the active connection. */
  ready: boolean;
  /** Closed on purpose or already gone: its events and its close are ignored. */
  retired: boolean;
  setupWaiter?: { resolve(): void; reject(err: Error): void };
}

/** Gemini Live speech-to-speech client implementing the {@link RealtimeLlm} seam. */
export class GeminiLiveClient implements RealtimeLlm {
  readonly #opts: Required<Omit<GeminiLiveOptions, "voice" | "languageCode" | "logger" | "url">>;
  readonly #voice: string | undefined;
  readonly #languageCode: string | undefined;
  readonly #url: string;
  readonly #log: Logger;
  readonly #events = new RealtimeEventQueue();
  readonly #outbox: OutboundBuffer;
  readonly #stop = new AbortController();
  #setup: RealtimeSetup | undefined;
  #conn: Connection | undefined;
  #connecting: Promise<void> | undefined;
  #switching: Promise<void> | undefined;
  #handle: string | undefined;
  readonly #turns = new GeminiTurnTracker();
  #goAwayFrom: Connection | undefined;
  #goAwayTimer: ReturnType<typeof setTimeout> | undefined;
  readonly #sockets = new SocketPool();
  #shutdown: Promise<void> | undefined;
  #monoWarned = false;

  /** A client; nothing is dialled before {@link GeminiLiveClient.connect}. */
  constructor(opts: GeminiLiveOptions) {
    if (!opts.apiKey) throw new FlowcatError("config", "gemini: missing API key");
    this.#opts = {
      apiKey: opts.apiKey,
      model: opts.model || GEMINI_DEFAULT_MODEL,
      connectTimeoutMs: opts.connectTimeoutMs ?? 10_000,
      setupTimeoutMs: opts.setupTimeoutMs ?? 10_000,
      reconnectAttempts: Math.max(1, opts.reconnectAttempts ?? 3),
      reconnectBackoffMs: opts.reconnectBackoffMs ?? 250,
      audioBufferMs: opts.audioBufferMs ?? 2000,
    };
    this.#voice = opts.voice || undefined;
    this.#languageCode = opts.languageCode;
    this.#url = geminiLiveUrl(opts.url ?? GEMINI_LIVE_URL, opts.apiKey);
    this.#log = opts.logger ?? silentLogger;
    this.#outbox = new OutboundBuffer(
      this.#opts.audioBufferMs,
      (ms) =>
        this.#log.warn("gemini: no session ready; dropping the oldest buffered caller audio", {
          bufferMs: ms,
        }),
    );
  }

  /** Open the session: send `setup`, wait for `setupComplete`, then the kickoff turn. */
  connect(setup: RealtimeSetup): Promise<void> {
    if (this.#shutdown) return Promise.reject(this.#closedError("connect"));
    if (this.#setup) {
      return Promise.reject(new FlowcatError("protocol", "gemini: already connected"));
    }
    this.#setup = { ...setup, tools: [...setup.tools] };
    this.#connecting = (async () => {
      try {
        const conn = await this.#openSession(undefined);
        this.#activate(conn, setup.kickoff);
      } catch (err) {
        await this.#close(`gemini: connect failed: ${errorMessage(err)}`);
        throw err;
      }
    })();
    return this.#connecting;
  }

  /** Stream caller PCM (16 kHz expected; the rate travels in the mimeType). */
  sendAudio(audio: AudioChunk): void {
    if (this.#shutdown) return;
    let pcm = audio.pcm;
    if (audio.numChannels > 1) {
      if (!this.#monoWarned) this.#log.warn("gemini: multi-channel audio; sending channel 0");
      this.#monoWarned = true;
      pcm = pcm.filter((_: number, i: number) => i % audio.numChannels === 0);
    }
    const ms = (pcm.length / audio.sampleRate) * 1000;
    this.#outbox.push(geminiAudioMessage(pcm, audio.sampleRate), ms);
    this.#flush();
  }

  /**
   * Change the system prompt and tools. A running Gemini session cannot, so this reconnects
   * with a new `setup` that carries the latest resumption handle (docs/realtime.md).
   */
  async updateSystem(prompt: string, tools: ToolDecl[]): Promise<void> {
    if (this.#shutdown) throw this.#closedError("updateSystem");
    if (!this.#setup) throw new FlowcatError("protocol", "gemini: updateSystem before connect");
    await this.#connecting;
    while (this.#switching) await this.#switching;
    this.#setup = { ...this.#setup, systemPrompt: prompt, tools: [...tools] };
    await this.#reconnect("system prompt and tools changed");
    if (this.#events.closed) throw this.#closedError("updateSystem");
  }

  /** Answer a tool call; dropped when the model cancelled that call. */
  sendToolResult(id: string, result: unknown): Promise<void> {
    if (this.#shutdown) return Promise.resolve();
    const call = this.#turns.takeToolCall(id);
    if (call.kind === "cancelled") {
      this.#log.debug("gemini: tool call was cancelled; result dropped", { id });
      return Promise.resolve();
    }
    if (call.kind === "unknown") {
      this.#log.warn("gemini: result for an unknown or superseded tool call dropped", { id });
      return Promise.resolve();
    }
    this.#outbox.push(geminiToolResponseMessage(id, call.name, result));
    this.#flush();
    return Promise.resolve();
  }

  /** A keypad press, as a user turn the model answers now ({@link dtmfUserText}). */
  sendDtmf(key: KeypadEntry): void {
    if (this.#shutdown) return;
    this.#outbox.push(geminiUserTurnMessage(dtmfUserText(key)));
    this.#flush();
  }

  /** Next event; `undefined` after the `closed` event. */
  nextEvent(): Promise<RealtimeEvent | undefined> {
    return this.#events.next();
  }

  /** Push mode: every event to `deliver` as it arrives, `undefined` once closed. */
  listen(deliver: (ev: RealtimeEvent | undefined) => void): void {
    this.#events.listen(deliver);
  }

  /** End the session; idempotent. */
  close(): Promise<void> {
    return this.#close(undefined);
  }

  // ------------------------------------------------------------------ connections

  async #openSession(handle: string | undefined): Promise<Connection> {
    const setup = this.#setup!;
    const ws = await this.#sockets.open(this.#url, {
      provider: "gemini",
      timeoutMs: this.#opts.connectTimeoutMs,
    });
    const conn: Connection = { ws, ready: false, retired: false };
    if (this.#shutdown) {
      conn.retired = true;
      ws.close(1000);
      throw this.#closedError("connect");
    }
    const done = new Promise<void>((resolve, reject) => (conn.setupWaiter = { resolve, reject }));
    ws.addEventListener("message", (e) => this.#onMessage(conn, e.data));
    ws.addEventListener("close", (e) => this.#onSocketClose(conn, e.code, e.reason));
    ws.send(JSON.stringify(geminiSetupMessage({
      model: this.#opts.model,
      voice: this.#voice ?? setup.voice ?? DEFAULT_VOICES.gemini,
      systemPrompt: setup.systemPrompt,
      tools: setup.tools,
      vad: setup.vad,
      handle,
      languageCode: this.#languageCode,
    })));
    const timer = setTimeout(() => {
      conn.setupWaiter?.reject(
        new FlowcatError(
          "timeout",
          `gemini: no setupComplete within ${this.#opts.setupTimeoutMs} ms`,
        ),
      );
    }, this.#opts.setupTimeoutMs);
    try {
      await done;
    } catch (err) {
      this.#retire(conn);
      throw err;
    } finally {
      clearTimeout(timer);
      conn.setupWaiter = undefined;
    }
    return conn;
  }

  #activate(conn: Connection, kickoff: string | undefined): void {
    conn.ready = true;
    this.#conn = conn;
    // The kickoff goes first so the model speaks before answering buffered caller audio.
    if (kickoff) this.#outbox.unshift(geminiUserTurnMessage(kickoff));
    this.#flush();
  }

  #flush(): void {
    const ws = this.#conn?.ws;
    if (!ws || this.#switching) return;
    this.#outbox.drain((text) => {
      if (ws.readyState !== WebSocket.OPEN) return false;
      ws.send(text);
      return true;
    });
  }

  /** Close a connection on purpose (its close then triggers nothing). */
  #retire(conn: Connection): void {
    if (conn.retired) return;
    conn.retired = true;
    if (this.#conn === conn) this.#conn = undefined;
    if (this.#goAwayFrom === conn) this.#clearGoAway();
    try {
      conn.ws.close(1000);
    } catch { /* already closing */ }
  }

  #onSocketClose(conn: Connection, code: number, reason: string): void {
    const why = `socket closed (code ${code}${reason ? `: ${reason.slice(0, 200)}` : ""})`;
    conn.setupWaiter?.reject(new FlowcatError("closed", `gemini: setup refused: ${why}`));
    if (conn.retired) return;
    conn.retired = true;
    if (this.#conn !== conn) return;
    this.#conn = undefined;
    if (this.#goAwayFrom === conn) this.#clearGoAway();
    if (this.#shutdown) return;
    this.#log.warn("gemini: connection lost; resuming the session", { code });
    void this.#reconnect(why);
  }

  /** Reconnect once at a time; callers that arrive meanwhile share the attempt. */
  #reconnect(why: string): Promise<void> {
    this.#switching ??= this.#switchSession(why).finally(() => {
      this.#switching = undefined;
      this.#flush();
    });
    return this.#switching;
  }

  async #switchSession(why: string): Promise<void> {
    if (this.#conn) this.#retire(this.#conn);
    for (const ev of this.#turns.cutTurn()) this.#events.push(ev);
    const attempts = this.#opts.reconnectAttempts;
    let lastError: unknown;
    for (let i = 0; i < attempts; i++) {
      const delayMs = i === 0 ? 0 : this.#opts.reconnectBackoffMs * 2 ** (i - 1);
      if (delayMs > 0 && !(await abortableDelay(delayMs, this.#stop.signal))) return;
      if (this.#shutdown) return;
      // The last try starts afresh: a stale or refused handle must not end the call.
      const handle = i > 0 && i === attempts - 1 ? undefined : this.#handle;
      try {
        const conn = await this.#openSession(handle);
        if (handle === undefined) this.#forgetSession();
        this.#log.info("gemini: session switched", { why, resumed: handle !== undefined });
        this.#activate(conn, undefined);
        return;
      } catch (err) {
        lastError = err;
        this.#log.warn("gemini: reconnect attempt failed", {
          attempt: i + 1,
          error: errorMessage(err),
        });
      }
    }
    await this.#close(
      `gemini: reconnect failed after ${attempts} attempts (${why}): ${errorMessage(lastError)}`,
    );
  }

  /** A fresh session knows nothing of the old one: its pending calls can't be answered. */
  #forgetSession(): void {
    this.#log.warn(
      this.#handle === undefined
        ? "gemini: no resumption handle yet; the new session starts without history"
        : "gemini: resumption failed; the new session starts without history",
    );
    this.#handle = undefined;
    this.#turns.forgetCalls();
    const dropped = this.#outbox.dropControl();
    if (dropped > 0) this.#log.warn("gemini: dropped tool results of the old session", { dropped });
  }

  #close(reason: string | undefined): Promise<void> {
    this.#shutdown ??= (async () => {
      this.#stop.abort();
      this.#clearGoAway();
      if (this.#conn) this.#retire(this.#conn);
      this.#events.close(reason);
      // The reason travels with the closed event: the call reports it once, as its end.
      if (reason) this.#log.debug(reason);
      await this.#sockets.closeAll(CLOSE_WAIT_MS);
    })();
    return this.#shutdown;
  }

  #closedError(what: string): FlowcatError {
    return new FlowcatError("closed", `gemini: ${what} after the session closed`);
  }

  // ------------------------------------------------------------------ server messages

  #onMessage(conn: Connection, data: unknown): void {
    if (conn.retired) return;
    const text = messageText(data);
    const msg = text === undefined ? undefined : parseGeminiServerMessage(text);
    if (msg === undefined) {
      this.#log.warn("gemini: skipped a server message that is not a JSON object", {
        chars: text?.length,
      });
      return;
    }
    if (msg.skipped.length > 0) this.#log.debug("gemini: skipped fields", { fields: msg.skipped });
    if (msg.setupComplete) conn.setupWaiter?.resolve();
    if (msg.modelText) {
      this.#log.debug("gemini: text part ignored", { chars: msg.modelText.length });
    }
    for (const ev of this.#turns.apply(msg)) this.#events.push(ev);
    if (msg.turnComplete && this.#goAwayFrom) void this.#reconnect("goAway at turn end");
    if (msg.resumption?.handle !== undefined) this.#handle = msg.resumption.handle;
    if (msg.goAway) this.#onGoAway(conn, msg.goAway.timeLeftMs);
  }

  /** Move now, or after the answer being spoken when the server leaves time for it. */
  #onGoAway(conn: Connection, timeLeftMs: number | undefined): void {
    if (this.#goAwayFrom || this.#conn !== conn) return;
    this.#log.info("gemini: goAway received", { timeLeftMs });
    if (this.#turns.modelTurnOpen && timeLeftMs !== undefined && timeLeftMs > GOAWAY_MARGIN_MS) {
      this.#goAwayFrom = conn;
      this.#goAwayTimer = setTimeout(
        () => void this.#reconnect("goAway deadline"),
        timeLeftMs - GOAWAY_MARGIN_MS,
      );
      return;
    }
    void this.#reconnect("goAway");
  }

  #clearGoAway(): void {
    clearTimeout(this.#goAwayTimer);
    this.#goAwayTimer = undefined;
    this.#goAwayFrom = undefined;
  }
}

/** Registry factory: a {@link GeminiLiveClient} from the server's provider options. */
export const createGeminiLive: RealtimeFactory = (opts): RealtimeLlm => {
  if (!opts.apiKey) throw new FlowcatError("config", "gemini: missing API key");
  const o = opts.options ?? {};
  const num = (k: string): number | undefined => {
    const v = o[k];
    if (v === undefined) return undefined;
    if (typeof v === "number" && Number.isFinite(v) && v >= 0) return v;
    opts.logger?.warn(`gemini: options.${k} is not a non-negative number; using the default`);
    return undefined;
  };
  return new GeminiLiveClient({
    apiKey: opts.apiKey,
    url: opts.url,
    model: opts.model,
    voice: opts.voice,
    logger: opts.logger,
    languageCode: typeof o.languageCode === "string" ? o.languageCode : undefined,
    connectTimeoutMs: num("connectTimeoutMs"),
    setupTimeoutMs: num("setupTimeoutMs"),
    reconnectAttempts: num("reconnectAttempts"),
    reconnectBackoffMs: num("reconnectBackoffMs"),
    audioBufferMs: num("audioBufferMs"),
  });
};
