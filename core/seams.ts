// Over 400 lines: every interface an embedder or provider implements, one contract in one file.
/**
 * Trait seams: the interfaces an embedder or a provider implements.
 *
 * A seam that is synchronous for most implementations but must do I/O or wasm inference for some
 * (RemoteBrain over HTTP, Silero through onnxruntime-web) returns `T | Promise<T>`; callers
 * `await` only when they get a promise. See docs/decisions.md.
 * @module
 */

import type {
  AudioFrame,
  Frame,
  KeypadEntry,
  LlmContext,
  LlmTokenUsage,
  StartParams,
  ToolDecl,
  TransferOutcome,
  TurnParams,
  TurnPrediction,
  VadParams,
  VadState,
} from "./frames.ts";

export type { ToolDecl } from "./frames.ts";

// ---------------------------------------------------------------- media transport

/**
 * The stop reason of a leg whose peer stopped sending media without hanging up (a carrier
 * socket silent past its limit): nobody is left to hear the call, as when the caller hangs up.
 */
export const MEDIA_STOPPED = "carrier media stopped";

/** What a media transport delivers to the pipeline. */
export type MediaIn =
  | { type: "start"; callId: string }
  | {
    type: "audio";
    audio: AudioFrame;
    /**
     * The PCM is lent: valid only until `deliver` returns (push mode), after which the leg
     * decodes the next message into the same memory. A receiver that keeps it copies it.
     */
    lent?: boolean;
  }
  | { type: "dtmf"; key: KeypadEntry }
  | {
    type: "stop";
    /** Why the leg stopped, when it was not the caller hanging up (the call's End reason). */
    reason?: string;
  };

/** How a {@link MediaTransport.warmTransfer} goes. */
export interface WarmTransferOptions {
  /**
   * The agent will speak a briefing to the target: the bridge waits until it has played out.
   * False bridges as soon as the target answers.
   */
  brief: boolean;
  /** The target answered: from now on the agent's audio goes to the target, not the caller. */
  onConsulting(): void;
}

/** A call's media leg (carrier WebSocket, SIP/RTP, WebRTC). */
export interface MediaTransport {
  /** Next inbound event; `undefined` once the leg is closed. */
  recv(): Promise<MediaIn | undefined>;
  /** Send audio (any rate; the transport converts to what the leg needs). */
  sendAudio(audio: AudioFrame): Promise<void>;
  /** Flush the far end's playback (barge-in); a no-op for RTP. */
  sendClear(): Promise<void>;
  /** Sample rate of the leg (8000 for telephony). */
  carrierRate(): number;
  /** Close the leg; idempotent. */
  close?(): Promise<void>;
  /** Send key presses to the far end (RFC 4733 on SIP); optional. */
  sendDtmf?(keys: readonly KeypadEntry[]): Promise<void>;
  /**
   * Whether `sendDtmf` can press keys on this call (a SIP peer that agreed to RFC 4733
   * telephone-events); optional, yes when absent. When no, the output sends the keys in-band.
   */
  canSendDtmf?(): boolean;
  /**
   * Hand the call to `target` (a SIP URI, or a number the leg knows how to reach); optional.
   * Resolves once the far end took the call over or failed to; the pipeline ends the call on
   * success.
   */
  transfer?(target: string): Promise<TransferOutcome>;
  /**
   * Warm transfer, optional: dial `target` on a second leg, put the caller on hold and let the
   * agent speak to the target (`opts.onConsulting` fires when the target answers), then bridge
   * the caller and the target. Resolves with the final outcome; the pipeline ends the call on
   * success.
   */
  warmTransfer?(target: string, opts: WarmTransferOptions): Promise<TransferOutcome>;
  /**
   * Push mode, optional: from now on call `deliver` with each inbound event, and with `undefined`
   * once the leg is closed, instead of being read with {@link MediaTransport.recv}. A leg whose
   * events arrive as callbacks (a WebSocket) offers it, so the call needs no reader task and no
   * promise per message. Events still waiting to be read are delivered first, in order.
   */
  listen?(deliver: (m: MediaIn | undefined) => void): void;
  /**
   * Media this leg dropped so far, by reason (`overflow`, `late`, `barge_in`, ... as
   * docs/observability.md lists them), in packets or messages of about 20 ms; optional. Read
   * when the call ends, for its log line and `flowcat_frames_dropped_total`.
   */
  droppedMedia?(): Readonly<Record<string, number>>;
}

