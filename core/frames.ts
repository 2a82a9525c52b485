// Over 400 lines: the closed set of frame variants: one union, read as one table.
/**
 * Frames: the closed set of System / Data / Control variants plus custom frames.
 *
 * A frame is a plain object with a `kind` discriminant, a process-unique monotonic `id`, its
 * payload fields, and the optional meta fields of {@link FrameMeta}. Meta lives on the frame
 * itself (no separate envelope object per hop); see docs/decisions.md.
 *
 * @example
 * ```ts
 * import { inputAudio, classOf } from "@flowcat/flowcat";
 * const f = inputAudio({ pcm: new Int16Array(320), sampleRate: 16000, numChannels: 1 });
 * classOf(f); // "system"
 * ```
 * @module
 */

/** Direction a frame travels: source to sink, or sink to source. */
export type Direction = "downstream" | "upstream";
/** Frame class: system frames jump the queue and survive interruption. */
export type FrameClass = "system" | "data" | "control";

/** Mono (or interleaved) 16-bit PCM. Cloning a frame never copies `pcm`. */
export interface AudioFrame {
  /** Samples, 16-bit signed, little-endian when serialised. */
  readonly pcm: Int16Array;
  /** Samples per second per channel. */
  readonly sampleRate: number;
  /** Channel count (1 on every path in the runtime). */
  readonly numChannels: number;
}
/**
 * Older name of {@link AudioFrame}, in no public signature of the package; removed in the next
 * release.
 *
 * @deprecated Use {@link AudioFrame}.
 */
export type AudioChunk = AudioFrame;

/** Make an {@link AudioFrame} (mono by default). */
export function audioFrame(pcm: Int16Array, sampleRate: number, numChannels = 1): AudioFrame {
  return { pcm, sampleRate, numChannels };
}

/** Parameters every processor receives with Start. */
export interface StartParams {
  /** Sample rate of audio entering the pipeline (the transport's input rate). */
  audioInSampleRate: number;
  /** Sample rate the pipeline's output audio is produced at. */
  audioOutSampleRate: number;
  /** Whether processors report time-to-first-byte and processing metrics. */
  enableMetrics: boolean;
  /** Whether services report usage metrics (tokens, characters). */
  enableUsageMetrics: boolean;
  /** Whether tracing spans are recorded. */
  enableTracing: boolean;
  /** Report time-to-first-byte only for the first response of a service, not every one. */
  reportOnlyInitialTtfb: boolean;
}

/** Service kind targeted by UpdateSettings. */
export type ServiceKind = "stt" | "tts" | "llm" | "filter" | "echo_cancel" | "mixer" | "all";

/** A keypad key (DTMF). */
export type KeypadEntry =
  | "0"
  | "1"
  | "2"
  | "3"
  | "4"
  | "5"
  | "6"
  | "7"
  | "8"
  | "9"
  | "*"
  | "#"
  | "A"
  | "B"
  | "C"
  | "D";

/** BCP-47 language tag, e.g. `en-US`. */
export type Language = string;

/** A tool declaration offered to a model. */
export interface ToolDecl {
  /** Tool name the model calls. */
  name: string;
  /** What the tool does, shown to the model. */
  description: string;
  /** JSON-schema parameters object. */
  params: Record<string, unknown>;
}

/** A function (tool) call requested by a model. */
export interface FunctionCall {
  /** Id the model gave this call; its result must carry the same id. */
  toolCallId: string;
  /** Name of the tool called. */
  functionName: string;
  /** Arguments the model gave, parsed from JSON. */
  arguments: Record<string, unknown>;
}

/**
 * How a call transfer ended: `ok` once the far end took the call over; otherwise why not, and
 * `refused` when the leg refused the method itself (SIP 405/501 to a REFER, a carrier without
 * transfers), so another way could be tried.
 */
export type TransferOutcome =
  | {
    ok: true;
    status?: number;
    /**
     * A warm transfer's first step: the target answered and hears the agent now (the caller is
     * on hold); the briefing is spoken next, and a final outcome follows.
     */
    consulting?: boolean;
    /** The agent dialled the target itself and relays the audio between the two legs. */
    bridged?: boolean;
  }
  | { ok: false; reason: string; status?: number; refused?: boolean };

/** A cold transfer hands the caller over at once; a warm one briefs the target first. */
export type TransferMode = "cold" | "warm";

/**
 * What answering-machine detection heard on an outbound call: the `decision` (human or machine,
 * and why), then, after a machine decision, `ready` once a message can be left (at the end of the
 * beep, or when the greeting went quiet without one). Times are ms since the call's audio began.
 */
