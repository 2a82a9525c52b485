/**
 * OpenAI Realtime wire format, outbound: the client events Flowcat sends, in the GA and beta
 * shapes, and caller audio as the wire wants it. No I/O. The inbound side is `openai_inbound.ts`.
 * See `shared/reference/realtime.md` section B and docs/realtime-openai.md.
 * @module
 */

import { ulawEncode } from "../../core/audio/g711.ts";
import { Resampler } from "../../core/audio/resample.ts";
import type { AudioFrame, ToolDecl } from "../../core/frames.ts";
import { pcm16ToBase64 } from "../realtime/_shared.ts";

/**
 * Which OpenAI Realtime dialect: the GA protocol, the older beta one (`OpenAI-Beta` header), or
 * xAI's (GA event names; its own flatter session shape, see docs/providers/xai.md).
 */
export type OpenAIRealtimeProtocol = "ga" | "beta" | "xai";

/** Sample rate of OpenAI Realtime PCM in both directions. */
export const OPENAI_PCM_RATE = 24000;

/**
 * The session's audio format, both ways: `pcm16` (24 kHz PCM16) or `g711_ulaw` (8 kHz mu-law,
 * GA `audio/pcmu`), which a telephone leg carries as it is.
 */
export type OpenAIAudioFormat = "pcm16" | "g711_ulaw";

/** Sample rate of an audio format. */
export function openAIFormatRate(format: OpenAIAudioFormat): number {
  return format === "g711_ulaw" ? 8000 : OPENAI_PCM_RATE;
}

/** Server-VAD values sent in `turn_detection`. */
export interface OpenAITurnDetection {
  threshold: number;
  prefixPaddingMs: number;
  silenceDurationMs: number;
  /** Let the server cancel the active response when the caller starts talking. */
  interruptResponse: boolean;
}

/** Everything a full `session.update` carries. */
export interface OpenAISessionConfig {
  instructions: string;
  voice: string;
  tools: readonly ToolDecl[];
  transcriptionModel: string;
  turnDetection: OpenAITurnDetection;
  /** Audio both ways (default `pcm16`). */
  audioFormat?: OpenAIAudioFormat;
}

/** A client event: a JSON object with a `type`. */
export type ClientEvent = { type: string } & Record<string, unknown>;

/** Tools as OpenAI function tools. */
export function openAITools(tools: readonly ToolDecl[]): Record<string, unknown>[] {
  return tools.map((t) => ({
    type: "function",
    name: t.name,
    description: t.description,
    parameters: t.params,
  }));
}

function turnDetection(td: OpenAITurnDetection): Record<string, unknown> {
  return {
    type: "server_vad",
    threshold: td.threshold,
    prefix_padding_ms: td.prefixPaddingMs,
    silence_duration_ms: td.silenceDurationMs,
    create_response: true,
    interrupt_response: td.interruptResponse,
  };
}

/** The first, full `session.update` in the dialect's shape. */
export function sessionUpdateEvent(
  protocol: OpenAIRealtimeProtocol,
  cfg: OpenAISessionConfig,
): ClientEvent {
  const tools = openAITools(cfg.tools);
  if (protocol === "beta") {
    return {
      type: "session.update",
      session: {
        modalities: ["audio", "text"],
        instructions: cfg.instructions,
        voice: cfg.voice,
        input_audio_format: cfg.audioFormat ?? "pcm16",
        output_audio_format: cfg.audioFormat ?? "pcm16",
        input_audio_transcription: { model: cfg.transcriptionModel },
        turn_detection: turnDetection(cfg.turnDetection),
        tools,
        tool_choice: "auto",
      },
    };
  }
  const format = cfg.audioFormat === "g711_ulaw"
    ? { type: "audio/pcmu" }
    : { type: "audio/pcm", rate: OPENAI_PCM_RATE };
  if (protocol === "xai") return xaiSessionUpdate(cfg, format);
  return {
    type: "session.update",
    session: {
      type: "realtime",
      output_modalities: ["audio"],
      instructions: cfg.instructions,
      audio: {
        input: {
          format,
          transcription: { model: cfg.transcriptionModel },
          turn_detection: turnDetection(cfg.turnDetection),
        },
        output: { format, voice: cfg.voice },
      },
      tools,
      tool_choice: "auto",
    },
  };
}

