// Over 400 lines: one session class; the handover state its helper modules share.
/**
 * Gemini Live (BidiGenerateContent) realtime client: one WebSocket session per call, handed over
 * to a resumed connection on `goAway`, on a dropped socket and on `updateSystem` without losing
 * caller audio. Message building/parsing lives in gemini_wire.ts / gemini_parse.ts; the design,
 * its guarantees and its trade-offs are in docs/realtime.md.
 *
 * Permissions: `--allow-net=generativelanguage.googleapis.com:443` (or the `url` given).
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
import type { AudioFrame, KeypadEntry } from "../../core/frames.ts";
import type { RealtimeEvent, RealtimeLlm, RealtimeSetup, ToolDecl } from "../../core/seams.ts";
import type { RealtimeFactory } from "../provider_types.ts";
import { dtmfUserText, RealtimeEventQueue } from "../realtime/_shared.ts";
import { DEFAULT_VOICES } from "../realtime/env.ts";
import type { GeminiServerMessage } from "./gemini_live_parse.ts";
import { OutboundLog } from "./gemini_live_outbox.ts";
import {
  type GeminiConnection,
  openGeminiConnection,
  retireConnection,
} from "./gemini_live_session.ts";
import { SocketPool } from "./gemini_live_sockets.ts";
import { retryWithBackoff } from "../realtime/retry.ts";
import { StandbySlot } from "./gemini_live_standby.ts";
import { GeminiTurnTracker } from "./gemini_live_turns.ts";
import {
  GEMINI_LIVE_URL,
  geminiAudioMessage,
  geminiLiveUrl,
  geminiModelTurnsMessage,
  geminiResumeReplyMessage,
  geminiToolResponseMessage,
  geminiUserTurnMessage,
} from "./gemini_live_wire.ts";
import { handoverReply, reportHandover } from "../../core/handover.ts";
import {
  type GeminiLiveOptions,
  geminiOptionsFrom,
  type ResolvedGeminiOptions,
  resolveGeminiOptions,
} from "./gemini_live_options.ts";

export type { GeminiLiveOptions } from "./gemini_live_options.ts";

/** How long after a `goAway` deadline the client gives up on a server that did not close. */
const DEADLINE_GRACE_MS = 500;

/** The reason of an `updateSystem` switch: an answer it cuts is not resumed. */
const SYSTEM_CHANGED = "system prompt and tools changed";

/** How long close() waits for the server to acknowledge the WebSocket close. */
const CLOSE_WAIT_MS = 2000;

/** Gemini Live speech-to-speech client implementing the {@link RealtimeLlm} seam. */
export class GeminiLiveClient implements RealtimeLlm {
  readonly #opts: ResolvedGeminiOptions;
  readonly #voice: string | undefined;
  readonly #languageCode: string | undefined;
  readonly #url: string;
  readonly #log: Logger;
  readonly #events = new RealtimeEventQueue();
  readonly #outbox: OutboundLog;
  readonly #stop = new AbortController();
  readonly #turns = new GeminiTurnTracker();
  readonly #sockets = new SocketPool();
  #setup: RealtimeSetup | undefined;
  /** The live connection; undefined during a switch. */
  #conn: GeminiConnection | undefined;
  /** The connection that was live last (for the handover gap). */
  #lastLive: GeminiConnection | undefined;
  #connecting: Promise<void> | undefined;
  #switching: Promise<void> | undefined;
  /** Freshest resumption handle of the conversation. */
  #handle: string | undefined;
  /** The model said or did something the freshest handle does not cover yet. */
  #handleStale = false;
  /** Final transcripts of answers given after the freshest handle. */
  #uncoveredAnswers: string[] = [];
  #goAway: { from: GeminiConnection; timer: ReturnType<typeof setTimeout> } | undefined;
  readonly #standby = new StandbySlot();
  #shutdown: Promise<void> | undefined;
  #monoWarned = false;