export type AnsweringMachineEvent =
  | {
    type: "decision";
    verdict: "human" | "machine";
    reason: "beep" | "long_greeting" | "short_greeting" | "silence" | "transcript";
    atMs: number;
    /** Length of the callee's first utterance, ms. */
    greetingMs: number;
  }
  | { type: "ready"; reason: "beep" | "silence"; atMs: number };

/** The result of a function call, sent back to the model. */
export interface FunctionCallResult {
  /** Id of the call this result answers. */
  toolCallId: string;
  /** Name of the tool called. */
  functionName: string;
  /** Whatever the tool returned (serialised to JSON for the model). */
  result: unknown;
  /** Whether the model should run again after this result (default true). */
  runLlm?: boolean;
}

/** One message of an {@link LlmContext}. */
export type LlmMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string }
  | { role: "assistant"; content: string; toolCalls?: FunctionCall[] }
  | { role: "tool"; toolCallId: string; content: string };

/** Conversation context shared by the aggregators and the language model. */
export interface LlmContext {
  /** The messages so far, oldest first. */
  messages: LlmMessage[];
  /** Tools the model may call. */
  tools: ToolDecl[];
}

/**
 * What the far end heard of the bot utterance an interruption cut short (how it is estimated:
 * core/playout_ledger.ts).
 */
export interface PlayoutCut {
  /** The utterance that was playing. */
  utteranceId: string;
  /** Its text that had reached the output transport ("" when its words come later). */
  text: string;
  /** The part of `text` that played: a prefix, cut back to whole words. */
  heard: string;
  /** Share of its audio that played (0..1): places the cut in words that arrive after it. */
  fraction: number;
}

/** Voice-activity parameters. */
export interface VadParams {
  /** Minimum speech probability. */
  confidence: number;
  /** Seconds of speech before speaking starts. */
  startSecs: number;
  /** Seconds of silence before speaking stops. */
  stopSecs: number;
  /** Minimum normalised volume (0..1). */
  minVolume: number;
}

/** Defaults for {@link VadParams}. */
export const DEFAULT_VAD_PARAMS: Readonly<VadParams> = Object.freeze({
  confidence: 0.7,
  startSecs: 0.2,
  stopSecs: 0.8,
  minVolume: 0.6,
});

/** Turn-detection parameters. */
export interface TurnParams {
  /** Silence after which the turn is forced complete. */
  stopSecs: number;
  /** Audio kept before speech starts, in milliseconds. */
  preSpeechMs: number;
  /** Longest turn before it is forced complete. */
  maxDurationSecs: number;
}

/** State reported by a VAD analyzer. */
export type VadState = "quiet" | "starting" | "speaking" | "stopping";

/** Output of a turn analyzer. */
export interface TurnPrediction {
  /** Whether the user is predicted to have finished their turn. */
  isComplete: boolean;
  /** Confidence of the prediction (0..1). */
  probability: number;
}

/** Token usage of one language-model call. */
export interface LlmTokenUsage {
  /** Tokens in the prompt. */
  promptTokens: number;
  /** Tokens in the completion. */
  completionTokens: number;
  /** Prompt plus completion tokens. */
  totalTokens: number;
  /** Prompt tokens read from the provider's cache, when reported. */
  cacheReadInputTokens?: number;
  /** Prompt tokens written to the provider's cache, when reported. */
  cacheCreationInputTokens?: number;
  /** Tokens spent on hidden reasoning, when reported. */
  reasoningTokens?: number;
}

/** One metric reported by a processor. */
export type MetricsData =
  | { type: "ttfb"; processor: string; model?: string; seconds: number }
  | { type: "processing"; processor: string; model?: string; seconds: number }
  | { type: "llm_usage"; processor: string; model?: string; tokens: LlmTokenUsage }
  | { type: "tts_usage"; processor: string; model?: string; characters: number }
  | {
    type: "turn_prediction";
    processor: string;
    isComplete: boolean;
    probability: number;
    e2eProcessingMs: number;
  };

/** Payload of a custom (extension) frame; it says its own class. */
export interface CustomPayload {
  /** Name of the custom frame type, e.g. `ImageFrame`. */
  readonly type: string;
  /** Class of this frame. */
  readonly frameClass: FrameClass;
  /** Survives interruption when true (default false). */
  readonly uninterruptible?: boolean;
  /** Anything the extension carries. */
  readonly data?: unknown;
}

