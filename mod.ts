/**
 * Flowcat core: frames, processors, pipelines, tasks, seams, builders and the pure audio toolkit.
 * It loads no npm package, no provider, no network client: everything that does is a separate
 * entry point (see deno.json "exports"): the agent kit (`./agent`: graph spec, GraphBrain,
 * RemoteBrain), Silero (`./audio/silero`), RNNoise (`./audio/rnnoise`), the noise filter
 * (`./processors/noise-filter`), providers, carriers and transports. See docs/decisions.md,
 * "The root entry point loads no npm package".
 *
 * Permissions: none. The core reads no file and no environment variable and opens no socket;
 * what a program builds with it (a transport, a provider) needs what that entry point says
 * (docs/embedding.md, "Permissions by entry point").
 *
 * @example
 * ```ts
 * import { FrameProcessor, makeFrame, Pipeline, PipelineTask } from "@flowcat/flowcat";
 * const pipeline = new Pipeline([new FrameProcessor("in"), new FrameProcessor("out")]);
 * const task = new PipelineTask(pipeline, { idleTimeoutMs: null });
 * task.onStarted(() => task.queueFrame(makeFrame("End", {})));
 * const reason = await task.run(); // { kind: "end" }
 * ```
 * @module
 */
export * from "./core/frames.ts";
export * from "./core/errors.ts";
export * from "./core/log.ts";
export * from "./core/seams.ts";
export type { FrameTarget } from "./core/channel.ts";
export * from "./core/processor.ts";
export { ParallelPipeline, Pipeline } from "./core/pipeline.ts";
export * from "./core/task.ts";
export * from "./core/runner.ts";
export * from "./core/observers.ts";
export * from "./core/metrics.ts";
export type * from "./core/tracing.ts";
export {
  type BargeInWindows,
  DEFAULT_BARGE_IN,
  DEFAULT_TURN_WINDOWS,
  IMMEDIATE_TURN_WINDOWS,
  type TurnCompleteness,
  type TurnWindows,
} from "./core/turn_end.ts";
export * from "./core/audio/mod.ts";
export * from "./core/processors/mod.ts";
export * from "./core/builders.ts";
export * from "./core/call_rates.ts";
export * from "./core/memory_sessions.ts";
export * from "./core/static_brain.ts";
export * from "./core/call_control.ts";
