/**
 * Azure Speech streaming speech-to-text over the Speech SDK's WebSocket protocol
 * (`wss://<region>.stt.speech.microsoft.com/speech/recognition/conversation/cognitiveservices/v1`).
 *
 * Per connection: `speech.config`; per turn: a new request id, the WAV header as the first
 * `audio` message, then raw 16-bit mono PCM `audio` messages at 8 or 16 kHz. The service answers
 * `turn.start`, `speech.hypothesis` (interim: InterimTranscription), `speech.phrase` (a segment
 * ended by the service's own silence detection: one final Transcription, `endOfUtterance`) and
 * `turn.end`; a turn that ends while the call goes on is followed by a new one, as the SDK's
 * continuous recognition does. While muted, silence is sent so the service's clock and
 * timeouts run on. A socket that drops is reopened once at once, the audio of the gap (up to
 * 2 s) held and sent on the new socket; if that fails the next
 * `runStt` throws, and later calls retry at most once per `retry_interval_ms`.
 *
 * Wire shapes: providers/azure/speech_wire.ts and docs/providers/azure.md.
 *
 * @example
 * ```ts
 * import { createAzureStt } from "@flowcat/flowcat/stt/azure";
 * declare const key: string;
 * const stt = createAzureStt({ provider: "azure", apiKey: key, options: { region: "eastus" } });
 * ```
 *
 * Permissions: `--allow-net=<region>.stt.speech.microsoft.com:443` (or the `url` given).
 * @module
 */

import { FlowcatError, type FlowcatErrorKind } from "../../core/errors.ts";
import { type AudioFrame, type Frame, makeFrame, type StartParams } from "../../core/frames.ts";
import { type Logger, silentLogger } from "../../core/log.ts";
import type { SttService } from "../../core/seams.ts";
import { int16ToBytes } from "../../core/audio/pcm.ts";
import { Resampler } from "../../core/audio/resample.ts";
import type { ServiceOptions } from "../service_options.ts";
import { openSocket, redact } from "../ws_client.ts";
import { SttConnection } from "../stt_connection.ts";
import { positiveOption } from "../tts/_shared.ts";
import { AZURE_STT_DEFAULT_LANGUAGE, AZURE_STT_RATES, speechRoot } from "./defaults.ts";
import {
  AZURE_STT_PATH,
  decodeSpeechMessage,
  encodeBinaryMessage,
  encodeTextMessage,
  jsonBody,
  newRequestId,
  speechConfigBody,
  speechContextBody,
  type SpeechMessage,
  speechUpgradeHeaders,
  wavHeader,
} from "./speech_wire.ts";

/** `RecognitionStatus` values of a `speech.phrase` that are failures (ServiceMessages/Enums.ts). */
const FAILED_STATUS: Readonly<Record<string, FlowcatErrorKind>> = {
  Error: "other",
  TooManyRequests: "other",
  BadRequest: "protocol",
  Forbidden: "auth",
};

/** Caller audio held while a dropped socket is reopened. */
const BACKLOG_SECONDS = 2;
/** A socket closed sooner than this after it opened lived short (see {@link REFUSALS}). */
const SHORT_LIVED_MS = 2000;
/**
 * Close codes that refuse the session itself (1007 invalid payload, 1008 policy): reopening
 * would be refused again. So is a second short-lived socket in a row. Either waits for the
 * retry interval instead of redialling at once, so a refusal cannot become a tight loop.
 */
const REFUSALS: ReadonlySet<number> = new Set([1007, 1008]);

/** Azure Speech continuous recognition; one instance per call. */
export class AzureSpeechStt implements SttService {
  readonly #name: string;
  readonly #key: string;
  readonly #url: string;
  readonly #rate: number;
  readonly #language: string;
  readonly #timeoutMs: number;
  readonly #log: Logger;
  readonly #conn: SttConnection;
  #requestId = "";
  #muted = false;
  readonly #context: string;
  /** When the current socket opened. */
  #openedAt = 0;
  /** Sockets in a row that closed soon after opening. */
  #shortLived = 0;
  #resampler: Resampler | undefined;

