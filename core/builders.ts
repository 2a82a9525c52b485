/**
 * Builders for whole calls. {@link buildS2sTask} assembles the speech-to-speech shape:
 *
 * ```
 * TransportInput -> RealtimeProcessor -> TranscriptCollector -> BrainProcessor
 *   -> RecorderProcessor -> TransportOutput -> FinalizeProcessor
 * ```
 *
 * Caller audio is resampled to 16 kHz by the input, the model's 24 kHz voice is converted to
 * the leg's rate by the transport. The brain's moves travel upstream to the model; its End
 * drains the pipeline, the output plays out, and the finalize processor uploads the recording
 * and transcript and completes the call once (also on hang-up, model failure or cancel).
 * @module
 */

import type { TranscriptLine } from "./processors/finalize.ts";
import { FinalizeProcessor, TranscriptCollector } from "./processors/finalize.ts";
import { BrainProcessor } from "./processors/brain.ts";
import { RealtimeProcessor } from "./processors/realtime.ts";
import { RecorderProcessor } from "./processors/recorder.ts";
import { TransportInput, TransportOutput } from "./processors/transport.ts";
import type { Finalize } from "./seams.ts";
import type {
  AgentBrain,
  MediaTransport,
  RealtimeLlm,
  RealtimeVadSettings,
  SessionSource,
} from "./seams.ts";
import type { Logger } from "./log.ts";
import { Pipeline } from "./pipeline.ts";
import type { FrameProcessor } from "./processor.ts";
import { PipelineTask, type PipelineTaskParams } from "./task.ts";

/** Inputs of {@link buildS2sTask}. */
export interface S2sTaskOptions {
  transport: MediaTransport;
  realtime: RealtimeLlm;
  brain: AgentBrain;
  session: SessionSource;
  runId: number;
  token: string;
  /** Model name, for usage and metrics. */
  model: string;
  /** Text that makes the model speak first (default: none; the model waits for the caller). */
  kickoff?: string;
  voice?: string;
  vad?: RealtimeVadSettings;
  /** Record the call as WAV and upload it on finalize (default true). */
  record?: boolean;
  /** Live view of the transcript and node moves (e.g. the browser playground). */
  onTranscript?: (line: TranscriptLine) => void;
  /** Sees the finalize report once the call is completed. */
  onFinalized?: (report: Finalize) => void;
  /** Extra task parameters (observers, idle timeout, metrics...). */
  taskParams?: PipelineTaskParams;
  logger?: Logger;
}

/** The processors of one speech-to-speech call, for embedders that watch them. */
export interface S2sParts {
  input: TransportInput;
  realtime: RealtimeProcessor;
  transcript: TranscriptCollector;
  brain: BrainProcessor;
  recorder: RecorderProcessor | undefined;
  output: TransportOutput;
  finalize: FinalizeProcessor;
}

/**
 * Assemble a speech-to-speech call into a {@link PipelineTask}; `run()` drives it to the end
 * and resolves after the call has been finalized.
 *
 * @example
 * ```ts
 * const task = buildS2sTask({ transport, realtime, brain, session, runId, token, model });
 * await task.run();
 * ```
 */
export function buildS2sTask(opts: S2sTaskOptions): PipelineTask & { parts: S2sParts } {
  const { session, runId, token, brain } = opts;
  const input = new TransportInput(opts.transport);
  const setup = {
    systemPrompt: brain.systemPrompt(),
    tools: brain.tools(),
    ...(opts.kickoff !== undefined ? { kickoff: opts.kickoff } : {}),
    ...(opts.voice !== undefined ? { voice: opts.voice } : {}),
    ...(opts.vad !== undefined ? { vad: opts.vad } : {}),
  };
  const realtime = new RealtimeProcessor(opts.realtime, setup, { model: opts.model });
  const transcript = new TranscriptCollector(opts.onTranscript);
  const brainProc = new BrainProcessor(brain, {
    workflowTool: (nodeId, tool, args) => session.toolCall(runId, token, nodeId, tool, args),
  });
  const recorder = opts.record === false ? undefined : new RecorderProcessor();
  const output = new TransportOutput(opts.transport);
  const finalize = new FinalizeProcessor({
    session,
    runId,
    token,
    usage: () => ({ ...realtime.usage, model: opts.model }),
    collectedVars: () => brain.collectedVars(),
    disposition: () => brainProc.disposition,
    recording: recorder ? () => recorder.wav() : undefined,
    transcript: () => transcript.lines,
    logger: opts.logger,
  });
  const processors: FrameProcessor[] = [input, realtime, transcript, brainProc];
  if (recorder) processors.push(recorder);
  processors.push(output, finalize);
  const task = new PipelineTask(new Pipeline(processors, `s2s-${runId}`), {
    ...(opts.logger ? { logger: opts.logger } : {}),
    ...opts.taskParams,
    audioInSampleRate: 16000,
    audioOutSampleRate: 24000,
  });
  // A forced abort skips the stop hooks: finalize here too (it runs once).
  task.onFinished(async (reason) => {
    const report = await finalize.finalize(reason);
    opts.onFinalized?.(report);
  });
  return Object.assign(task, {
    parts: { input, realtime, transcript, brain: brainProc, recorder, output, finalize },
  });
}
