/**
 * Builders for whole calls. {@link buildS2sTask} assembles the speech-to-speech shape,
 * {@link buildCascadedTask} the cascaded one (see there):
 *
 * ```
 * TransportInput -> RealtimeProcessor -> BrainProcessor (keeps the transcript)
 *   -> RecorderProcessor -> TransportOutput -> FinalizeProcessor
 * ```
 *
 * The call runs at the rates the model takes on this leg (core/call_rates.ts): resampled in and out
 * only where the model's and the leg's rates differ. The brain's moves travel upstream to the
 * model; its End drains the pipeline, the output plays out, and the finalize processor uploads the
 * recording and transcript and completes the call once (also on hang-up, failure or cancel).
 * @module
 */

import { EnergyVad } from "./audio/vad_energy.ts";
import { type AnsweringMachineSetup, placeAnsweringMachine } from "./processors/amd.ts";
import type { TranscriptListener } from "./processors/finalize.ts";
import { CallSources, finalizeWhenFinished } from "./call_sources.ts";
import { AssistantContextAggregator } from "./processors/assistant_context.ts";
import { createLlmContext, UserContextAggregator } from "./processors/context.ts";
import { GreetingProcessor } from "./processors/greeting.ts";
import { LlmProcessor } from "./processors/llm.ts";
import { SttProcessor } from "./processors/stt.ts";
import { TtsProcessor } from "./processors/tts.ts";
import { DefaultTurnStrategy, type InterruptionMode } from "./processors/turn.ts";
import { VadProcessor } from "./processors/vad.ts";
import { DEFAULT_VAD_PARAMS, type LlmContext, type VadParams } from "./frames.ts";
import {
  type BargeInWindows,
  DEFAULT_BARGE_IN,
  DEFAULT_TURN_WINDOWS,
  type TurnWindows,
  validateTurnWindows,
} from "./turn_end.ts";
import { CallTranscript, FinalizeProcessor } from "./processors/finalize.ts";
import { BrainProcessor } from "./processors/brain.ts";
import { RealtimeProcessor } from "./processors/realtime.ts";
import { RecorderProcessor } from "./processors/recorder.ts";
import { TransportInput, TransportOutput } from "./processors/transport.ts";
import { EchoCancelProcessor } from "./processors/echo_cancel.ts";
import { s2sRates } from "./call_rates.ts";
import type { Finalize } from "./seams.ts";
import type {
  AgentBrain,
  LlmService,
  MediaTransport,
  RealtimeAudioRates,
  RealtimeLlm,
  RealtimeVadSettings,
  SessionSource,
  SttService,
  TtsService,
  VadAnalyzer,
} from "./seams.ts";
import type { Logger } from "./log.ts";
import { Pipeline } from "./pipeline.ts";
import type { FrameProcessor } from "./processor.ts";
import { PipelineTask, type PipelineTaskParams } from "./task.ts";

/** Inputs of {@link buildS2sTask}. */
export interface S2sTaskOptions extends CallBase {
  /** The speech-to-speech model client. */
  realtime: RealtimeLlm;
  /** Model name, for usage and metrics (default `"realtime"`). */
  model?: string;
  /** Text that makes the model speak first (default: none; the model waits for the caller). */
  kickoff?: string;
  /** Provider voice name; the provider's default when left out. */
  voice?: string;
  /** Server-side voice-activity tuning; provider defaults when left out. */
  vad?: RealtimeVadSettings;
}

/** The processors of one speech-to-speech call, for embedders that watch them. */
export interface S2sParts extends CallParts {
  /** Reads the caller's audio from the transport into the pipeline. */
  input: TransportInput;
  /** Runs the realtime model and relays its audio, text and tool calls. */
  realtime: RealtimeProcessor;
}

/**
 * Assemble a speech-to-speech call into a {@link PipelineTask}; `run()` drives it to the end
 * and resolves after the call has been finalized.
 *
 * @example
 * ```ts
 * import { buildS2sTask, type S2sTaskOptions } from "@flowcat/flowcat";
 * declare const { transport, realtime, brain, session, runId, token, model }: S2sTaskOptions;
 * const task = buildS2sTask({ transport, realtime, brain, session, runId, token, model });
 * await task.run();
 * ```
 */
