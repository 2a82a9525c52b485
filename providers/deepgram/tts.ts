/**
 * Deepgram Aura streaming text-to-speech over its speak WebSocket.
 *
 * Wire facts (sources: docs/providers/deepgram.md, "Text to speech"):
 * - `wss://api.deepgram.com/v1/speak?model=<voice>&encoding=linear16&sample_rate=<rate>` with
 *   the header `Authorization: Token <key>`; a refused key is HTTP 401 at the handshake, too
 *   many concurrent connections HTTP 429.
 * - Client text messages `{type:"Speak", text}`, `{type:"Flush"}` (synthesise the buffer now),
 *   `{type:"Clear"}` (drop the buffer and the audio in flight), `{type:"Close"}`.
 * - Server: binary frames of raw 16-bit little-endian PCM, and JSON `Metadata`,
 *   `Flushed {sequence_id}`, `Cleared {sequence_id}`, `Warning {description, code}`; faults
 *   close the socket with a non-1000 code and a reason.
 * - The socket carries one stream of audio with no utterance ids, so utterances run one at a
 *   time; an aborted one sends `Clear` and the audio that still arrives before `Cleared` is
 *   dropped. The socket is dialled at the first utterance and kept; a closed one is redialled.
 *
 * Permissions: `--allow-net=api.deepgram.com:443` (or the `baseUrl` given).
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import { type Frame, makeFrame, type StartParams, ttsAudio } from "../../core/frames.ts";
import type { TtsService } from "../../core/seams.ts";
import type { ServiceOptions } from "../service_options.ts";
import {
  closeSocket,
  Mailbox,
  openSocket,
  parseJsonMessage,
  redact,
  wsRoot,
} from "../ws_client.ts";
import { PcmAssembler, ttsUsageFrame } from "../tts/_shared.ts";

/** Default API root. */
export const DEEPGRAM_TTS_DEFAULT_BASE_URL = "wss://api.deepgram.com";
/** Default model (an Aura model names its voice). */
export const DEEPGRAM_TTS_DEFAULT_MODEL = "aura-2-helena-en";
/** Default output rate. */
export const DEEPGRAM_TTS_DEFAULT_SAMPLE_RATE = 24000;
/** Rates the speak socket accepts for `linear16`. */
export const DEEPGRAM_TTS_RATES: readonly number[] = [8000, 16000, 24000, 32000, 48000];

/** What the socket listener hands to the utterance in progress. */
type SpeakEvent =
  | { type: "audio"; bytes: Uint8Array }
  | { type: "message"; msg: Record<string, unknown> }
  | { type: "closed"; code: number; reason: string };

/** The Deepgram Aura WebSocket text-to-speech service: one socket, one utterance at a time. */
export class DeepgramTts implements TtsService {
  readonly #name: string;
  readonly #apiKey: string;
  readonly #url: string;
  readonly #model: string;
  readonly #rate: number;
  readonly #timeoutMs: number;
  #ws: WebSocket | undefined;
  #current: Mailbox<SpeakEvent> | undefined;
  /** `Clear` messages sent whose `Cleared` has not come back: audio until then is stale. */
  #clearing = 0;
  /** The utterance before this one, so utterances take the socket in turn. */
  #turn: Promise<void> = Promise.resolve();

  /** Make the service; a missing key or an unusable rate is a config error here. */
  constructor(opts: ServiceOptions) {
    this.#name = opts.provider;
    if (!opts.apiKey) throw new FlowcatError("config", `${this.#name}: apiKey is required`);
    this.#apiKey = opts.apiKey;
    const o = opts.options ?? {};
    const rate = o.sample_rate ?? o.sampleRate ?? DEEPGRAM_TTS_DEFAULT_SAMPLE_RATE;
    if (typeof rate !== "number" || !DEEPGRAM_TTS_RATES.includes(rate)) {
      throw new FlowcatError(
        "config",
        `${this.#name}: sample rate must be one of ${DEEPGRAM_TTS_RATES.join(", ")}`,
      );
    }
    this.#rate = rate;
    // An Aura model is a voice: a configured voice wins over the (default) model.
    this.#model = opts.voice ?? opts.model ?? DEEPGRAM_TTS_DEFAULT_MODEL;
    const query = new URLSearchParams({
      model: this.#model,
      encoding: "linear16",
      sample_rate: String(rate),
    });
    if (o.mip_opt_out === true) query.set("mip_opt_out", "true");
    const root = wsRoot(opts.baseUrl ?? DEEPGRAM_TTS_DEFAULT_BASE_URL);
    this.#url = `${root}/v1/speak?${query}`;
    this.#timeoutMs = opts.timeoutMs ?? 15_000;
  }

  /** Provider name (as configured). */
  name(): string {
    return this.#name;
  }

  /** Rate of the audio {@link runTts} yields (`sample_rate`). */
  sampleRate(): number {
    return this.#rate;
  }

  /** The handshake URL (the key is not in it). */
  url(): string {
    return this.#url;
  }

  /** Nothing to do: the socket is dialled by the first utterance (a refusal fails that one). */
  start(_params: StartParams): Promise<void> {
    return Promise.resolve();
  }

