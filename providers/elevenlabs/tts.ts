/**
 * ElevenLabs streaming text-to-speech over the `stream-input` WebSocket.
 *
 * Wire facts (checked against ElevenLabs' AsyncAPI for
 * `GET /v1/text-to-speech/{voice_id}/stream-input`,
 * https://elevenlabs.io/docs/api-reference/text-to-speech/v-1-text-to-speech-voice-id-stream-input):
 * - URL `wss://api.elevenlabs.io/v1/text-to-speech/{voice_id}/stream-input` with query
 *   `model_id`, `output_format` (`pcm_8000` .. `pcm_44100` are raw s16le) and `language_code`.
 * - Auth: the `xi-api-key` request header on the handshake. The first message may carry the key
 *   instead ("not needed if present in the header"); the header keeps the key out of every
 *   message body, and Deno's `new WebSocket(url, { headers })` can send it.
 * - Client messages: `{text:" ", voice_settings?, generation_config?}` first, then text that
 *   ends with one space (`flush: true` forces generation now), then `{text:""}` to end input.
 * - Server messages: `{audio: base64, normalizedAlignment?, alignment?}` chunks, then
 *   `{isFinal: true}`; errors arrive as `{message, error, code}` and the socket then closes
 *   with 1008 (seen in elevenlabs/elevenlabs-python#167 and elevenlabs-docs#426).
 * - `eleven_flash_v2_5` is served on this socket (ElevenLabs support, quoted in
 *   livekit/agents#3235); Rachel `21m00Tcm4TlvDq8ikWAM` is a premade voice (elevenlabs/ui).
 *
 * One socket per {@link ElevenLabsTts.runTts} call: the stream-input socket is one
 * generation with one voice and settings, and the server drops a socket idle for 20 s
 * (elevenlabs-docs#426), so keeping one open between turns would need keep-alives and
 * reconnects. The price is one TLS + WebSocket handshake (~100-200 ms) per utterance; the
 * multi-context socket (`multi-stream-input`) would avoid it and is left for later.
 *
 * @example
 * ```ts
 * import { createElevenLabsTts } from "@flowcat/flowcat/tts/elevenlabs";
 * declare const key: string;
 * const tts = createElevenLabsTts({ provider: "elevenlabs", apiKey: key });
 * for await (const frame of tts.runTts("Hello there.")) console.log(frame.kind);
 * ```
 *
 * Permissions: `--allow-net=api.elevenlabs.io:443` (or the `url` given).
 * @module
 */

import { FlowcatError, type FlowcatErrorKind } from "../../core/errors.ts";
import { type Frame, makeFrame, type StartParams, ttsAudio } from "../../core/frames.ts";
import type { TtsService } from "../../core/seams.ts";
import type { ServiceOptions } from "../service_options.ts";

export type { ServiceOptions } from "../service_options.ts";
import {
  closeSocket,
  decodeBase64,
  isJsonObject,
  Mailbox,
  openSocket,
  parseJsonMessage,
  redact,
  wsRoot,
} from "../ws_client.ts";
import { PcmAssembler, ttsUsageFrame } from "../tts/_shared.ts";
import { ELEVENLABS_DEFAULT_BASE_URL, ELEVENLABS_DEFAULT_MODEL } from "./defaults.ts";
export { ELEVENLABS_DEFAULT_BASE_URL, ELEVENLABS_DEFAULT_MODEL } from "./defaults.ts";

/** Default voice: Rachel, a premade voice every account has. */
export const ELEVENLABS_DEFAULT_VOICE = "21m00Tcm4TlvDq8ikWAM";
/** Default output rate (`output_format=pcm_24000`). */
export const ELEVENLABS_DEFAULT_SAMPLE_RATE = 24000;
/** Rates with a raw PCM `output_format` (`pcm_<rate>`). */
export const ELEVENLABS_PCM_RATES: readonly number[] = [8000, 16000, 22050, 24000, 44100];

/** One event from the socket, queued for the generator. */
type SocketEvent =
  | { type: "message"; data: unknown }
  | { type: "closed"; code: number; reason: string };

/** The ElevenLabs stream-input text-to-speech service. */
export class ElevenLabsTts implements TtsService {
  readonly #name: string;
  readonly #apiKey: string;
  readonly #root: string;
  readonly #model: string;
  readonly #voice: string;
  readonly #rate: number;
  readonly #language?: string;
  readonly #timeoutMs: number;
  readonly #firstMessage: Record<string, unknown>;
  readonly #open = new Set<WebSocket>();

  /** Make the service; a missing key or an unusable rate is a config error here. */
  constructor(opts: ServiceOptions) {
    this.#name = opts.provider;
    if (!opts.apiKey) throw new FlowcatError("config", `${this.#name}: apiKey is required`);
    this.#apiKey = opts.apiKey;
    this.#root = wsRoot(opts.baseUrl ?? ELEVENLABS_DEFAULT_BASE_URL);
    this.#model = opts.model ?? ELEVENLABS_DEFAULT_MODEL;
    this.#voice = opts.voice ?? ELEVENLABS_DEFAULT_VOICE;
    this.#rate = pickRate(this.#name, opts.options);
    // ElevenLabs takes ISO 639-1 (`en`), not a full BCP-47 tag.
    this.#language = opts.language?.split("-")[0].toLowerCase();
    this.#timeoutMs = opts.timeoutMs ?? 15_000;
    const o = opts.options ?? {};
    this.#firstMessage = { text: " " };
    if (isJsonObject(o.voice_settings)) this.#firstMessage.voice_settings = o.voice_settings;
    if (isJsonObject(o.generation_config)) {
      this.#firstMessage.generation_config = o.generation_config;
    }
  }

  /** Provider name (as configured). */
  name(): string {
    return this.#name;
  }