export function buildS2sTask(opts: S2sTaskOptions): PipelineTask & { parts: S2sParts } {
  const { brain } = opts;
  const input = new TransportInput(opts.transport);
  const setup = {
    systemPrompt: brain.systemPrompt(),
    tools: brain.tools(),
    ...(opts.kickoff !== undefined ? { kickoff: opts.kickoff } : {}),
    ...(opts.voice !== undefined ? { voice: opts.voice } : {}),
    ...(opts.vad !== undefined ? { vad: opts.vad } : {}),
  };
  const model = opts.model ?? "realtime";
  const rates = s2sRates(opts.realtime, opts.transport.carrierRate());
  // Recorded at the call's input rate; the usage callback runs at the end, after `realtime` exists.
  const call = callParts(opts, () => ({ ...realtime.usage, model }), false, rates.input);
  // The caller's audio ends at the model unless the recorder after it takes it too.
  const forwardInputAudio = call.recorder !== undefined, inputRate = rates.input;
  const realtime = new RealtimeProcessor(opts.realtime, setup, {
    model,
    inputRate,
    forwardInputAudio,
  });
  const task = assemble(
    `s2s-${opts.runId}`,
    [input, ...echoStage(call), realtime, call.brain],
    call,
    opts,
    rates,
    { after: realtime, byDefault: false },
  );
  return Object.assign(task, { parts: { input, realtime, ...call } });
}

/** What every call shape is given. */
export interface CallBase {
  /** The call's media leg (carrier WebSocket, SIP/RTP, WebRTC). */
  transport: MediaTransport;
  /** Conversation logic consulted on tool calls. */
  brain: AgentBrain;
  /** The embedder's control plane the call is resolved from and reported to. */
  session: SessionSource;
  /** Id of the call run in the control plane. */
  runId: number;
  /** Token that authenticates the run to the control plane. */
  token: string;
  /** Record the call as WAV and upload it on finalize (default true). */
  record?: boolean;
  /**
   * Live view of the transcript and node moves (e.g. the browser playground); a bot line cut by
   * a barge-in comes again, at the same index, marked `interrupted`.
   */
  onTranscript?: TranscriptListener;
  /** Sees the finalize report once the call is completed. */
  onFinalized?: (report: Finalize) => void;
  /** Extra task parameters (observers, idle timeout, metrics...). */
  taskParams?: PipelineTaskParams;
  /** Logger for the call (default: the task's own). */
  logger?: Logger;
  /**
   * Answering-machine detection (outbound calls): AnsweringMachine frames after the input, the
   * brain's `answered_by_machine`/`answered_by_human` moves, and, unless `waitForBeep` is false,
   * the bot's audio held from a machine decision until the beep (docs/call-control.md).
   */
  answeringMachine?: AnsweringMachineSetup;
  /**
   * Cancel the bot's echo in the caller's audio, before anything listens to it (default false):
   * for telephone legs, where a speakerphone returns the bot's voice; browsers cancel their own.
   */
  echoCancel?: boolean;
}

/** The processors every call shape ends with. */
export interface CallParts {
  /** The transcript and node moves of the call (fed by the brain processor). */
  transcript: CallTranscript;
  /** Runs the brain on tool calls and applies its decisions. */
  brain: BrainProcessor;
  /** Records the call audio; `undefined` when recording is off. */
  recorder: RecorderProcessor | undefined;
  /** Sends the bot's audio to the transport. */
  output: TransportOutput;
  /** Cancels the bot's echo in the caller's audio; `undefined` when `echoCancel` is off. */
  echoCancel: EchoCancelProcessor | undefined;
  /** Reports usage, variables and artifacts when the call ends. */
  finalize: FinalizeProcessor;
}

function callParts(
  opts: CallBase,
  usage: () => Record<string, unknown>,
  sayUpstream = false,
  recordRate = 16000,
): CallParts {
  const { session, runId, token, brain } = opts;
  const transcript = new CallTranscript(opts.onTranscript);
  const brainProc = new BrainProcessor(brain, {
    transcript,
    sayUpstream,
    workflowTool: (nodeId, tool, args) => session.toolCall(runId, token, nodeId, tool, args),
  });
  const recorder = opts.record === false
    ? undefined
    : new RecorderProcessor({ sampleRate: recordRate });
  const output = new TransportOutput(opts.transport);
  let echoCancel: EchoCancelProcessor | undefined;
  if (opts.echoCancel === true) {
    const aec = echoCancel = new EchoCancelProcessor();
    output.onSent((audio, at) => aec.reference(audio, at));
  }
  const finalize = new FinalizeProcessor(
    new CallSources(opts, usage, brainProc, transcript, recorder),
  );
  return { transcript, brain: brainProc, recorder, output, echoCancel, finalize };
}