/** xAI's `session.update`: voice and turn detection at the top, formats under `audio`. */
function xaiSessionUpdate(cfg: OpenAISessionConfig, format: Record<string, unknown>): ClientEvent {
  const td = cfg.turnDetection;
  return {
    type: "session.update",
    session: {
      instructions: cfg.instructions,
      voice: cfg.voice,
      turn_detection: {
        type: "server_vad",
        threshold: td.threshold,
        prefix_padding_ms: td.prefixPaddingMs,
        silence_duration_ms: td.silenceDurationMs,
      },
      audio: { input: { format }, output: { format } },
      tools: openAITools(cfg.tools),
    },
  };
}

/** A mid-call `session.update` changing only the instructions and tools. */
export function instructionsUpdateEvent(
  protocol: OpenAIRealtimeProtocol,
  instructions: string,
  tools: readonly ToolDecl[],
): ClientEvent {
  const session: Record<string, unknown> = {
    instructions,
    tools: openAITools(tools),
    tool_choice: "auto",
  };
  // GA rejects a session.update without the session type.
  return {
    type: "session.update",
    session: protocol === "ga" ? { type: "realtime", ...session } : session,
  };
}

/** A user text message (the kickoff). */
export function userTextEvent(text: string): ClientEvent {
  return {
    type: "conversation.item.create",
    item: { type: "message", role: "user", content: [{ type: "input_text", text }] },
  };
}

/** A function result; `output` is the text the model reads. */
export function functionOutputEvent(callId: string, output: string): ClientEvent {
  return {
    type: "conversation.item.create",
    item: { type: "function_call_output", call_id: callId, output },
  };
}

/**
 * The text of a tool result: a string is passed as is (it already is what the model should
 * read), anything else as JSON; `undefined` becomes `{}`.
 */
export function toolOutputText(result: unknown): string {
  if (typeof result === "string") return result;
  if (result === undefined) return "{}";
  try {
    return JSON.stringify(result) ?? "null";
  } catch {
    return String(result);
  }
}

/** Mono by averaging interleaved channels. */
function downmix(pcm: Int16Array, channels: number): Int16Array {
  const n = Math.floor(pcm.length / channels);
  const out = new Int16Array(n);
  for (let i = 0; i < n; i++) {
    let acc = 0;
    for (let c = 0; c < channels; c++) acc += pcm[i * channels + c];
    out[i] = Math.round(acc / channels);
  }
  return out;
}

/**
 * Caller audio at any rate and channel count -> base64 mono audio in the session's format (24
 * kHz PCM16 or 8 kHz mu-law) for `input_audio_buffer.append`. Streaming: one per call, the
 * resampler keeps its state (and is remade when the input rate changes); audio already at the
 * format's rate is not resampled. The resampled samples are encoded at once, so they are lent
 * (one reused buffer).
 */
export class InputAudioEncoder {
  readonly #format: OpenAIAudioFormat;
  readonly #rate: number;
  #resampler: Resampler | undefined;

  /** An encoder for `format` (default `pcm16`). */
  constructor(format: OpenAIAudioFormat = "pcm16") {
    this.#format = format;
    this.#rate = openAIFormatRate(format);
  }

  /** Base64 of the next samples in the format; `undefined` when the chunk yields none yet. */
  encode(audio: AudioFrame): string | undefined {
    let pcm = audio.numChannels > 1 ? downmix(audio.pcm, audio.numChannels) : audio.pcm;
    if (audio.sampleRate !== this.#rate) {
      if (this.#resampler?.inRate !== audio.sampleRate) {
        this.#resampler = new Resampler(audio.sampleRate, this.#rate);
      }
      pcm = this.#resampler.processLent(pcm);
    }
    if (pcm.length === 0) return undefined;
    return this.#format === "g711_ulaw" ? ulawEncode(pcm).toBase64() : pcm16ToBase64(pcm);
  }
}
