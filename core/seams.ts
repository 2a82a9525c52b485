/**
 * Trait seams: the interfaces an embedder or a provider implements.
 *
 * Deviation from the seed, on purpose: where the seed marks a seam "sync" but a real
 * implementation must do I/O or wasm inference (RemoteBrain over HTTP, Silero through
 * onnxruntime-web), the method returns `T | Promise<T>`; callers `await` only when they get a
 * promise. See docs/decisions.md.
 * @module
 */

import type {
  AudioChunk,
  AudioFrame,
  Frame,
  KeypadEntry,
  LlmContext,
  LlmTokenUsage,
  StartParams,
  ToolDecl,
  TurnParams,
  TurnPrediction,
  VadParams,
  VadState,
} from "./frames.ts";

export type { ToolDecl } from "./frames.ts";

// ---------------------------------------------------------------- media transport

/** What a media transport delivers to the pipeline. */
export type MediaIn =
  | { type: "start"; callId: string }
  | { type: "audio"; audio: AudioChunk }
  | { type: "dtmf"; key: KeypadEntry }
  | { type: "stop" };

/** A call's media leg (carrier WebSocket, SIP/RTP, WebRTC). */
export interface MediaTransport {
  /** Next inbound event; `undefined` once the leg is closed. */
  recv(): Promise<MediaIn | undefined>;
  /** Send audio (any rate; the transport converts to what the leg needs). */
  sendAudio(audio: AudioChunk): Promise<void>;
  /** Flush the far end's playback (barge-in); a no-op for RTP. */
  sendClear(): Promise<void>;
  /** Sample rate of the leg (8000 for telephony). */
  carrierRate(): number;
  /** Close the leg; idempotent. */
  close?(): Promise<void>;
  /** Send key presses to the far end (RFC 4733 on SIP); optional. */
  sendDtmf?(keys: readonly KeypadEntry[]): Promise<void>;
}

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
  sendText(text: string): Promise<void>;
  sendBinary(bytes: Uint8Array): Promise<void>;
  close?(): Promise<void>;
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
  | { type: "audio"; audio: AudioChunk }
  | { type: "dtmf"; key: KeypadEntry }
  | { type: "mark"; name: string }
  | { type: "stop" }
  | { type: "ignore"; reason: string };

/** Pure, synchronous carrier framing. One instance per call (it remembers the stream id). */
export interface MediaSerializer {
  /** Decode one inbound message. Malformed input gives `ignore` with a reason, never a throw. */
  onMessage(msg: WsIn): SerIn;
  /** Encode PCM at {@link MediaSerializer.carrierRate} for the carrier. */
  encodeAudio(audio: AudioChunk): WsOut;
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
  startSensitivity?: string;
  endSensitivity?: string;
  prefixPaddingMs?: number;
  silenceDurationMs?: number;
}

/** What a realtime model is connected with. */
export interface RealtimeSetup {
  systemPrompt: string;
  tools: ToolDecl[];
  /** Provider voice name. */
  voice?: string;
  /** Text that starts the conversation (the model speaks first). */
  kickoff?: string;
  vad?: RealtimeVadSettings;
}

/** Event from a realtime model. */
export type RealtimeEvent =
  | { type: "audio_out"; audio: AudioChunk }
  | { type: "user_text"; text: string; final: boolean }
  | { type: "bot_text"; text: string; final: boolean }
  | { type: "tool_call"; id: string; name: string; args: Record<string, unknown> }
  | { type: "interrupted" }
  | { type: "turn_complete" }
  | { type: "usage"; usage: LlmTokenUsage }
  | { type: "closed"; reason?: string };

/** A speech-to-speech model client. */
export interface RealtimeLlm {
  connect(setup: RealtimeSetup): Promise<void>;
  /** 16 kHz PCM in. */
  sendAudio(audio: AudioChunk): void | Promise<void>;
  updateSystem(prompt: string, tools: ToolDecl[]): Promise<void>;
  sendToolResult(id: string, result: unknown): Promise<void>;
  /** Next event; `undefined` once closed. */
  nextEvent(): Promise<RealtimeEvent | undefined>;
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
  systemPrompt(): string;
  tools(): ToolDecl[];
  currentNodeId(): string;
  /** Decide on a model tool call. A remote brain answers asynchronously. */
  onToolCall(name: string, args: Record<string, unknown>): BrainAction | Promise<BrainAction>;
  isFinished(): boolean;
  collectedVars(): Record<string, unknown>;
}

// ---------------------------------------------------------------- session source (control plane)

/** A call resolved by the embedder's control plane. */
export interface ResolvedCall {
  provider: string;
  /** Opaque to the core: graph spec, runtime options, seed variables. */
  brainConfig: Record<string, unknown>;
  isCompleted: boolean;
}

/** What is reported when a call ends. */
export interface Finalize {
  usage: Record<string, unknown>;
  collectedVars: Record<string, unknown>;
  recordingUrl?: string;
  transcriptUrl?: string;
  disposition?: string;
}

/** Where to upload an artifact. */
export interface UploadTarget {
  /** URL to PUT the bytes to. */
  uploadUrl: string;
  /** URL the artifact is reachable at afterwards (goes into {@link Finalize}). */
  publicUrl: string;
  headers?: Record<string, string>;
}

/** Kind of artifact a call produces. */
export type ArtifactKind = "recording" | "transcript";

/** The embedder's control plane. */
export interface SessionSource {
  resolve(runId: number, token: string): Promise<ResolvedCall>;
  complete(runId: number, token: string, finalize: Finalize): Promise<void>;
  artifactUploadUrl(runId: number, token: string, kind: ArtifactKind): Promise<UploadTarget>;
  putBytes(url: string, bytes: Uint8Array, contentType: string): Promise<void>;
  nodeTools(runId: number, token: string, nodeId: string): Promise<ToolDecl[]>;
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
  name(): string;
  start(params: StartParams): Promise<void>;
  /** Feed audio; returns any transcription frames ready now. */
  runStt(audio: AudioFrame): Promise<Frame[]>;
  setMuted(muted: boolean): void;
  /** Segmented (batch) services: the user started speaking; begin a segment with pre-roll. */
  speechStarted?(): void;
  /** Segmented services: the user stopped speaking; transcribe the segment. */
  speechStopped?(): Promise<Frame[]>;
  stop?(): Promise<void>;
}

/** Text-to-speech service. */
export interface TtsService {
  name(): string;
  sampleRate(): number;
  start(params: StartParams): Promise<void>;
  /** TtsStarted, TtsAudio..., TtsStopped. Aborting `signal` stops synthesis mid-flight. */
  runTts(text: string, signal?: AbortSignal): AsyncIterable<Frame>;
  stop?(): Promise<void>;
}

/** Language-model service. */
export interface LlmService {
  name(): string;
  start(params: StartParams): Promise<void>;
  /** LlmResponseStart, LlmText..., optional FunctionCallsStarted, LlmResponseEnd. */
  runLlm(context: LlmContext, signal?: AbortSignal): AsyncIterable<Frame>;
  setTools(tools: ToolDecl[]): void;
  stop?(): Promise<void>;
}

// ---------------------------------------------------------------- analyzers

/** Voice-activity analyzer. Model-backed ones may answer asynchronously. */
export interface VadAnalyzer {
  sampleRate(): number;
  analyze(audio: AudioFrame): VadState | Promise<VadState>;
  setParams(params: VadParams): void;
}

/** End-of-turn analyzer. */
export interface TurnAnalyzer {
  analyzeTurn(audio: AudioFrame, vad: VadState): TurnPrediction | Promise<TurnPrediction>;
  setParams(params: TurnParams): void;
}
