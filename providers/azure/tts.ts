/**
 * Azure Speech text-to-speech over the Speech SDK's synthesis WebSocket
 * (`wss://<region>.tts.speech.microsoft.com/tts/cognitiveservices/websocket/v1`).
 *
 * One socket per call, dialled at start; `speech.config` once per socket. Each utterance is a
 * request id: `synthesis.context` (the raw PCM output format, metadata off), then the `ssml`
 * (providers/azure/ssml.ts). The service answers `turn.start`, `response` (the audio stream
 * id), binary `audio` messages of raw 16-bit mono PCM at 8, 16 or 24 kHz, `audio.metadata`,
 * and `turn.end`. Barge-in (an aborted `signal`) closes the socket: the service stops at once,
 * and a new socket is dialled straight away for the next utterance. A socket that drops between
 * utterances is redialled by the next; one that drops mid-utterance ends it with a `closed` error.
 *
 * Wire shapes: providers/azure/speech_wire.ts and docs/providers/azure.md.
 *
 * @example
 * ```ts
 * import { createAzureTts } from "@flowcat/flowcat/tts/azure";
 * declare const key: string;
 * const tts = createAzureTts({ provider: "azure", apiKey: key, options: { region: "eastus" } });
 * ```
 *
 * Permissions: `--allow-net=<region>.tts.speech.microsoft.com:443` (or the `url` given).
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import { type Frame, makeFrame, type StartParams, ttsAudio } from "../../core/frames.ts";
import type { TtsService } from "../../core/seams.ts";
import type { ServiceOptions } from "../service_options.ts";
import { Mailbox, openSocket, raceAbort, redact, SharedSocket } from "../ws_client.ts";
import { PcmAssembler, ttsUsageFrame } from "../tts/_shared.ts";
import { AZURE_TTS_DEFAULT_VOICE, AZURE_TTS_RATES, speechRoot } from "./defaults.ts";
import { buildSsml, ssmlRate, voiceLanguage } from "./ssml.ts";
import {
  AZURE_TTS_PATH,
  decodeSpeechMessage,
  encodeTextMessage,
  newRequestId,
  speechConfigBody,
  type SpeechMessage,
  speechUpgradeHeaders,
} from "./speech_wire.ts";

type TurnEvent = { type: "message"; msg: SpeechMessage } | {
  type: "closed";
  code: number;
  reason: string;
};

/** The synthesis.context body for raw PCM at `rate` (SynthesisContext.ts, metadata off). */
export function synthesisContextBody(rate: number): string {
  return JSON.stringify({
    synthesis: {
      audio: {
        metadataOptions: {
          bookmarkEnabled: false,
          punctuationBoundaryEnabled: "false",
          sentenceBoundaryEnabled: "false",
          sessionEndEnabled: true,
          visemeEnabled: false,
          wordBoundaryEnabled: "false",
        },
        outputFormat: `raw-${rate / 1000}khz-16bit-mono-pcm`,
      },
      language: { autoDetection: false },
    },
  });
}

/** Azure Speech synthesis; one instance per call. */
export class AzureSpeechTts implements TtsService {
  readonly #name: string;
  readonly #key: string;
  readonly #url: string;
  readonly #voice: string;
  readonly #language: string;
  readonly #rate: number;
  readonly #speakingRate: string | undefined;
  readonly #timeoutMs: number;
  readonly #turns = new Map<string, Mailbox<TurnEvent>>();
  readonly #socket: SharedSocket;

