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
import type { Frame, StartParams } from "../../core/frames.ts";
import type { TtsService } from "../../core/seams.ts";
import type { ServiceOptions } from "../service_options.ts";
import { MuxSocket } from "../tts/_mux_socket.ts";
import { StreamingTts } from "../tts/_shared.ts";
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
export class AzureSpeechTts extends StreamingTts {
  readonly #url: string;
  readonly #voice: string;
  readonly #language: string;
  readonly #speakingRate: string | undefined;
  readonly #socket: MuxSocket<SpeechMessage>;

  /** Check the options now (key, region or url, rate, speaking rate). */
  constructor(opts: ServiceOptions) {
    const name = opts.provider;
    if (!opts.apiKey) throw new FlowcatError("config", `${name}: missing Speech key`);
    const o = opts.options ?? {};
    const url = `${speechRoot(name, "tts", { url: opts.baseUrl, options: o })}${AZURE_TTS_PATH}`;
    const rate = o.sample_rate ?? 24000;
    if (typeof rate !== "number" || !AZURE_TTS_RATES.includes(rate)) {
      throw new FlowcatError(
        "config",
        `${name}: options.sample_rate must be one of ${AZURE_TTS_RATES.join(", ")}`,
      );
    }
    super(name, rate);
    this.#url = url;
    this.#voice = opts.voice ?? AZURE_TTS_DEFAULT_VOICE;
    this.#language = opts.language ?? voiceLanguage(this.#voice);
    this.#speakingRate = ssmlRate(name, o.rate);
    this.#socket = new MuxSocket({
      provider: name,
      url,
      headers: speechUpgradeHeaders(opts.apiKey),
      timeoutMs: opts.timeoutMs ?? 15_000,
      secret: opts.apiKey,
      // Each message goes to its utterance by `X-RequestId`.
      route: (data) => {
        try {
          const msg = decodeSpeechMessage(data);
          return { id: msg.requestId, msg };
        } catch {
          return undefined;
        }
      },
      hello: () =>
        encodeTextMessage("speech.config", newRequestId(), "application/json", speechConfigBody()),
    });
  }

  /** The socket URL (no key in it). */
  url(): string {
    return this.#url;
  }

  /** Dial now so the first utterance does not pay for it; a refused key throws kind `auth`. */
  override start(_params: StartParams): Promise<void> {
    return this.#socket.start();
  }

  /** Close the socket; an utterance in flight ends with a `closed` error. Idempotent. */
  override stop(): Promise<void> {
    return this.#socket.stop();
  }

  /**
   * TtsStarted, TtsAudio as the chunks arrive, a `tts_usage` Metrics frame, TtsStopped. Aborting
   * `signal` (or leaving the loop early) closes the socket and ends the stream at once.
   */
  runTts(text: string, signal?: AbortSignal): AsyncGenerator<Frame> {
    const id = newRequestId();
    return this.#socket.speak({
      id,
      text,
      model: this.#voice,
      sampleRate: this.sampleRate(),
      send: (ws) => {
        const context = synthesisContextBody(this.sampleRate());
        ws.send(encodeTextMessage("synthesis.context", id, "application/json", context));
        const ssml = buildSsml({
          text,
          voice: this.#voice,
          language: this.#language,
          ...(this.#speakingRate !== undefined ? { rate: this.#speakingRate } : {}),
        });
        ws.send(encodeTextMessage("ssml", id, "application/ssml+xml", ssml));
      },
      step: (msg) => {
        if (msg.path === "audio" && msg.binary !== undefined) return { audio: msg.binary };
        return msg.path === "turn.end" ? { done: true } : undefined;
      },
      // Closing is the one stop the service obeys at once. The next socket is dialled now: the
      // caller who barged in is still talking, so the next answer finds it open.
      cancel: (ws) => this.#socket.redial(ws),
    }, signal);
  }
}

/** Factory for the server's provider registry: an Azure Speech TTS client. */
export function createAzureTts(opts: ServiceOptions): TtsService {
  return new AzureSpeechTts(opts);
}
