/**
 * Cloud Text-to-Speech streaming synthesis over gRPC:
 * `/google.cloud.texttospeech.v1.TextToSpeech/StreamingSynthesize` on
 * `texttospeech.googleapis.com:443`, for Chirp 3 HD voices. One call per utterance: the
 * config, the text, a half-close; audio comes back in pieces while the rest is synthesized.
 *
 * Field numbers from googleapis/googleapis `google/cloud/texttospeech/v1/cloud_tts.proto`:
 * StreamingSynthesizeRequest `streaming_config` 1, `input` 2; StreamingSynthesizeConfig
 * `voice` 1 (VoiceSelectionParams `language_code` 1, `name` 2), `streaming_audio_config` 4
 * (StreamingAudioConfig `audio_encoding` 1 = PCM (7: headerless 16-bit little-endian),
 * `sample_rate_hertz` 2, `speaking_rate` 3, a double); StreamingSynthesisInput `text` 1;
 * StreamingSynthesizeResponse `audio_content` 1.
 *
 * @example
 * ```ts
 * import { streamingSynthesis } from "./tts_stream.ts";
 * declare const channel: import("../grpc.ts").GrpcChannel;
 * declare const headers: Record<string, string>;
 * const voice = { languageCode: "en-US", name: "en-US-Chirp3-HD-Charon" };
 * for await (const pcm of streamingSynthesis(channel, headers, voice, 24000, undefined, "Hi.")) {
 *   console.log(pcm.length);
 * }
 * ```
 * @module
 */

import type { GrpcChannel } from "../grpc.ts";
import { ProtoWriter, readMessage } from "../protobuf.ts";
import { PcmAssembler } from "../tts/_shared.ts";

/** The gRPC method. */
export const GOOGLE_TTS_STREAM_PATH =
  "/google.cloud.texttospeech.v1.TextToSpeech/StreamingSynthesize";
/** AudioEncoding PCM: 16-bit little-endian samples without a WAV header. */
const PCM = 7;

/** The voice of a synthesis. */
export interface TtsVoice {
  /** BCP-47 tag. */
  languageCode: string;
  /** Voice name (a Chirp 3 HD voice). */
  name: string;
}

/** The first request: voice and audio format. */
export function streamingConfigRequest(
  voice: TtsVoice,
  sampleRate: number,
  speakingRate: number | undefined,
): Uint8Array {
  const voiceParams = new ProtoWriter().string(1, voice.languageCode).string(2, voice.name);
  const audio = new ProtoWriter().int(1, PCM).int(2, sampleRate).double(3, speakingRate);
  const config = new ProtoWriter().message(1, voiceParams).message(4, audio);
  return new ProtoWriter().message(1, config).finish();
}

/** A request carrying text to speak. */
export function streamingInputRequest(text: string): Uint8Array {
  return new ProtoWriter().message(2, new ProtoWriter().string(1, text)).finish();
}

/**
 * The samples of `text` as they arrive. Ending the iteration early (or aborting `signal`)
 * cancels the call; a non-OK status throws the FlowcatError of grpc.ts.
 */
export async function* streamingSynthesis(
  channel: GrpcChannel,
  metadata: Record<string, string>,
  voice: TtsVoice,
  sampleRate: number,
  speakingRate: number | undefined,
  text: string,
  signal?: AbortSignal,
): AsyncGenerator<Int16Array> {
  const call = channel.bidi(GOOGLE_TTS_STREAM_PATH, metadata);
  const cancel = () => call.cancel();
  signal?.addEventListener("abort", cancel, { once: true });
  let done = false;
  try {
    call.write(streamingConfigRequest(voice, sampleRate, speakingRate));
    call.write(streamingInputRequest(text));
    call.end();
    const pcm = new PcmAssembler();
    for await (const msg of call.responses) {
      const samples = pcm.push(readMessage(msg).bytes(1));
      if (samples.length > 0) yield samples;
    }
    done = true;
  } finally {
    signal?.removeEventListener("abort", cancel);
    if (!done) call.cancel();
  }
}