  /** Send `Close` and close the socket; an utterance in flight ends with an error. Idempotent. */
  async stop(): Promise<void> {
    const ws = this.#ws;
    this.#ws = undefined;
    if (!ws) return;
    if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: "Close" }));
    await closeSocket(ws);
  }

  /**
   * TtsStarted, TtsAudio chunks as they arrive, a `tts_usage` Metrics frame, TtsStopped: one
   * `Speak` and a `Flush`, audio until `Flushed`. Aborting `signal` (or leaving the loop early)
   * sends `Clear` and ends the stream at once (no TtsStopped).
   */
  async *runTts(text: string, signal?: AbortSignal): AsyncGenerator<Frame> {
    if (signal?.aborted) return;
    const contextId = crypto.randomUUID();
    if (text.trim() === "") {
      yield makeFrame("TtsStarted", { contextId });
      yield makeFrame("TtsStopped", { contextId });
      return;
    }
    const previous = this.#turn;
    let release!: () => void;
    this.#turn = new Promise((r) => (release = r));
    const events = new Mailbox<SpeakEvent>();
    const onAbort = () => events.poke();
    signal?.addEventListener("abort", onAbort);
    let ws: WebSocket | undefined;
    let ended = false;
    try {
      await previous;
      if (signal?.aborted) return;
      ws = await this.#socket(signal);
      this.#current = events;
      ws.send(JSON.stringify({ type: "Speak", text }));
      ws.send(JSON.stringify({ type: "Flush" }));
      yield makeFrame("TtsStarted", { contextId });
      const pcm = new PcmAssembler();
      while (!ended) {
        // Checked before waiting too: an abort while suspended at a yield finds no waiter.
        if (signal?.aborted) return;
        const ev = await events.next();
        if (signal?.aborted) return;
        if (!ev) continue;
        if (ev.type === "closed") {
          ended = true;
          throw this.#closedError(ev.code, ev.reason);
        }
        if (ev.type === "audio") {
          const samples = pcm.push(ev.bytes);
          if (samples.length) {
            yield ttsAudio({ pcm: samples, sampleRate: this.#rate, numChannels: 1 }, contextId);
          }
        } else if (ev.msg.type === "Flushed") {
          ended = true;
        } else if (ev.msg.type === "Error") {
          ended = true;
          throw this.#serverError(ev.msg);
        }
      }
      yield ttsUsageFrame(this.#name, this.#model, text.length);
      yield makeFrame("TtsStopped", { contextId });
    } finally {
      signal?.removeEventListener("abort", onAbort);
      if (this.#current === events) this.#current = undefined;
      if (!ended && ws?.readyState === WebSocket.OPEN) {
        // Stop generation for audio nobody will play; what is in flight is dropped until Cleared.
        this.#clearing++;
        ws.send(JSON.stringify({ type: "Clear" }));
      }
      release();
    }
  }

  /** The open socket, dialling one when there is none. */
  async #socket(signal?: AbortSignal): Promise<WebSocket> {
    if (this.#ws?.readyState === WebSocket.OPEN) return this.#ws;
    const ws = await openSocket(this.#url, { Authorization: `Token ${this.#apiKey}` }, {
      provider: this.#name,
      timeoutMs: this.#timeoutMs,
      signal,
    });
    this.#ws = ws;
    this.#clearing = 0;
    ws.addEventListener("message", (e) => this.#onMessage(e.data));
    ws.addEventListener("close", (e) => {
      if (this.#ws !== ws) return;
      this.#ws = undefined;
      this.#current?.push({ type: "closed", code: e.code, reason: e.reason });
    });
    return ws;
  }

  #onMessage(data: unknown): void {
    if (data instanceof ArrayBuffer) {
      if (this.#clearing === 0) this.#current?.push({ type: "audio", bytes: new Uint8Array(data) });
      return;
    }
    const msg = parseJsonMessage(data);
    if (!msg) return;
    if (msg.type === "Cleared") {
      this.#clearing = Math.max(0, this.#clearing - 1);
      return;
    }
    // A Flushed before Cleared belongs to the utterance that was cleared.
    if (msg.type === "Flushed" && this.#clearing > 0) return;
    if (msg.type === "Flushed" || msg.type === "Error") {
      this.#current?.push({ type: "message", msg });
    }
  }

  #serverError(msg: Record<string, unknown>): FlowcatError {
    const text = [msg.description, msg.err_msg, msg.message].find((v) => typeof v === "string");
    return new FlowcatError(
      "other",
      `${this.#name}: ${redact(String(text ?? "server error"), this.#apiKey).slice(0, 300)}`,
    );
  }

  #closedError(code: number, reason: string): FlowcatError {
    const why = reason ? `: ${redact(reason, this.#apiKey).slice(0, 300)}` : "";
    return new FlowcatError(
      "closed",
      `${this.#name}: socket closed before the audio ended (code ${code})${why}`,
    );
  }
}

/** Make a {@link DeepgramTts}. */
export const createDeepgramTts = (opts: ServiceOptions): DeepgramTts => new DeepgramTts(opts);
