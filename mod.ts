/**
 * Flowcat core: frames, processors, pipelines, tasks, seams, audio and agent.
 * Providers, carriers and transports are separate entry points (see deno.json "exports").
 * @module
 */
export * from "./core/frames.ts";
export * from "./core/errors.ts";
export * from "./core/log.ts";
export * from "./core/seams.ts";
export * from "./core/channel.ts";
export * from "./core/processor.ts";
export * from "./core/runtime.ts";
export * from "./core/pipeline.ts";
export * from "./core/task.ts";
export * from "./core/runner.ts";
export * from "./core/observers.ts";
export * from "./core/metrics.ts";
export * from "./core/agent/mod.ts";
export * from "./core/audio/mod.ts";
export * from "./core/processors/mod.ts";
export * from "./core/builders.ts";