/**
 * A send that is already done: a {@link MediaTransport} or {@link MediaSocket} returns this
 * (fulfilled) promise when the data left synchronously and nothing can fail later, and a caller
 * may then skip attaching a handler (the output transport does, per 20 ms chunk: no promise or
 * job of its own per frame).
 */
export const SENT: Promise<void> = Promise.resolve();

/** Raw message from a host WebSocket. */
export type WsIn =
  | { type: "text"; data: string }
  | { type: "binary"; data: Uint8Array }
  | { type: "close" };

/** A message to send on a carrier WebSocket. */
export type WsOut = string | Uint8Array;

/** Host-provided raw WebSocket. */
export interface MediaSocket {
  /** Next message; `undefined` when closed. */
  recv(): Promise<WsIn | undefined>;
  /** Send a text message. */
  sendText(text: string): Promise<void>;
  /** Send a binary message. */
  sendBinary(bytes: Uint8Array): Promise<void>;
  /** Close the socket; idempotent. */
  close?(): Promise<void>;
  /**
   * Push mode, optional: deliver every message (those already queued first) to `deliver`, and
   * `undefined` once closed, instead of through {@link MediaSocket.recv}.
   */
  listen?(deliver: (m: WsIn | undefined) => void): void;
}

/** What a carrier serializer makes of one inbound message. */
export type SerIn =
  | {
    type: "start";
    callId: string;
    /** The carrier's stream id, when it has one distinct from the call id. */
    streamId?: string;
    /** Custom parameters the carrier passed through (e.g. the call token). */
    params?: Record<string, string>;
  }
  | {
    type: "audio";
    audio: AudioFrame;
    /** The PCM is lent until the next decode in the isolate (see `MediaIn`); copy to keep. */
    lent?: boolean;
  }
  | { type: "dtmf"; key: KeypadEntry }
  | { type: "mark"; name: string }
  | { type: "stop" }
  | { type: "ignore"; reason: string };

/** Pure, synchronous carrier framing. One instance per call (it remembers the stream id). */
export interface MediaSerializer {
  /** Decode one inbound message. Malformed input gives `ignore` with a reason, never a throw. */
  onMessage(msg: WsIn): SerIn;
  /** Encode PCM at {@link MediaSerializer.carrierRate} for the carrier. */
  encodeAudio(audio: AudioFrame): WsOut;
  /** The carrier's "clear playback" message, if it has one. */
  encodeClear(): WsOut | undefined;
  /** The carrier's mark message, if it has one. */
  encodeMark?(name: string): WsOut | undefined;
  /** Messages owed to the carrier because of the last inbound one (handshakes, pong); empty when none. */
  takeReplies?(): readonly WsOut[];
  /** Samples per outbound audio message the carrier wants, at carrierRate(). */
  chunkSamples?(): number;
  /** Sample rate the carrier streams at. */
  carrierRate(): number;
}

// ---------------------------------------------------------------- realtime (speech-to-speech)

/** Server-side voice-activity settings for a realtime model. */
export interface RealtimeVadSettings {
  /** When the model decides speech started (provider value, e.g. `START_SENSITIVITY_LOW`). */
  startSensitivity?: string;
  /** When the model decides speech ended (provider value, e.g. `END_SENSITIVITY_HIGH`). */
  endSensitivity?: string;
  /** Audio kept from before detected speech start, in milliseconds. */
  prefixPaddingMs?: number;
  /** Silence that ends the user's turn, in milliseconds. */
  silenceDurationMs?: number;
}

/** What a realtime model is connected with. */
export interface RealtimeSetup {
  /** Instructions the model starts with (the brain's current node prompt). */
  systemPrompt: string;
  /** Tools the model may call. */
  tools: ToolDecl[];
  /** Provider voice name. */
  voice?: string;
  /** Text that starts the conversation (the model speaks first). */
  kickoff?: string;
  /** Server-side voice-activity tuning; provider defaults when left out. */
  vad?: RealtimeVadSettings;
}

/** Event from a realtime model. */
export type RealtimeEvent =
  | { type: "audio_out"; audio: AudioFrame }
  | { type: "user_text"; text: string; final: boolean }
  | { type: "bot_text"; text: string; final: boolean }
  | { type: "tool_call"; id: string; name: string; args: Record<string, unknown> }
  | { type: "interrupted" }
  | { type: "turn_complete" }
  | { type: "usage"; usage: LlmTokenUsage }
  | { type: "closed"; reason?: string };