/** Meta fields carried by every frame. */
export interface FrameMeta {
  /** Process-unique (per isolate), monotonic. */
  readonly id: number;
  /** Pipeline-clock timestamp in nanoseconds. */
  pts?: number;
  /** Set on both copies of a broadcast frame: the other copy's id. */
  broadcastSiblingId?: number;
  /** Free-form extra data. */
  extra?: Record<string, unknown>;
  /** Name of the transport the frame came in on, when it came from one. */
  transportSource?: string;
  /** Name of the transport the frame is meant for, when it targets one. */
  transportDestination?: string;
}

/** A frame of kind `K` carrying the payload fields `P`, plus the {@link FrameMeta} of every frame. */
export type FrameWith<K extends string, P = unknown> = FrameMeta & { readonly kind: K } & P;

/** System frames: jump the queue, survive interruption. */
export type SystemFrame =
  | FrameWith<"Start", { params: StartParams }>
  | FrameWith<"Cancel", { reason?: string }>
  | FrameWith<"Error", { message: string; fatal: boolean; processor?: string }>
  | FrameWith<"Interruption">
  | FrameWith<"InputAudio", { audio: AudioFrame }>
  | FrameWith<"UserAudio", { audio: AudioFrame; userId: string }>
  | FrameWith<"InputText", { text: string }>
  | FrameWith<"InputDtmf", { key: KeypadEntry }>
  | FrameWith<"UserStartedSpeaking">
  | FrameWith<"UserStoppedSpeaking">
  | FrameWith<"UserSpeaking">
  | FrameWith<"BotStartedSpeaking">
  | FrameWith<"BotStoppedSpeaking">
  | FrameWith<"BotSpeaking">
  | FrameWith<"VadUserStartedSpeaking", { startSecs: number }>
  | FrameWith<"VadUserStoppedSpeaking", { stopSecs: number }>
  | FrameWith<"SttMute", { mute: boolean }>
  | FrameWith<"Metrics", { data: MetricsData[] }>
  | FrameWith<"TransportMessage", { payload: unknown; urgent: boolean }>
  | FrameWith<"ClientConnected">
  | FrameWith<"BotConnected">
  | FrameWith<"FunctionCallsStarted", { calls: FunctionCall[] }>
  | FrameWith<"FunctionCallInProgress", { call: FunctionCall; cancelOnInterruption: boolean }>
  | FrameWith<"FunctionCallCancel", { functionName: string; toolCallId: string }>
  /** Upstream from the output transport: `text` of the utterance has now played in full. */
  | FrameWith<"SpokenText", { utteranceId: string; text: string }>
  /**
   * Upstream from the output transport on an Interruption, after the SpokenText of what had
   * played: the cut (none when nothing was playing). Whatever was not reported played is unheard.
   */
  | FrameWith<"BotInterrupted", { cut?: PlayoutCut; droppedFrames?: number }>
  /** How a {@link TransferCall} ended, sent upstream by the output transport. */
  | FrameWith<"TransferResult", { target: string; outcome: TransferOutcome }>
  /** Downstream from answering-machine detection (outbound calls that ask for it). */
  | FrameWith<"AnsweringMachine", { event: AnsweringMachineEvent }>
  /**
   * The caller may be starting to talk over the bot: the output transport sends none of the
   * bot's audio for up to `ms` (a repeat extends it). An Interruption then clears it; if none
   * comes (a cough, a click), playout resumes where it stopped.
   */
  | FrameWith<"BotAudioHold", { ms: number }>;

/** Data frames: ordered, dropped on interruption. */
export type DataFrame =
  | FrameWith<"OutputAudio", { audio: AudioFrame }>
  | FrameWith<"TtsAudio", { audio: AudioFrame; contextId?: string }>
  | FrameWith<"Text", { text: string }>
  | FrameWith<"LlmText", { text: string }>
  | FrameWith<
    "Transcription",
    {
      text: string;
      userId: string;
      language?: Language;
      final: boolean;
      /**
       * The transcriber's own end-of-utterance detection ended this transcript (Deepgram's
       * `speech_final` or `UtteranceEnd`): a sign the caller's turn is over.
       */
      endOfUtterance?: boolean;
      /** For a bot line: the utterance it says, so it can be cut to what was heard. */
      utteranceId?: string;
    }
  >
  | FrameWith<"InterimTranscription", { text: string; userId: string; language?: Language }>
  | FrameWith<"TtsSpeak", { text: string; appendToContext?: boolean; utteranceId?: string }>
  /**
   * Text being said, ahead of its audio; `utteranceId` names the bot line it belongs to (the
   * output transport tracks what of it has played). Empty text opens an utterance whose words
   * come later (a realtime model's voice before its transcript).
   */
  | FrameWith<"TtsText", { text: string; contextId?: string; utteranceId?: string }>
  | FrameWith<"FunctionCallResult", { result: FunctionCallResult }>
  | FrameWith<"LlmRun">
  /**
   * Run the model over `context`. With `draft`, the caller's turn is not over yet: the reply is
   * generated but held until an LlmDraftSettled confirms that draft (and `context` is a copy).
   */
  | FrameWith<"LlmContext", { context: LlmContext; draft?: number }>
  | FrameWith<"OutputDtmf", { keys: KeypadEntry[] }>
  /**
   * Hand the call to `target` (a SIP URI or phone number); the output transport does it. `warm`:
   * the agent first dials the target and speaks `briefing` to it (core/call_control.ts).
   */
  | FrameWith<"TransferCall", { target: string; mode?: TransferMode; briefing?: string }>;