  /** A client; nothing is dialled before {@link GeminiLiveClient.connect}. */
  constructor(opts: GeminiLiveOptions) {
    if (!opts.apiKey) throw new FlowcatError("config", "gemini: missing API key");
    this.#opts = resolveGeminiOptions(opts);
    this.#voice = opts.voice || undefined;
    this.#languageCode = opts.languageCode;
    this.#url = geminiLiveUrl(opts.url ?? GEMINI_LIVE_URL, opts.apiKey);
    this.#log = opts.logger ?? silentLogger;
    this.#outbox = new OutboundLog(
      this.#opts.audioBufferMs,
      (ms) =>
        this.#log.warn("gemini: handover buffer full; dropping the oldest caller audio", {
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
        const conn = await this.#open(undefined);
        if (setup.kickoff) this.#outbox.unshift(geminiUserTurnMessage(setup.kickoff));
        this.#goLive(conn, undefined);
      } catch (err) {
        await this.#close(`gemini: connect failed: ${errorMessage(err)}`);
        throw err;
      }
    })();
    return this.#connecting;
  }

  /** Stream caller PCM (16 kHz expected; the rate travels in the mimeType). */
  sendAudio(audio: AudioFrame): void {
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
    this.#standby.drop();
    await this.#move(SYSTEM_CHANGED);
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
    this.#outbox.push(geminiUserTurnMessage(dtmfUserText(key)), undefined, true);
    this.#flush();
  }

  // nextEvent, listen and close delegate as in every RealtimeLlm (openai_realtime.ts, echo.ts).
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

  #open(handle: string | undefined): Promise<GeminiConnection> {
    const setup = this.#setup!;
    return openGeminiConnection({
      url: this.#url,
      sockets: this.#sockets,
      connectTimeoutMs: this.#opts.connectTimeoutMs,
      setupTimeoutMs: this.#opts.setupTimeoutMs,
      setup: {
        model: this.#opts.model,
        voice: this.#voice ?? setup.voice ?? DEFAULT_VOICES.gemini,
        systemPrompt: setup.systemPrompt,
        tools: setup.tools,
        vad: setup.vad,
        handle,
        languageCode: this.#languageCode,
      },
      onMessage: (conn, msg, chars) => this.#onMessage(conn, msg, chars),
      onClose: (conn, code, reason) => this.#onSocketClose(conn, code, reason),
      stopped: () => this.#shutdown !== undefined,
    });
  }

  /**
   * Make `conn` the live connection: write again what its handle does not cover, then what
   * waited, then (after a cut answer) the request to go on; then read what it sent meanwhile.
   */
  #goLive(conn: GeminiConnection, heard: string | undefined): { replayedMs: number } {
    conn.live = true;
    this.#conn = conn;
    this.#lastLive = conn;
    this.#handleStale = false;
    const write = (text: string) => this.#write(conn, text);
    const { replayedMs, missingMs } = this.#outbox.resend(conn.handle, write);
    if (conn.handle !== undefined && this.#uncoveredAnswers.length > 0) {
      write(geminiModelTurnsMessage(this.#uncoveredAnswers));
    } else this.#uncoveredAnswers = [];
    if (heard !== undefined) {
      this.#outbox.push(geminiResumeReplyMessage(heard), undefined, true);
      this.#outbox.drain(write);
    }
    if (missingMs > 0) {
      this.#log.warn("gemini: the resumed session misses caller audio beyond audioBufferMs", {
        missingMs: Math.round(missingMs),
      });
    }
    // A handle sent before the replay does not cover it; the resumed handle still does.
    for (const msg of conn.early.splice(0)) {
      this.#apply(conn, { ...msg, resumption: undefined });
    }
    return { replayedMs };
  }

  #write(conn: GeminiConnection, text: string): boolean {
    if (conn.ws.readyState !== WebSocket.OPEN) return false;
    conn.ws.send(text);
    return true;
  }

  #flush(): void {
    const conn = this.#conn;
    if (!conn || this.#switching) return;
    this.#outbox.drain((text) => this.#write(conn, text));
  }

  #retire(conn: GeminiConnection): void {
    retireConnection(conn);
    if (this.#conn === conn) this.#conn = undefined;
  }

  #onSocketClose(conn: GeminiConnection, code: number, reason: string): void {
    if (conn.retired) return;
    conn.retired = true;
    if (this.#standby.holds(conn)) this.#standby.fail();
    if (this.#conn !== conn || this.#shutdown) return;
    this.#conn = undefined;
    // Deno reports a TCP close without a close frame as code 0 (browsers say 1006).
    const why = this.#goAway?.from === conn
      ? "goAway deadline"
      : code === 0 || code === 1006
      ? "socket dropped (no close frame)"
      : `socket closed (code ${code}${reason ? `: ${reason.slice(0, 200)}` : ""})`;
    if (this.#goAway?.from !== conn) this.#log.warn("gemini: connection lost", { code });
    void this.#move(why);
  }

  /** Switch to a new connection, once at a time; callers meanwhile share the attempt. */
  #move(why: string): Promise<void> {
    this.#switching ??= this.#switchSession(why).finally(() => {
      this.#switching = undefined;
      this.#flush();
    });
    return this.#switching;
  }

  async #switchSession(why: string): Promise<void> {
    // The gap starts when the old connection stopped serving: now if it still was (a switch
    // on purpose), else at its last message (a drop or the goAway deadline).
    const lastAt = this.#conn ? Date.now() : this.#lastLive?.lastMessageAt || Date.now();
    if (this.#conn) this.#retire(this.#conn);
    this.#clearGoAway();
    const heard = why === SYSTEM_CHANGED ? undefined : this.#turns.spokenSoFar;
    for (const ev of this.#turns.cutTurn()) this.#events.push(ev);
    const attempts = this.#opts.reconnectAttempts;
    const out = await retryWithBackoff({
      attempts,
      backoffMs: this.#opts.reconnectBackoffMs,
      signal: this.#stop.signal,
      what: "gemini: reconnect attempt",
      log: this.#log,
    }, async (i) => {
      // The last try starts afresh: a stale or refused handle must not end the call.
      const handle = i > 0 && i === attempts - 1 ? undefined : this.#handle;
      return { handle, conn: await this.#standby.take(handle) ?? await this.#open(handle) };
    });
    if (this.#shutdown) {
      if (out.ok) retireConnection(out.value.conn);
      return;
    }
    if (!out.ok) {
      const error = "error" in out ? errorMessage(out.error) : "stopped";
      await this.#close(`gemini: reconnect failed after ${attempts} attempts (${why}): ${error}`);
      return;
    }
    const { handle, conn } = out.value;
    if (handle === undefined) this.#forgetSession();
    const { replayedMs } = this.#goLive(conn, heard);
    reportHandover(this.#log, {
      provider: "gemini",
      reason: why,
      gapMs: Math.max(0, conn.readyAt - lastAt),
      replayedMs,
      reply: handoverReply(heard),
      resumed: handle !== undefined,
    });
  }

  /** Ready a connection resumed from the freshest handle (during a `goAway`). */
  #prepareStandby(): void {
    this.#standby.prepare(
      this.#handle,
      (h) => this.#open(h),
      () => this.#advanceHandover(),
      (err) => {
        this.#log.warn("gemini: readying the next connection failed", { error: errorMessage(err) });
      },
    );
  }

  /**
   * During a `goAway`: keep a standby resumed from the freshest handle, and switch to it as
   * soon as it is ready, the model is not answering, and the handle covers the last answer.
   * Until then the old connection stays live; if its deadline comes first, its close moves.
   */
  #advanceHandover(): void {
    const from = this.#goAway?.from;
    if (!from || this.#conn !== from || this.#switching || this.#shutdown) return;
    if (this.#standby.handle !== this.#handle) this.#prepareStandby();
    if (this.#turns.modelTurnOpen || this.#handleStale) return;
    if (!this.#standby.ready || this.#standby.handle !== this.#handle) return;
    void this.#move("goAway");
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
      this.#standby.drop();
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

  #onMessage(conn: GeminiConnection, msg: GeminiServerMessage | undefined, chars?: number): void {
    if (msg === undefined) {
      this.#log.warn("gemini: skipped a server message that is not a JSON object", { chars });
      return;
    }
    this.#apply(conn, msg);
  }

  #apply(conn: GeminiConnection, msg: GeminiServerMessage): void {
    if (msg.skipped.length > 0) this.#log.debug("gemini: skipped fields", { fields: msg.skipped });
    if (msg.modelText) {
      this.#log.debug("gemini: text part ignored", { chars: msg.modelText.length });
    }
    for (const ev of this.#turns.apply(msg)) {
      if (ev.type === "bot_text" && ev.final) this.#uncoveredAnswers.push(ev.text);
      this.#events.push(ev);
    }
    if (msg.modelTurn || msg.outputTranscript !== undefined || msg.toolCalls.length > 0) {
      this.#handleStale = true;
    }
    if (msg.resumption?.handle !== undefined) {
      this.#handle = msg.resumption.handle;
      this.#handleStale = false;
      this.#uncoveredAnswers = [];
      this.#outbox.mark(this.#handle, [this.#standby.handle ?? undefined]);
    } else if (msg.resumption) this.#handleStale = true;
    if (msg.goAway) this.#onGoAway(conn, msg.goAway.timeLeftMs);
    if (this.#goAway?.from === conn) this.#advanceHandover();
  }

  /** Ready the next connection now; the switch comes when it is ready and the model is idle. */
  #onGoAway(conn: GeminiConnection, timeLeftMs: number | undefined): void {
    if (this.#goAway || this.#conn !== conn) return;
    this.#log.info("gemini: goAway received", { timeLeftMs });
    const timer = setTimeout(() => {
      if (this.#conn !== conn) return;
      this.#retire(conn);
      void this.#move("goAway deadline");
    }, (timeLeftMs ?? 0) + DEADLINE_GRACE_MS);
    this.#goAway = { from: conn, timer };
  }

  #clearGoAway(): void {
    clearTimeout(this.#goAway?.timer);
    this.#goAway = undefined;
  }
}

/** Registry factory: a {@link GeminiLiveClient} from the server's provider options. */
export const createGeminiLive: RealtimeFactory = (opts): RealtimeLlm =>
  new GeminiLiveClient(geminiOptionsFrom(opts));