/** The sample rates a realtime model takes the caller's audio at and speaks at, in Hz. */
export interface RealtimeAudioRates {
  /** Rate of the audio `sendAudio` is given. */
  input: number;
  /** Rate of the model's `audio_out`. */
  output: number;
}

/** The rates of a model that does not say ({@link RealtimeLlm.audioRates}): 16 kHz in, 24 kHz out. */
export const DEFAULT_REALTIME_RATES: Readonly<RealtimeAudioRates> = Object.freeze({
  input: 16000,
  output: 24000,
});

/** A speech-to-speech model client. */
export interface RealtimeLlm {
  /** Open the session with the given prompt, tools and voice. */
  connect(setup: RealtimeSetup): Promise<void>;
  /**
   * Optional, asked once before `connect`: the rates this model will take and speak on a leg
   * that carries `legRate` Hz. A model that can work at the leg's own rate (the local echo, an
   * OpenAI session in G.711 on an 8 kHz leg) answers it, and the call then runs without a
   * resampler; without this method a model gets {@link DEFAULT_REALTIME_RATES}.
   */
  audioRates?(legRate: number): RealtimeAudioRates;
  /** Caller audio at the model's input rate (16 kHz unless `audioRates` said otherwise). */
  sendAudio(audio: AudioFrame): void | Promise<void>;
  /** Replace the system prompt and tools mid-call (after a brain transition). */
  updateSystem(prompt: string, tools: ToolDecl[]): Promise<void>;
  /** Answer the model's tool call `id` with `result`. */
  sendToolResult(id: string, result: unknown): Promise<void>;
  /** Next event; `undefined` once closed. */
  nextEvent(): Promise<RealtimeEvent | undefined>;
  /**
   * Push mode, optional: deliver every event (those already queued first) to `deliver` as it
   * arrives, and `undefined` once closed, instead of through {@link RealtimeLlm.nextEvent}. The
   * processor then needs no reader task and no promise per event.
   */
  listen?(deliver: (ev: RealtimeEvent | undefined) => void): void;
  /** Close the session; idempotent. */
  close(): Promise<void>;
  /**
   * Optional: have the model say `text` now (a brain transition's `say`). Without it the line
   * is folded into the new system prompt as an instruction.
   */
  say?(text: string): Promise<void>;
  /** Optional: a keypad press from the caller (carrier event or RFC 4733). */
  sendDtmf?(key: KeypadEntry): void | Promise<void>;
}

// ---------------------------------------------------------------- brain

/** What the brain decides on a tool call. */
export type BrainAction =
  | { type: "transition"; systemPrompt: string; tools: ToolDecl[]; say?: string; nodeId?: string }
  | { type: "stay"; result?: unknown }
  | { type: "end"; disposition?: string; say?: string };

/** Conversation decision logic, consulted between turns (never per audio frame). */
export interface AgentBrain {
  /** Prompt of the current node. */
  systemPrompt(): string;
  /** Tools offered on the current node. */
  tools(): ToolDecl[];
  /** Id of the current node. */
  currentNodeId(): string;
  /** Decide on a model tool call. A remote brain answers asynchronously. */
  onToolCall(name: string, args: Record<string, unknown>): BrainAction | Promise<BrainAction>;
  /** Whether the conversation reached a terminal node. */
  isFinished(): boolean;
  /** Variables collected so far. */
  collectedVars(): Record<string, unknown>;
}

// ---------------------------------------------------------------- session source (control plane)

/** A call resolved by the embedder's control plane. */
export interface ResolvedCall {
  /** Name of the realtime provider the call runs on, such as `gemini`. */
  provider: string;
  /** Opaque to the core: graph spec, runtime options, seed variables. */
  brainConfig: Record<string, unknown>;
  /** Whether the call already finished (it must not be run again). */
  isCompleted: boolean;
}

/** What is reported when a call ends. */
export interface Finalize {
  /** Usage counters of the call (tokens, durations) for billing and metrics. */
  usage: Record<string, unknown>;
  /** Variables the brain collected during the call. */
  collectedVars: Record<string, unknown>;
  /** Where the call recording was uploaded, if it was. */
  recordingUrl?: string;
  /** Where the call transcript was uploaded, if it was. */
  transcriptUrl?: string;
  /** Call outcome, such as the terminal node's disposition. */
  disposition?: string;
}