  /** Rate of the audio {@link runTts} yields, from `output_format`. */
  sampleRate(): number {
    return this.#rate;
  }

  /** Nothing to warm: each utterance dials its own socket. */
  start(_params: StartParams): Promise<void> {
    return Promise.resolve();
  }

  /** Close any socket still open (an utterance in flight ends with a `closed` error). */
  async stop(): Promise<void> {
    await Promise.all([...this.#open].map((ws) => closeSocket(ws)));
  }

  /** `wss://.../v1/text-to-speech/{voice}/stream-input?...` for this service. */
  url(): string {
    const q = new URLSearchParams({ model_id: this.#model, output_format: `pcm_${this.#rate}` });
    if (this.#language) q.set("language_code", this.#language);
    return `${this.#root}/v1/text-to-speech/${encodeURIComponent(this.#voice)}/stream-input?${q}`;
  }

  /**
   * TtsStarted, TtsAudio chunks as they arrive, a `tts_usage` Metrics frame, TtsStopped. The
   * socket opens before TtsStarted, so a refused key or a timeout throws with nothing emitted.
   * Aborting `signal` closes the socket and ends the stream at once, without TtsStopped.
   */
  async *runTts(text: string, signal?: AbortSignal): AsyncGenerator<Frame> {
    if (signal?.aborted) return;
    const contextId = crypto.randomUUID();
    if (text.trim() === "") {
      // Nothing to say: no socket, no usage.
      yield makeFrame("TtsStarted", { contextId });
      yield makeFrame("TtsStopped", { contextId });
      return;
    }
    const ws = await openSocket(this.url(), { "xi-api-key": this.#apiKey }, {
      provider: this.#name,
      timeoutMs: this.#timeoutMs,
      signal,
    }).catch((err) => {
      if (signal?.aborted) return undefined;
      throw err;
    });
    if (!ws) return;
    this.#open.add(ws);
    const events = new Mailbox<SocketEvent>();
    ws.addEventListener("message", (e) => events.push({ type: "message", data: e.data }));
    ws.addEventListener("close", (e) => {
      this.#open.delete(ws);
      events.push({ type: "closed", code: e.code, reason: e.reason });
    });
    const onAbort = () => events.poke();
    signal?.addEventListener("abort", onAbort);
    const pcm = new PcmAssembler();
    try {
      ws.send(JSON.stringify(this.#firstMessage));
      // The API wants every text chunk to end with a space; flush generates it all right away.
      ws.send(JSON.stringify({ text: `${text.trim()} `, flush: true }));
      ws.send(JSON.stringify({ text: "" }));
      yield makeFrame("TtsStarted", { contextId });
      while (true) {
        // Checked before waiting too: an abort while suspended at a yield finds no waiter.
        if (signal?.aborted) return;
        const ev = await events.next();
        if (signal?.aborted) return;
        if (!ev) continue;
        if (ev.type === "closed") throw this.#closedError(ev.code, ev.reason);
        const msg = parseJsonMessage(ev.data);
        if (!msg) throw new FlowcatError("protocol", `${this.#name}: unreadable server message`);
        if (typeof msg.error === "string" || (typeof msg.message === "string" && !msg.audio)) {
          throw this.#serverError(msg);
        }
        if (typeof msg.audio === "string" && msg.audio) {
          const samples = pcm.push(decodeBase64(this.#name, msg.audio));
          if (samples.length) {
            yield ttsAudio({ pcm: samples, sampleRate: this.#rate, numChannels: 1 }, contextId);
          }
        }
        if (msg.isFinal === true) break;
      }
      yield ttsUsageFrame(this.#name, this.#model, text.length);
      yield makeFrame("TtsStopped", { contextId });
    } finally {
      signal?.removeEventListener("abort", onAbort);
      await closeSocket(ws);
      this.#open.delete(ws);
    }
  }

  #serverError(msg: Record<string, unknown>): FlowcatError {
    const code = typeof msg.error === "string" ? msg.error : "";
    const text = typeof msg.message === "string" ? msg.message : code || "unknown error";
    const kind: FlowcatErrorKind = /api.?key|auth|unauthori[sz]ed|permission/i.test(
        `${code} ${text}`,
      )
      ? "auth"
      : "other";
    const detail = code && !text.includes(code) ? `${text} (${code})` : text;
    return new FlowcatError(kind, `${this.#name}: ${redact(detail, this.#apiKey)}`);
  }

  #closedError(code: number, reason: string): FlowcatError {
    const why = reason ? `: ${redact(reason, this.#apiKey).slice(0, 300)}` : "";
    const kind: FlowcatErrorKind = /api.?key|auth|unauthori[sz]ed/i.test(reason)
      ? "auth"
      : "closed";
    return new FlowcatError(
      kind,
      `${this.#name}: socket closed before the audio ended (code ${code})${why}`,
    );
  }
}

/** Make an {@link ElevenLabsTts}. */
export const createElevenLabsTts = (opts: ServiceOptions): ElevenLabsTts => new ElevenLabsTts(opts);

function pickRate(provider: string, options: Record<string, unknown> | undefined): number {
  const o = options ?? {};
  let rate: unknown = o.sample_rate ?? o.sampleRate;
  if (rate === undefined && typeof o.output_format === "string") {
    rate = Number(/^pcm_(\d+)$/.exec(o.output_format)?.[1] ?? NaN);
  }
  rate ??= ELEVENLABS_DEFAULT_SAMPLE_RATE;
  if (typeof rate !== "number" || !ELEVENLABS_PCM_RATES.includes(rate)) {
    throw new FlowcatError(
      "config",
      `${provider}: sample rate must be one of ${
        ELEVENLABS_PCM_RATES.join(", ")
      } (raw PCM output formats)`,
    );
  }
  return rate;
}