  /** Check the options now (key, region or url, rate); nothing is dialled until start. */
  constructor(opts: ServiceOptions) {
    this.#name = opts.provider;
    if (!opts.apiKey) throw new FlowcatError("config", `${this.#name}: missing Speech key`);
    this.#key = opts.apiKey;
    const o = opts.options ?? {};
    const root = speechRoot(this.#name, "stt", { url: opts.baseUrl, options: o });
    const rate = o.sample_rate ?? 16000;
    if (typeof rate !== "number" || !AZURE_STT_RATES.includes(rate)) {
      throw new FlowcatError(
        "config",
        `${this.#name}: options.sample_rate must be ${AZURE_STT_RATES.join(" or ")}`,
      );
    }
    this.#rate = rate;
    this.#language = opts.language ?? AZURE_STT_DEFAULT_LANGUAGE;
    const query = new URLSearchParams({ language: this.#language, format: "simple" });
    const silence = positiveOption(this.#name, o, "segmentation_silence_ms", true);
    if (silence !== undefined) query.set("segmentationSilenceTimeoutMs", String(silence));
    this.#context = speechContextBody(silence);
    this.#url = `${root}${AZURE_STT_PATH}?${query}`;
    this.#timeoutMs = opts.timeoutMs ?? 15_000;
    this.#log = opts.logger ?? silentLogger;
    this.#conn = new SttConnection({
      provider: this.#name,
      log: this.#log,
      retryIntervalMs: positiveOption(this.#name, o, "retry_interval_ms") ?? 2000,
      reconnectDelayMs: 0,
      // Held while the socket is reopened, so words said in the gap are still heard.
      backlogMaxBytes: rate * 2 * BACKLOG_SECONDS,
      secret: this.#key,
      dial: (signal) =>
        openSocket(this.#url, speechUpgradeHeaders(this.#key), {
          provider: this.#name,
          timeoutMs: this.#timeoutMs,
          signal,
        }),
      attach: (ws) => this.#attach(ws),
      drain: (ws, held) => {
        for (const bytes of held) {
          ws.send(encodeBinaryMessage("audio", this.#requestId, undefined, bytes));
        }
      },
      refusal: (code, reason) => this.#refusal(code, reason),
    });
  }

  /** The provider name from the config (`azure`). */
  name(): string {
    return this.#name;
  }

  /** The socket URL (no key in it). */
  url(): string {
    return this.#url;
  }

  /** Open the socket and start the first turn; a refused key throws kind `auth`. */
  async start(_params: StartParams): Promise<void> {
    await this.#conn.start();
  }

  /** Send audio (silence while muted) and return the frames that arrived since the last call. */
  runStt(audio: AudioFrame): Promise<Frame[]> {
    return this.#conn.exchange(() => {
      if (audio.pcm.length > 0) this.#sendAudio(audio);
    });
  }

  /** While muted, silence of the same length replaces the caller's audio. */
  setMuted(muted: boolean): void {
    this.#muted = muted;
  }

  /** Send the end-of-audio marker, close the socket. Idempotent. */
  stop(): Promise<void> {
    return this.#conn.stop((ws) =>
      ws.send(encodeBinaryMessage("audio", this.#requestId, undefined, undefined))
    );
  }

  // ---------------------------------------------------------------- socket

  /** A new socket: the connection's speech.config, then the first turn's opening. */
  #attach(ws: WebSocket): void {
    this.#openedAt = performance.now();
    ws.addEventListener("message", (ev) => this.#onMessage(ev.data));
    // As the SDK does: the connection's speech.config carries the first turn's request id.
    this.#requestId = newRequestId();
    ws.send(
      encodeTextMessage("speech.config", this.#requestId, "application/json", speechConfigBody()),
    );
    this.#openTurn(ws);
  }

  /** A drop that must wait for the retry interval rather than be redialled at once. */
  #refusal(code: number, reason: string): FlowcatError | undefined {
    const short = performance.now() - this.#openedAt < SHORT_LIVED_MS;
    this.#shortLived = short ? this.#shortLived + 1 : 0;
    if (!REFUSALS.has(code) && this.#shortLived < 2) return undefined;
    const why = `code ${code}${reason ? `: ${redact(reason, this.#key).slice(0, 200)}` : ""}`;
    return new FlowcatError("closed", `${this.#name}: the service closed the socket (${why})`);
  }

  /** `speech.context`, then the WAV header, under the current request id: a turn's opening. */
  #openTurn(ws: WebSocket): void {
    ws.send(
      encodeTextMessage("speech.context", this.#requestId, "application/json", this.#context),
    );
    ws.send(encodeBinaryMessage("audio", this.#requestId, "audio/x-wav", wavHeader(this.#rate)));
  }

  #onMessage(data: unknown): void {
    let msg: SpeechMessage;
    try {
      msg = decodeSpeechMessage(data);
    } catch (err) {
      this.#log.debug(`${this.#name}: undecodable message`, { err: String(err) });
      return;
    }
    switch (msg.path) {
      case "speech.hypothesis": {
        const text = jsonBody(msg)?.Text;
        if (typeof text === "string" && text.trim() !== "") {
          this.#conn.emit(makeFrame("InterimTranscription", this.#transcript(text.trim())));
        }
        return;
      }
      case "speech.phrase":
        return this.#onPhrase(jsonBody(msg) ?? {});
      case "turn.end": {
        // The service ended the turn while the call goes on: start another on this socket.
        const ws = this.#conn.live;
        if (ws !== undefined) {
          this.#requestId = newRequestId();
          this.#openTurn(ws);
        }
        return;
      }
      default:
        // turn.start, speech.startDetected, speech.endDetected: nothing a transcript needs.
        return;
    }
  }

  #onPhrase(body: Record<string, unknown>): void {
    const status = String(body.RecognitionStatus ?? "");
    const failed = FAILED_STATUS[status];
    if (failed !== undefined) {
      this.#conn.report(
        new FlowcatError(failed, `${this.#name}: recognition failed (${status})`),
      );
      return;
    }
    const text = typeof body.DisplayText === "string" ? body.DisplayText.trim() : "";
    // NoMatch, InitialSilenceTimeout, BabbleTimeout, EndOfDictation: nothing was said.
    if (status !== "Success" || text === "") return;
    this.#conn.emit(
      makeFrame("Transcription", { ...this.#transcript(text), final: true, endOfUtterance: true }),
    );
  }

  #transcript(text: string): { text: string; userId: string; language: string } {
    return { text, userId: "user", language: this.#language };
  }

  // ---------------------------------------------------------------- sending

  #sendAudio(audio: AudioFrame): void {
    const ws = this.#conn.live;
    // Held also while an open socket is closing: its close event starts the reconnect.
    if (ws === undefined && !this.#conn.holding) return;
    if (this.#resampler?.inRate !== audio.sampleRate) {
      this.#resampler = new Resampler(audio.sampleRate, this.#rate);
    }
    const pcm = this.#resampler.process(audio.pcm);
    if (pcm.length === 0) return;
    // A copy (int16ToBytes makes one): the caller may reuse its buffer while this waits.
    const bytes = this.#muted ? new Uint8Array(pcm.length * 2) : int16ToBytes(pcm);
    if (ws !== undefined) ws.send(encodeBinaryMessage("audio", this.#requestId, undefined, bytes));
    else this.#conn.hold(bytes);
  }
}

/** Factory for the server's provider registry: an Azure Speech STT client. */
export function createAzureStt(opts: ServiceOptions): SttService {
  return new AzureSpeechStt(opts);
}