/** Where to upload an artifact. */
export interface UploadTarget {
  /** URL to PUT the bytes to. */
  uploadUrl: string;
  /** URL the artifact is reachable at afterwards (goes into {@link Finalize}). */
  publicUrl: string;
  /** Extra headers the PUT must carry (e.g. a content signature). */
  headers?: Record<string, string>;
}

/** Kind of artifact a call produces. */
export type ArtifactKind = "recording" | "transcript";

/** The embedder's control plane. */
export interface SessionSource {
  /** Look up the call `runId`, authenticated by its `token`. */
  resolve(runId: number, token: string): Promise<ResolvedCall>;
  /** Report that the call ended, with its usage, variables and artifacts. */
  complete(runId: number, token: string, finalize: Finalize): Promise<void>;
  /** Get where to upload an artifact of the call. */
  artifactUploadUrl(runId: number, token: string, kind: ArtifactKind): Promise<UploadTarget>;
  /** PUT `bytes` to an upload URL from {@link SessionSource.artifactUploadUrl}. */
  putBytes(url: string, bytes: Uint8Array, contentType: string): Promise<void>;
  /** Workflow tools the embedder offers on node `nodeId`, beyond the graph's own. */
  nodeTools(runId: number, token: string, nodeId: string): Promise<ToolDecl[]>;
  /** Run an embedder-side workflow tool; returns the result given to the model. */
  toolCall(
    runId: number,
    token: string,
    nodeId: string,
    tool: string,
    args: Record<string, unknown>,
  ): Promise<string>;
}

// ---------------------------------------------------------------- cascaded services

/** Speech-to-text service. */
export interface SttService {
  /** Service name, used in logs and metrics. */
  name(): string;
  /** Open the service (connections, models) for a call. */
  start(params: StartParams): Promise<void>;
  /** Feed audio; returns any transcription frames ready now. */
  runStt(audio: AudioFrame): Promise<Frame[]>;
  /** Ignore incoming audio while muted (an `SttMute` frame toggles it). */
  setMuted(muted: boolean): void;
  /** Segmented (batch) services: the user started speaking; begin a segment with pre-roll. */
  speechStarted?(): void;
  /** Segmented services: the user stopped speaking; transcribe the segment. */
  speechStopped?(): Promise<Frame[]>;
  /** Close the service; idempotent. */
  stop?(): Promise<void>;
}

/** Text-to-speech service. */
export interface TtsService {
  /** Service name, used in logs and metrics. */
  name(): string;
  /** Sample rate of the audio the service produces. */
  sampleRate(): number;
  /** Open the service (connections, voices) for a call. */
  start(params: StartParams): Promise<void>;
  /** TtsStarted, TtsAudio..., TtsStopped. Aborting `signal` stops synthesis mid-flight. */
  runTts(text: string, signal?: AbortSignal): AsyncIterable<Frame>;
  /** Close the service; idempotent. */
  stop?(): Promise<void>;
}

/** Language-model service. */
export interface LlmService {
  /** Service name, used in logs and metrics. */
  name(): string;
  /** Open the service for a call. */
  start(params: StartParams): Promise<void>;
  /** LlmResponseStart, LlmText..., optional FunctionCallsStarted, LlmResponseEnd. */
  runLlm(context: LlmContext, signal?: AbortSignal): AsyncIterable<Frame>;
  /** Set the tools the model may call from the next request on. */
  setTools(tools: ToolDecl[]): void;
  /** Close the service; idempotent. */
  stop?(): Promise<void>;
}

// ---------------------------------------------------------------- analyzers

/** Voice-activity analyzer. Model-backed ones may answer asynchronously. */
export interface VadAnalyzer {
  /** Sample rate the analyzer expects its input at. */
  sampleRate(): number;
  /** Classify one audio frame as speech or not. */
  analyze(audio: AudioFrame): VadState | Promise<VadState>;
  /** Change the start/stop thresholds and timings. */
  setParams(params: VadParams): void;
}

/** End-of-turn analyzer. */
export interface TurnAnalyzer {
  /** Predict whether the user finished their turn, given audio and the VAD state. */
  analyzeTurn(audio: AudioFrame, vad: VadState): TurnPrediction | Promise<TurnPrediction>;
  /** Change the end-of-turn thresholds. */
  setParams(params: TurnParams): void;
}
