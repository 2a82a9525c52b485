/**
 * Audio toolkit: G.711, resampling, WAV, recording, DTMF (RFC 4733, Goertzel detection, tone
 * generation), an answering-machine beep detector, energy voice-activity detection and an
 * adaptive RTP playout jitter buffer. All pure and synchronous, and no npm package: Silero
 * (onnxruntime-web), RNNoise and Opus (wasm from npm) are their own entry points,
 * `./audio/silero` (core/audio/vad_silero.ts), `./audio/rnnoise` (core/audio/rnnoise.ts) and
 * `./audio/opus` (core/audio/opus.ts). Permissions: none.
 *
 * @example
 * ```ts
 * import { Resampler, ulawDecode, ulawEncode } from "@flowcat/flowcat/audio";
 * declare const payload: Uint8Array; // one 20 ms G.711 mu-law packet
 * const up = new Resampler(8000, 16000);
 * const pcm16k = up.process(ulawDecode(payload));
 * ```
 * @module
 */

export {
  ALAW_SILENCE,
  alawDecode,
  alawEncode,
  alawToLinear,
  linearToAlaw,
  linearToUlaw,
  ULAW_SILENCE,
  ulawDecode,
  ulawEncode,
  ulawToLinear,
} from "./g711.ts";
export {
  bytesToInt16,
  concatInt16,
  dbfs,
  int16ToBytes,
  int16ToFloat32,
  mixSaturate,
  noise,
  peak,
  rms,
  sine,
  type SineOptions,
} from "./pcm.ts";
export {
  DEFAULT_PASSBAND,
  DEFAULT_STOPBAND_DB,
  resample,
  Resampler,
  type ResamplerOptions,
  transitionFor,
} from "./resample.ts";
export { audioFrameToWav, decodeWav, encodeWav, WAV_HEADER_BYTES, wavHeader } from "./wav.ts";
export { AudioRecorder, type AudioRecorderOptions, type RecorderLeg } from "./recorder.ts";
export {
  DTMF_COL_FREQS,
  DTMF_FREQS,
  DTMF_KEYPAD,
  DTMF_KEYS,
  DTMF_ROW_FREQS,
  isKeypadEntry,
  parseDtmfKeys,
} from "./dtmf_keys.ts";
export {
  decodeTelephoneEvent,
  dtmfEventPackets,
  type DtmfPacket,
  type DtmfPacketOptions,
  encodeTelephoneEvent,
  eventToKey,
  keyToEvent,
  Rfc4733Receiver,
  TELEPHONE_EVENT_BYTES,
  type TelephoneEvent,
} from "./dtmf_rfc4733.ts";
export { DtmfDetector, type DtmfDetectorOptions } from "./dtmf_detect.ts";
export { type Beep, BeepDetector, type BeepDetectorOptions } from "./beep_detect.ts";
export {
  type AmdEvent,
  type AmdOptions,
  type AmdReason,
  AnsweringMachineDetector,
  DEFAULT_TRANSCRIPT_WAIT_MS,
} from "./amd.ts";
export { judgeGreetingText, MONOLOGUE_WORDS } from "./amd_transcript.ts";
export { type DtmfToneOptions, dtmfTones } from "./dtmf_tone.ts";
export {
  DEFAULT_START_GAP_SECS,
  SILERO_START_GAP_SECS,
  VadStateMachine,
  type VadStateOptions,
  validateVadParams,
  VOLUME_CEIL_DBFS,
  VOLUME_FLOOR_DBFS,
  volumeOf,
  volumeOfMeanSquare,
} from "./vad_state.ts";
export { EnergyVad, type EnergyVadOptions } from "./vad_energy.ts";
export {
  emptyJitterStats,
  JitterBuffer,
  type JitterBufferOptions,
  type JitterBufferStats,
  type JitterPush,
  LOST,
  type Lost,
} from "./jitter_buffer.ts";
export { EchoCanceller, type EchoCancellerOptions } from "./aec.ts";
export { EchoReference } from "./aec_reference.ts";
export { RealFft, type RealFftOptions } from "./fft.ts";