/** What goes right after the input, before anything listens to the caller: the echo canceller. */
function echoStage(call: CallParts): FrameProcessor[] {
  return call.echoCancel === undefined ? [] : [call.echoCancel];
}

/**
 * `head`, then the recorder, output and finalize, as one task that finalizes once. `words`: the
 * processor the caller's transcripts come out of, and whether answering-machine detection hears
 * them unless told otherwise.
 */
function assemble(
  name: string,
  head: FrameProcessor[],
  call: CallParts,
  opts: CallBase,
  rates: RealtimeAudioRates,
  words: { after: FrameProcessor; byDefault: boolean },
): PipelineTask {
  const processors = [...head];
  if (opts.answeringMachine !== undefined) {
    // Right after the input (and the echo canceller, when there is one): the detector hears the
    // callee, not the bot's own echo, before anything else touches the audio. Its gate goes
    // before the recorder: the recording has the message where the callee heard it.
    placeAnsweringMachine(processors, opts.answeringMachine, {
      input: 1 + (call.echoCancel === undefined ? 0 : 1),
      words: words.after,
      wordsByDefault: words.byDefault,
    });
  }
  if (call.recorder) processors.push(call.recorder);
  processors.push(call.output, call.finalize);
  const task = new PipelineTask(new Pipeline(processors, name), {
    ...(opts.logger ? { logger: opts.logger } : {}),
    ...opts.taskParams,
    audioInSampleRate: rates.input,
    audioOutSampleRate: rates.output,
  });
  finalizeWhenFinished(task, call.finalize, opts.onFinalized);
  return task;
}

/** The turn windows of `t` (a server config's `turns` also carries its barge-in settings). */
function pickWindows(t: Partial<TurnWindows> | undefined): Partial<TurnWindows> {
  if (t === undefined) return {};
  const out: Partial<TurnWindows> = {};
  if (t.pauseMs !== undefined) out.pauseMs = t.pauseMs;
  if (t.completeMs !== undefined) out.completeMs = t.completeMs;
  if (t.unsureMs !== undefined) out.unsureMs = t.unsureMs;
  if (t.incompleteMs !== undefined) out.incompleteMs = t.incompleteMs;
  if (t.speculate !== undefined) out.speculate = t.speculate;
  return out;
}

/** Inputs of {@link buildCascadedTask}: the s2s seams, with three services for the model. */
export interface CascadedTaskOptions extends CallBase {
  /** Speech-to-text service. */
  stt: SttService;
  /** Language-model service. */
  llm: LlmService;
  /** Text-to-speech service. */
  tts: TtsService;
  /** Model names, for usage and metrics. */
  models?: { stt?: string; llm?: string; tts?: string };
  /** Voice activity in front of STT (default: the energy VAD, no model needed). */
  vad?: VadAnalyzer;
  /**
   * Start and volume thresholds of the VAD; the defaults when left out. Its stop window is
   * `turns.pauseMs` when that is set, else this `stopSecs`, else the adaptive default.
   */
  vadParams?: VadParams;
  /**
   * When the caller's turn is over (core/turn_end.ts): the pause that ends speech, the silence a
   * finished, unclear or unfinished transcript needs, and whether a reply is drafted meanwhile.
   * Default {@link DEFAULT_TURN_WINDOWS} (`pauseMs` from `vadParams.stopSecs` when given).
   */
  turns?: Partial<TurnWindows>;
  /**
   * When the caller's voice over the bot interrupts it: `startMs` of speech confirm a barge-in
   * (the VAD's start window; default `vadParams.startSecs`, 200 ms), and the first sign of voice
   * already holds the bot's audio for `holdMs` (default {@link DEFAULT_BARGE_IN}: 300; 0 for
   * never), so the bot falls silent at once and resumes if the sound was not speech.
   */
  bargeIn?: Partial<BargeInWindows>;
  /** When the caller starting to speak interrupts the bot (default `bot-speaking`). */
  interruptions?: InterruptionMode;
  /** Spoken by TTS as soon as the caller is connected. */
  greeting?: string;
  /** A user message that makes the model speak first (instead of, or after, the greeting). */
  kickoff?: string;
  /** Said when the language model fails (default a short apology). */
  fallbackText?: string;
  /** Said when the caller's words could not be transcribed (default: asks them to repeat). */
  sttFallbackText?: string;
}