/** Control frames: ordered. */
export type ControlFrame =
  | FrameWith<"End", { reason?: string }>
  | FrameWith<"Stop">
  | FrameWith<"LlmResponseStart">
  | FrameWith<"LlmResponseEnd">
  | FrameWith<"TtsStarted", { contextId?: string }>
  | FrameWith<"TtsStopped", { contextId?: string }>
  | FrameWith<"UpdateSettings", { target: ServiceKind; settings: Record<string, unknown> }>
  | FrameWith<"SpeechControlParams", { vad?: VadParams; turn?: TurnParams }>
  | FrameWith<"Heartbeat", { timestampNs: number }>
  /**
   * The caller's turn a draft reply was started for is over (`confirmed`: play the held reply;
   * `context` is now the conversation's), or went on (drop the draft and its reply).
   */
  | FrameWith<"LlmDraftSettled", { draftId: number; confirmed: boolean; context: LlmContext }>
  | FrameWith<"OutputTransportReady">;

/** A custom (extension) frame; unknown ones are forwarded unchanged. */
export type CustomFrame = FrameWith<"Custom", { custom: CustomPayload }>;

/** Every frame. */
export type Frame = SystemFrame | DataFrame | ControlFrame | CustomFrame;
/** The kind (discriminant) of a frame. */
export type FrameKind = Frame["kind"];
/** The frame type of one kind. */
export type FrameOf<K extends FrameKind> = Extract<Frame, { kind: K }>;
/** The payload fields of one kind (what {@link makeFrame} takes). */
export type PayloadOf<K extends FrameKind> = Omit<FrameOf<K>, "kind" | keyof FrameMeta>;

const CLASS_OF: Readonly<Record<Exclude<FrameKind, "Custom">, FrameClass>> = {
  Start: "system",
  Cancel: "system",
  Error: "system",
  Interruption: "system",
  InputAudio: "system",
  UserAudio: "system",
  InputText: "system",
  InputDtmf: "system",
  UserStartedSpeaking: "system",
  UserStoppedSpeaking: "system",
  UserSpeaking: "system",
  BotStartedSpeaking: "system",
  BotStoppedSpeaking: "system",
  BotSpeaking: "system",
  VadUserStartedSpeaking: "system",
  VadUserStoppedSpeaking: "system",
  SttMute: "system",
  Metrics: "system",
  TransportMessage: "system",
  ClientConnected: "system",
  BotConnected: "system",
  FunctionCallsStarted: "system",
  FunctionCallInProgress: "system",
  FunctionCallCancel: "system",
  SpokenText: "system",
  BotInterrupted: "system",
  BotAudioHold: "system",
  TransferResult: "system",
  AnsweringMachine: "system",
  OutputAudio: "data",
  TtsAudio: "data",
  Text: "data",
  LlmText: "data",
  Transcription: "data",
  InterimTranscription: "data",
  TtsSpeak: "data",
  TtsText: "data",
  FunctionCallResult: "data",
  LlmRun: "data",
  LlmContext: "data",
  OutputDtmf: "data",
  TransferCall: "data",
  End: "control",
  Stop: "control",
  LlmResponseStart: "control",
  LlmResponseEnd: "control",
  TtsStarted: "control",
  TtsStopped: "control",
  UpdateSettings: "control",
  SpeechControlParams: "control",
  Heartbeat: "control",
  LlmDraftSettled: "control",
  OutputTransportReady: "control",
};

/** Every built-in frame kind (Custom excluded), in declaration order. */
export const FRAME_KINDS: readonly Exclude<FrameKind, "Custom">[] = Object.freeze(
  Object.keys(CLASS_OF) as Exclude<FrameKind, "Custom">[],
);

