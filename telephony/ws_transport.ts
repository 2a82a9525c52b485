// Over 400 lines: one class whose per-frame paths share its buffers and clocks.
/**
 * Generic WebSocket media transport: a host socket ({@link MediaSocket}) composed with a carrier
 * serializer ({@link MediaSerializer}). Inbound: StreamStart{callId}, Audio at the carrier rate,
 * DTMF, Stop. Outbound: `sendAudio` resamples to the carrier rate and encodes; `sendClear`
 * flushes the carrier's playback on barge-in.
 *
 * Permissions: none itself; the listener that accepts the socket needs `--allow-net=<address>`,
 * a socket you dial `--allow-net=<host:port>`.
 *
 * @example
 * ```ts
 * import { socketFromWebSocket, WsMediaTransport } from "@flowcat/flowcat/telephony/ws";
 * import { GenericSerializer } from "@flowcat/flowcat/telephony/generic";
 * // in a Deno.serve handler:
 * // const { socket, response } = Deno.upgradeWebSocket(req);
 * // const transport = new WsMediaTransport(socketFromWebSocket(socket), new GenericSerializer());
 * ```
 * @module
 */

import { Resampler, transitionFor } from "../core/audio/resample.ts";
import type { AudioFrame, TransferOutcome } from "../core/frames.ts";
import type { CarrierTransferFn } from "./carrier_transfer.ts";
import { transferLeg } from "./transfer_leg.ts";
import { SilenceWatch } from "./media_silence.ts";
import { type Logger, silentLogger } from "../core/log.ts";
import { errorMessage } from "../core/errors.ts";
import {
  MEDIA_STOPPED,
  type MediaIn,
  type MediaSerializer,
  type MediaSocket,
  type MediaTransport,
  SENT,
  type SerIn,
  type WsIn,
  type WsOut,
} from "../core/seams.ts";

/**
 * Adapt a standard WebSocket (server side from `Deno.upgradeWebSocket`, or a client) to
 * {@link MediaSocket}. Messages are queued from the moment of the call.
 */
export function socketFromWebSocket(ws: WebSocket): MediaSocket & { opened: Promise<void> } {
  return new WebSocketMediaSocket(ws);
}

/** Sends on a WebSocket are done when `send` returns: the shared settled promise. */
const RESOLVED: Promise<void> = SENT;
const CLOSED: Promise<undefined> = Promise.resolve(undefined);

/**
 * {@link MediaSocket} over a WebSocket. A class with one `handleEvent` for both events, not a
 * bundle of closures: a carrier call holds one of these for its lifetime.
 */
class WebSocketMediaSocket implements MediaSocket, EventListenerObject {
  readonly #ws: WebSocket;
  #queue: WsIn[] | undefined;
  #waiter: ((m: WsIn | undefined) => void) | undefined;
  #listener: ((m: WsIn | undefined) => void) | undefined;
  #closed = false;
  #opened: Promise<void> | undefined;

  constructor(ws: WebSocket) {
    this.#ws = ws;
    ws.binaryType = "arraybuffer";
    ws.addEventListener("message", this);
    ws.addEventListener("close", this);
  }

  /**
   * Resolves once the socket is open. Made on first use: a server-side socket never asks, and
   * its open and error listeners would live as long as the call.
   */
  get opened(): Promise<void> {
    return this.#opened ??= this.#whenOpen();
  }