  /** Check the options now (key, region or url, rate, speaking rate). */
  constructor(opts: ServiceOptions) {
    this.#name = opts.provider;
    if (!opts.apiKey) throw new FlowcatError("config", `${this.#name}: missing Speech key`);
    this.#key = opts.apiKey;
    const o = opts.options ?? {};
    this.#url = `${
      speechRoot(this.#name, "tts", { url: opts.baseUrl, options: o })
    }${AZURE_TTS_PATH}`;
    this.#voice = opts.voice ?? AZURE_TTS_DEFAULT_VOICE;
    this.#language = opts.language ?? voiceLanguage(this.#voice);
    const rate = o.sample_rate ?? 24000;
    if (typeof rate !== "number" || !AZURE_TTS_RATES.includes(rate)) {
      throw new FlowcatError(
        "config",
        `${this.#name}: options.sample_rate must be one of ${AZURE_TTS_RATES.join(", ")}`,
      );
    }
    this.#rate = rate;
    this.#speakingRate = ssmlRate(this.#name, o.rate);
    this.#timeoutMs = opts.timeoutMs ?? 15_000;
    this.#socket = new SharedSocket(
      () =>
        openSocket(this.#url, speechUpgradeHeaders(this.#key), {
          provider: this.#name,
          timeoutMs: this.#timeoutMs,
        }),
      (ws) => this.#attach(ws),
    );
  }

  /** Provider name (as configured). */
  name(): string {
    return this.#name;
  }

  /** Rate of the audio {@link runTts} yields. */
  sampleRate(): number {
    return this.#rate;
  }

  /** The socket URL (no key in it). */
  url(): string {
    return this.#url;
  }

  /** Dial now so the first utterance does not pay for it; a refused key throws kind `auth`. */
  async start(_params: StartParams): Promise<void> {
    await this.#socket.get();
  }

  /** Close the socket; an utterance in flight ends with a `closed` error. Idempotent. */
  stop(): Promise<void> {
    return this.#socket.close();
  }

  /**
   * TtsStarted, TtsAudio as the chunks arrive, a `tts_usage` Metrics frame, TtsStopped. Aborting
   * `signal` (or leaving the loop early) closes the socket and ends the stream at once.
   */
  async *runTts(text: string, signal?: AbortSignal): AsyncGenerator<Frame> {
    if (signal?.aborted) return;
    const requestId = newRequestId();
    if (text.trim() === "") {
      yield makeFrame("TtsStarted", { contextId: requestId });
      yield makeFrame("TtsStopped", { contextId: requestId });
      return;
    }
    const ws = await raceAbort(this.#socket.get(), signal);
    if (!ws) return;
    if (ws.readyState !== WebSocket.OPEN) throw this.#closedError(1006, "");
    const events = new Mailbox<TurnEvent>();
    this.#turns.set(requestId, events);
    const onAbort = () => events.poke();
    signal?.addEventListener("abort", onAbort);
    const pcm = new PcmAssembler();
    let ended = false;
    try {
      ws.send(
        encodeTextMessage(
          "synthesis.context",
          requestId,
          "application/json",
          synthesisContextBody(this.#rate),
        ),
      );
      const ssml = buildSsml({
        text,
        voice: this.#voice,
        language: this.#language,
        ...(this.#speakingRate !== undefined ? { rate: this.#speakingRate } : {}),
      });
      ws.send(encodeTextMessage("ssml", requestId, "application/ssml+xml", ssml));
      yield makeFrame("TtsStarted", { contextId: requestId });
      while (!ended) {
        if (signal?.aborted) return;
        const ev = await events.next();
        if (signal?.aborted) return;
        if (!ev) continue;
        if (ev.type === "closed") {
          ended = true;
          throw this.#closedError(ev.code, ev.reason);
        }
        const { msg } = ev;
        if (msg.path === "audio" && msg.binary !== undefined) {
          const samples = pcm.push(msg.binary);
          if (samples.length) {
            yield ttsAudio({ pcm: samples, sampleRate: this.#rate, numChannels: 1 }, requestId);
          }
        } else if (msg.path === "turn.end") ended = true;
      }
      yield ttsUsageFrame(this.#name, this.#voice, text.length);
      yield makeFrame("TtsStopped", { contextId: requestId });
    } finally {
      signal?.removeEventListener("abort", onAbort);
      this.#turns.delete(requestId);
      // Closing is the one stop the service obeys at once. The next socket is dialled now: the
      // caller who barged in is still talking, so the next answer finds it open.
      if (!ended) {
        this.#socket.drop(ws);
        this.#socket.prewarm();
      }
    }
  }

  /**
   * Route each message to its utterance by `X-RequestId`; a close fails those in flight. The
   * connection's `speech.config` goes first.
   */
  #attach(ws: WebSocket): void {
    ws.addEventListener("message", (e) => {
      let msg: SpeechMessage;
      try {
        msg = decodeSpeechMessage(e.data);
      } catch {
        return;
      }
      this.#turns.get(msg.requestId)?.push({ type: "message", msg });
    });
    ws.addEventListener("close", (e) => {
      for (const box of this.#turns.values()) {
        box.push({ type: "closed", code: e.code, reason: e.reason });
      }
    });
    ws.send(
      encodeTextMessage("speech.config", newRequestId(), "application/json", speechConfigBody()),
    );
  }

  #closedError(code: number, reason: string): FlowcatError {
    const why = reason ? `: ${redact(reason, this.#key).slice(0, 300)}` : "";
    return new FlowcatError(
      "closed",
      `${this.#name}: socket closed before the audio ended (code ${code})${why}`,
    );
  }
}

/** Factory for the server's provider registry: an Azure Speech TTS client. */
export function createAzureTts(opts: ServiceOptions): TtsService {
  return new AzureSpeechTts(opts);
}