/** The processors of one cascaded call, for embedders that watch them. */
export interface CascadedParts extends CallParts {
  /** Reads the caller's audio from the transport into the pipeline. */
  input: TransportInput;
  /** Detects when the caller speaks. */
  vad: VadProcessor;
  /** Transcribes the caller's speech. */
  stt: SttProcessor;
  /** Adds the caller's transcribed turns to the context. */
  user: UserContextAggregator;
  /** Runs the language model on the context. */
  llm: LlmProcessor;
  /** Adds the bot's replies and tool calls to the context. */
  assistant: AssistantContextAggregator;
  /** Speaks the model's replies. */
  tts: TtsProcessor;
  /** The conversation context shared by the aggregators and the model. */
  context: LlmContext;
}

/**
 * Assemble a cascaded call (speech-to-text, language model, text-to-speech) into a
 * {@link PipelineTask}, with the same seams as {@link buildS2sTask}:
 *
 * ```
 * TransportInput -> VadProcessor (turns, barge-in) -> SttProcessor -> UserContextAggregator
 *   -> LlmProcessor -> AssistantContextAggregator -> BrainProcessor
 *   -> TtsProcessor -> RecorderProcessor -> TransportOutput -> FinalizeProcessor
 * ```
 *
 * @example
 * ```ts
 * import { buildCascadedTask, type CascadedTaskOptions } from "@flowcat/flowcat";
 * declare const { transport, stt, llm, tts, brain, session, runId, token }: CascadedTaskOptions;
 * const task = buildCascadedTask({ transport, stt, llm, tts, brain, session, runId, token });
 * await task.run();
 * ```
 */
export function buildCascadedTask(
  opts: CascadedTaskOptions,
): PipelineTask & { parts: CascadedParts } {
  const { brain } = opts;
  const models = opts.models ?? {};
  const context = createLlmContext(brain.systemPrompt(), brain.tools());
  if (opts.kickoff) context.messages.push({ role: "user", content: opts.kickoff });
  const input = new TransportInput(opts.transport);
  const turns = validateTurnWindows({
    ...DEFAULT_TURN_WINDOWS,
    ...(opts.vadParams ? { pauseMs: Math.round(opts.vadParams.stopSecs * 1000) } : {}),
    ...pickWindows(opts.turns),
  });
  // The VAD's end of speech is the pause: the turn judge waits on from there.
  const vadParams = { ...(opts.vadParams ?? DEFAULT_VAD_PARAMS), stopSecs: turns.pauseMs / 1000 };
  if (opts.bargeIn?.startMs !== undefined) vadParams.startSecs = opts.bargeIn.startMs / 1000;
  const vad = new VadProcessor(opts.vad ?? new EnergyVad({ params: vadParams }), {
    params: vadParams,
    turnStrategy: new DefaultTurnStrategy({
      interruptions: opts.interruptions,
      holdMs: opts.bargeIn?.holdMs ?? DEFAULT_BARGE_IN.holdMs,
    }),
    // While the judge may still wait, a caller going on is heard at once.
    resumeSecs: Math.max(0, turns.incompleteMs - turns.pauseMs) / 1000,
  });
  const stt = new SttProcessor(opts.stt, {
    model: models.stt,
    ...(opts.sttFallbackText !== undefined ? { fallbackText: opts.sttFallbackText } : {}),
  });
  const user = new UserContextAggregator(context, {
    turns,
    ...(opts.interruptions ? { interruptions: opts.interruptions } : {}),
  });
  const llm = new LlmProcessor(opts.llm, context, {
    model: models.llm,
    runOnConnect: opts.kickoff !== undefined && opts.kickoff !== "",
    ...(opts.fallbackText !== undefined ? { fallbackText: opts.fallbackText } : {}),
  });
  const assistant = new AssistantContextAggregator(context);
  const tts = new TtsProcessor(opts.tts, { model: models.tts });
  // The brain's `say` lines go through the context aggregator: spoken in turn, and recorded.
  const call = callParts(opts, () => ({
    ...llm.usage,
    ttsCharacters: tts.characters,
    ...(models.llm ? { model: models.llm } : {}),
  }), true);
  const head: FrameProcessor[] = [input, ...echoStage(call), vad, stt, user];
  if (opts.greeting) head.push(new GreetingProcessor(opts.greeting, context));
  head.push(llm, assistant, call.brain, tts);
  const rates = { input: 16000, output: opts.tts.sampleRate() };
  const task = assemble(`cascaded-${opts.runId}`, head, call, opts, rates, {
    after: stt,
    byDefault: true,
  });
  return Object.assign(task, {
    parts: { input, vad, stt, user, llm, assistant, tts, context, ...call },
  });
}