  #whenOpen(): Promise<void> {
    const ws = this.#ws;
    if (ws.readyState === WebSocket.OPEN) return RESOLVED;
    if (ws.readyState !== WebSocket.CONNECTING) {
      return Promise.reject(new Error("WebSocket failed to open"));
    }
    return new Promise<void>((resolve, reject) => {
      ws.addEventListener("open", () => resolve(), { once: true });
      ws.addEventListener("error", () => reject(new Error("WebSocket failed to open")), {
        once: true,
      });
    });
  }

  /** The WebSocket's message and close events. */
  handleEvent(e: Event): void {
    if (e.type === "message") {
      const d = (e as MessageEvent).data;
      if (typeof d === "string") this.#deliver({ type: "text", data: d });
      else if (d instanceof ArrayBuffer) this.#deliver({ type: "binary", data: new Uint8Array(d) });
    } else if (e.type === "close" && !this.#closed) {
      this.#closed = true;
      this.#deliver({ type: "close" });
      this.#listener?.(undefined);
    }
  }

  #deliver(m: WsIn): void {
    if (this.#listener) this.#listener(m);
    else if (this.#waiter) {
      const w = this.#waiter;
      this.#waiter = undefined;
      w(m);
    } else (this.#queue ??= []).push(m);
  }

  recv(): Promise<WsIn | undefined> {
    const m = this.#queue?.shift();
    if (m !== undefined) return Promise.resolve(m);
    if (this.#closed) return CLOSED;
    return new Promise((resolve) => (this.#waiter = resolve));
  }

  listen(fn: (m: WsIn | undefined) => void): void {
    this.#listener = fn;
    const q = this.#queue;
    while (q !== undefined && q.length > 0 && this.#listener === fn) fn(q.shift());
    if (this.#closed && (q === undefined || q.length === 0)) fn(undefined);
  }

  sendText(text: string): Promise<void> {
    if (this.#ws.readyState === WebSocket.OPEN) this.#ws.send(text);
    return RESOLVED;
  }

  sendBinary(bytes: Uint8Array): Promise<void> {
    if (this.#ws.readyState === WebSocket.OPEN) this.#ws.send(bytes);
    return RESOLVED;
  }

  close(): Promise<void> {
    const ws = this.#ws;
    if (ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING) ws.close();
    return RESOLVED;
  }
}

/** What an inbound message can carry for the call. */
type Inbound = Exclude<SerIn, { type: "mark" | "ignore" }>;

/** A serializer that also reports things worth a warning (the carrier serializers do). */
interface WarningSource {
  /** Warnings about the last inbound message, each said once; empty when none. */
  takeWarnings?(): readonly string[];
  /** Lend decoded audio from now on (see `CarrierBase.lendAudio`); push mode asks for it. */
  lendAudio?(): void;
}

/** Options of a {@link WsMediaTransport}. */
export interface WsMediaTransportOptions {
  /** Where ignored (malformed or unknown) messages are reported, with their reason. */
  logger?: Logger;
  /**
   * Longest audio one inbound message may carry; default 1000 ms. A longer one is dropped, and
   * a message too big to hold that much audio in any carrier's encoding (16-bit PCM at 48 kHz,
   * base64 in JSON) is dropped before it is parsed.
   */
  maxMessageAudioMs?: number;
  /**
   * How far inbound audio may run ahead of real time (a burst after a network stall); default
   * 1000 ms. Audio beyond it is dropped and counted: a peer cannot queue minutes of audio.
   */
  maxAudioBurstMs?: number;
  /** Clock for the real-time check; `performance.now` by default (tests pass a fake). */
  now?: () => number;
  /** How {@link WsMediaTransport.transfer} hands the call over (e.g. `carrierTransfer`). */
  transfer?: CarrierTransferFn;
  /**
   * End the call when the carrier sends no audio for this long, in ms (default: never), counted
   * from its first audio message. Carriers stream audio all through a call, so a socket that stays
   * open with none coming has lost its peer: the leg then stops with the reason
   * {@link MEDIA_STOPPED} and the socket is closed.
   * The server sets it and turns off Deno's own idle timeout, whose timer is re-armed on every
   * message (docs/decisions.md).
   */
  silenceLimitMs?: number;
}

/** Default of {@link WsMediaTransportOptions.maxMessageAudioMs}. */
export const MAX_MESSAGE_AUDIO_MS = 1000;
/** Default of {@link WsMediaTransportOptions.maxAudioBurstMs}. */
export const MAX_AUDIO_BURST_MS = 1000;

/** Bytes of a message that carries `ms` of 16-bit 48 kHz audio as base64 in JSON, with room. */
export function maxMessageBytes(ms: number): number {
  return Math.ceil((ms * 96 * 4) / 3) + 4096;
}

/** The default clock of every transport: one function, not a closure per call. */
const perfNow = (): number => performance.now();

/** A call's media leg over a carrier WebSocket. */
export class WsMediaTransport implements MediaTransport {
  readonly #socket: MediaSocket;
  readonly #ser: MediaSerializer & WarningSource;
  readonly #log: Logger;
  #down: Resampler | undefined;
  #ended = false;
  /** Outbound samples waiting to fill one carrier-sized message (see chunkSamples). */
  #pending: Int16Array | undefined;
  #pendingLen = 0;
  #started: Extract<SerIn, { type: "start" }> | undefined;
  /** Whether the serializer's audio messages are text (known after the first one). */
  #textOut: boolean | undefined;
  /** Reused resampler output for a text carrier. */
  #scratch: Int16Array | undefined;
  /** Replies owed for the last message, being sent (the pull path waits for them). */
  #replying: Promise<void> | undefined;
  /** Call id from the stream's start message. */
  callId: string | undefined;
  /** Number of inbound messages ignored (malformed or unknown). */
  ignored = 0;
  /** Audio messages that arrived before the stream's start and were dropped. */
  droppedBeforeStart = 0;
  /** Inbound messages dropped for size (over `maxMessageAudioMs` of audio). */
  droppedOversized = 0;
  /** Inbound audio messages dropped for running ahead of real time beyond the burst. */
  droppedTooFast = 0;
  /** Inbound media dropped so far, by reason (before_start, oversized, too_fast). */
  droppedMedia(): Record<string, number> {
    return {
      before_start: this.droppedBeforeStart,
      oversized: this.droppedOversized,
      too_fast: this.droppedTooFast,
    };
  }
  readonly #maxMessageMs: number;
  readonly #maxBytes: number;
  readonly #burstMs: number;
  readonly #now: () => number;
  readonly #transfer: CarrierTransferFn | undefined;
  /** Audio (ms) the peer may still send ahead of real time, and when that was worked out. */
  #allowanceMs: number;
  #allowanceAt: number | undefined;
  /** Push mode's receiver, until the leg ends. */
  #pushTo: ((m: MediaIn | undefined) => void) | undefined;
  /** Set when the leg ended for silence: the reason its stop gives. */
  #stopReason: string | undefined;
  readonly #silenceLimitMs: number;
  #silence: SilenceWatch | undefined;

  /** Compose `socket` with `serializer`. */
  constructor(
    socket: MediaSocket,
    serializer: MediaSerializer,
    options: WsMediaTransportOptions = {},
  ) {
    this.#socket = socket;
    this.#ser = serializer;
    this.#log = options.logger ?? silentLogger;
    this.#maxMessageMs = options.maxMessageAudioMs ?? MAX_MESSAGE_AUDIO_MS;
    this.#maxBytes = maxMessageBytes(this.#maxMessageMs);
    this.#burstMs = options.maxAudioBurstMs ?? MAX_AUDIO_BURST_MS;
    this.#allowanceMs = this.#burstMs;
    this.#now = options.now ?? perfNow;
    this.#transfer = options.transfer;
    this.#silenceLimitMs = options.silenceLimitMs ?? 0;
  }

  /**
   * Watch for silence from the first audio on: a leg that never sent any is left to the task's
   * idle timeout (a benchmark's idle calls send none; a carrier's calls always do).
   */
  #watchSilence(): void {
    this.#silence = new SilenceWatch(
      this.#silenceLimitMs,
      () => this.#allowanceAt ?? this.#now(),
      (ms) => this.#silent(ms),
    );
  }

  /** No audio for the silence limit: the leg stops (with why), and the socket is closed. */
  #silent(ms: number): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#stopReason = MEDIA_STOPPED;
    this.#log.warn("carrier sent no audio; ending the call", {
      silentSeconds: Math.round(ms / 1000),
    });
    const deliver = this.#pushTo;
    this.#pushTo = undefined;
    deliver?.({ type: "stop", reason: MEDIA_STOPPED });
    deliver?.(undefined);
    // Pull mode: the pending read ends with the close (see recv).
    void this.#socket.close?.();
  }

  /** Cold transfer through the carrier (options.transfer); refused without one. */
  transfer(target: string): Promise<TransferOutcome> {
    return transferLeg(this.#transfer, this.callId, target);
  }

  /**
   * Read up to the stream's start message and return it (with the carrier's custom parameters,
   * e.g. a call token Twilio can only pass that way); `undefined` when the stream ends first.
   * The next {@link WsMediaTransport.recv} returns that start again, so a server can check the
   * token before it builds the call. Audio before the start is dropped.
   */
  async waitForStart(): Promise<Extract<SerIn, { type: "start" }> | undefined> {
    for (;;) {
      const m = await this.#next();
      if (m === undefined || m.type === "stop") return undefined;
      if (m.type === "start") {
        this.#started = m;
        return m;
      }
      if (m.type === "audio") this.droppedBeforeStart++;
    }
  }

  /** Next StreamStart / Audio / DTMF / Stop; `undefined` after Stop or when the socket closes. */
  async recv(): Promise<MediaIn | undefined> {
    const held = this.#started;
    if (held !== undefined) {
      this.#started = undefined;
      return { type: "start", callId: held.callId };
    }
    const m = await this.#next();
    // Ended for silence: the read the close ended says so.
    const reason = this.#stopReason;
    if (reason !== undefined) return { type: "stop", reason };
    if (m === undefined || m.type === "stop") return m;
    return m.type === "start" ? { type: "start", callId: m.callId } : m;
  }

  /**
   * Push mode: deliver every event from now on (a start held by {@link waitForStart} first) to
   * `deliver` as the socket receives it, `undefined` at the end, with no promise per message.
   * A socket without push support is pumped with `recv` instead.
   */
  listen(deliver: (m: MediaIn | undefined) => void): void {
    const held = this.#started;
    if (held !== undefined) {
      this.#started = undefined;
      deliver({ type: "start", callId: held.callId });
    }
    const socket = this.#socket;
    if (socket.listen === undefined || this.#ended) {
      void (async () => {
        for (;;) {
          const m = await this.recv();
          deliver(m);
          if (m === undefined) return;
        }
      })();
      return;
    }
    // Each event is handed on inside the socket's callback, before the next message is decoded,
    // so the serializer may decode audio into its one reused buffer (marked `lent`).
    this.#ser.lendAudio?.();
    this.#pushTo = deliver;
    socket.listen((msg) => {
      if (this.#pushTo === undefined) return;
      const r = msg === undefined ? undefined : this.#decode(msg);
      const done = msg === undefined || this.#ended;
      if (done) this.#pushTo = undefined;
      if (r !== undefined) deliver(r.type === "start" ? { type: "start", callId: r.callId } : r);
      if (done) deliver(undefined);
    });
  }

  async #next(): Promise<Inbound | undefined> {
    while (!this.#ended) {
      const msg = await this.#socket.recv();
      if (msg === undefined) break;
      const r = this.#decode(msg);
      if (this.#replying !== undefined) await this.#replying;
      if (r !== undefined) return r;
    }
    this.#ended = true;
    return undefined;
  }

  /** One message through the serializer: its event, or `undefined` for a mark or an ignore. */
  #decode(msg: WsIn): Inbound | undefined {
    if (msg.type !== "close" && msg.data.length > this.#maxBytes) {
      // Never parsed: a 30 MB message would otherwise become 20 MB of PCM queued for the call.
      this.droppedOversized++;
      if (this.droppedOversized === 1) {
        this.#log.warn("media message too large; dropped", { bytes: msg.data.length });
      }
      return undefined;
    }
    const r = this.#ser.onMessage(msg);
    const warnings = this.#ser.takeWarnings?.();
    if (warnings !== undefined) { for (const w of warnings) this.#log.warn(w); }
    // Handshakes (Genesys "opened", Sinch pong) owe the carrier a reply before anything else.
    const replies = this.#ser.takeReplies?.();
    this.#replying = replies !== undefined && replies.length > 0
      ? this.#sendAll(replies)
      : undefined;
    switch (r.type) {
      case "start":
        this.callId = r.callId;
        return r;
      case "audio":
        return this.#withinRealTime(r) ? r : undefined;
      case "dtmf":
        return r;
      case "stop":
        this.#ended = true;
        return r;
      case "mark":
        return undefined;
      case "ignore":
        this.ignored++;
        this.#log.debug("media message ignored", { reason: r.reason });
        return undefined;
    }
  }

  /**
   * Whether an audio message fits: at most `maxMessageAudioMs` long, and no further ahead of
   * real time than the burst allows (a token bucket refilled by the clock, in ms of audio).
   */
  #withinRealTime(r: Extract<Inbound, { type: "audio" }>): boolean {
    const { pcm, sampleRate } = r.audio;
    const ms = (pcm.length * 1000) / sampleRate;
    if (ms > this.#maxMessageMs) {
      this.droppedOversized++;
      return false;
    }
    const now = this.#now();
    if (this.#allowanceAt !== undefined) {
      this.#allowanceMs = Math.min(this.#burstMs, this.#allowanceMs + (now - this.#allowanceAt));
    }
    this.#allowanceAt = now;
    if (this.#silence === undefined && this.#silenceLimitMs > 0 && !this.#ended) {
      this.#watchSilence();
    }
    if (ms > this.#allowanceMs) {
      this.droppedTooFast++;
      if (this.droppedTooFast === 1) {
        this.#log.warn("inbound audio faster than real time; dropping the excess", {
          burstMs: this.#burstMs,
        });
      }
      return false;
    }
    this.#allowanceMs -= ms;
    return true;
  }

  async #sendAll(replies: readonly WsOut[]): Promise<void> {
    try {
      for (const reply of replies) await this.#send(reply);
    } catch (err) {
      this.#log.warn("reply to the carrier failed", { err: errorMessage(err) });
    }
  }

  /**
   * Resample to the carrier rate (when needed), encode and send. Not an async function: a whole
   * message returns the socket's own (settled) promise, with no promise or job of its own per
   * frame; a failure still arrives as a rejection.
   */
  sendAudio(audio: AudioFrame): Promise<void> {
    try {
      return this.#sendAudio(audio);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  #sendAudio(audio: AudioFrame): Promise<void> {
    const rate = this.#ser.carrierRate();
    const chunk = this.#ser.chunkSamples?.() ?? 0;
    let pcm = audio.pcm;
    if (audio.sampleRate !== rate) {
      if (
        this.#down === undefined || this.#down.inRate !== audio.sampleRate ||
        this.#down.outRate !== rate
      ) {
        this.#down = new Resampler(audio.sampleRate, rate, {
          transition: transitionFor(audio.sampleRate, rate),
        });
      }
      // A text carrier encodes a whole message at once, so its samples can live in one reused
      // buffer; a binary one may hand a view of them to the socket, which keeps it, and samples
      // gathered across awaits (chunked carriers) must not be overwritten meanwhile.
      const n = this.#down.outputLength(pcm.length);
      if (this.#textOut === true && this.#whole(n, chunk)) {
        if (this.#scratch === undefined || this.#scratch.length < n) {
          this.#scratch = new Int16Array(n);
        }
        pcm = this.#down.process(pcm, this.#scratch);
      } else pcm = this.#down.process(pcm);
      if (pcm.length === 0) return RESOLVED;
    }
    if (this.#whole(pcm.length, chunk)) {
      // Already the carrier's rate, mono: the frame itself is what is encoded (no copy of it).
      const msg = this.#ser.encodeAudio(
        pcm === audio.pcm && audio.numChannels === 1
          ? audio
          : { pcm, sampleRate: rate, numChannels: 1 },
      );
      this.#textOut ??= typeof msg === "string";
      return this.#send(msg);
    }
    return this.#sendChunks(pcm, rate, chunk);
  }

  /** Whether `n` samples go out as one message now (else they are gathered into chunks). */
  #whole(n: number, chunk: number): boolean {
    return chunk <= 0 || (this.#pendingLen === 0 && n === chunk);
  }

  /** The carrier wants fixed-size messages: gather samples and send whole chunks only. */
  async #sendChunks(pcm: Int16Array, rate: number, chunk: number): Promise<void> {
    if (this.#pending === undefined || this.#pending.length < chunk) {
      this.#pending = new Int16Array(chunk);
    }
    let i = 0;
    while (i < pcm.length) {
      const n = Math.min(chunk - this.#pendingLen, pcm.length - i);
      this.#pending.set(pcm.subarray(i, i + n), this.#pendingLen);
      this.#pendingLen += n;
      i += n;
      if (this.#pendingLen === chunk) {
        this.#pendingLen = 0;
        await this.#send(
          this.#ser.encodeAudio({ pcm: this.#pending.slice(), sampleRate: rate, numChannels: 1 }),
        );
      }
    }
  }

  /** Send the carrier's clear message (flush its playback). */
  async sendClear(): Promise<void> {
    this.#pendingLen = 0;
    const m = this.#ser.encodeClear();
    if (m !== undefined) await this.#send(m);
  }

  /** The carrier's sample rate. */
  carrierRate(): number {
    return this.#ser.carrierRate();
  }

  /** Close the socket. */
  async close(): Promise<void> {
    this.#ended = true;
    this.#silence?.stop();
    await this.#socket.close?.();
  }

  #send(m: WsOut): Promise<void> {
    return typeof m === "string" ? this.#socket.sendText(m) : this.#socket.sendBinary(m);
  }
}