/** The class of a frame; custom frames say their own. */
export function classOf(frame: Frame): FrameClass {
  return frame.kind === "Custom" ? frame.custom.frameClass : CLASS_OF[frame.kind];
}

/**
 * True for End, Stop, FunctionCallResult, UpdateSettings, OutputDtmf and TransferCall (the model
 * was told the keys or the transfer are on their way; a barge-in must not lose them), and custom
 * frames that say so.
 */
export function isUninterruptible(frame: Frame): boolean {
  switch (frame.kind) {
    case "End":
    case "Stop":
    case "FunctionCallResult":
    case "UpdateSettings":
    case "OutputDtmf":
    case "TransferCall":
      return true;
    case "Custom":
      return frame.custom.uninterruptible === true;
    default:
      return false;
  }
}

/** True for the frames that end a processor loop: End, Stop, Cancel. */
export function isTerminal(frame: Frame): frame is FrameOf<"End" | "Stop" | "Cancel"> {
  const k = frame.kind;
  return k === "End" || k === "Stop" || k === "Cancel";
}

let lastFrameId = 0;

/** Next process-unique (per isolate) monotonic frame id. */
export function nextFrameId(): number {
  return ++lastFrameId;
}

/**
 * Make a frame of `kind` with a fresh id.
 *
 * @example
 * ```ts
 * const end = makeFrame("End", { reason: "done" });
 * const stop = makeFrame("Stop", {});
 * ```
 */
export function makeFrame<K extends FrameKind>(kind: K, payload: PayloadOf<K>): FrameOf<K> {
  return { kind, id: ++lastFrameId, ...payload } as unknown as FrameOf<K>;
}

/** InputAudio frame (hot path: no spread). */
export function inputAudio(audio: AudioFrame): FrameOf<"InputAudio"> {
  return { kind: "InputAudio", id: ++lastFrameId, audio };
}

/** OutputAudio frame (hot path: no spread). */
export function outputAudio(audio: AudioFrame): FrameOf<"OutputAudio"> {
  return { kind: "OutputAudio", id: ++lastFrameId, audio };
}

/** TtsAudio frame (hot path: no spread). */
export function ttsAudio(audio: AudioFrame, contextId?: string): FrameOf<"TtsAudio"> {
  return contextId === undefined
    ? { kind: "TtsAudio", id: ++lastFrameId, audio }
    : { kind: "TtsAudio", id: ++lastFrameId, audio, contextId };
}

/** A custom frame. */
export function customFrame(custom: CustomPayload): CustomFrame {
  return { kind: "Custom", id: ++lastFrameId, custom };
}

/** Copy of a frame with a fresh id; payload (PCM included) is shared, never copied. */
export function cloneFrame<T extends Frame>(frame: T): T {
  return { ...frame, id: ++lastFrameId };
}

/** The meta of a frame, with its `name` (the kind). */
export function frameMeta(frame: Frame): FrameMeta & { name: string } {
  const meta: FrameMeta & { name: string } = { id: frame.id, name: frameName(frame) };
  if (frame.pts !== undefined) meta.pts = frame.pts;
  if (frame.broadcastSiblingId !== undefined) meta.broadcastSiblingId = frame.broadcastSiblingId;
  if (frame.extra !== undefined) meta.extra = frame.extra;
  if (frame.transportSource !== undefined) meta.transportSource = frame.transportSource;
  if (frame.transportDestination !== undefined) {
    meta.transportDestination = frame.transportDestination;
  }
  return meta;
}

/** Display name of a frame: its kind, or the custom type for custom frames. */
export function frameName(frame: Frame): string {
  return frame.kind === "Custom" ? frame.custom.type : frame.kind;
}

/** Frame plus the direction it travels (what observers and sinks see). */
export interface Envelope {
  /** The frame itself. */
  readonly frame: Frame;
  /** Which way the frame travels through the pipeline. */
  readonly direction: Direction;
}

/** Why a pipeline stopped: derived from the terminal frame. */
export type StopReason =
  | { kind: "end"; reason?: string }
  | { kind: "stop" }
  | { kind: "cancel"; reason?: string };

/** The {@link StopReason} a terminal frame stands for. */
export function stopReasonOf(frame: FrameOf<"End" | "Stop" | "Cancel">): StopReason {
  if (frame.kind === "Stop") return { kind: "stop" };
  return frame.reason === undefined ? { kind: frame.kind === "End" ? "end" : "cancel" } : {
    kind: frame.kind === "End" ? "end" : "cancel",
    reason: frame.reason,
  };
}
