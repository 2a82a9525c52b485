/**
 * Flowcat core: frames, processors, pipelines, tasks, seams, audio and agent.
 * Providers, carriers and transports are separate entry points (see deno.json "exports").
 * @module
 */
export * from "./core/frames.ts";
export * from "./core/errors.ts";
export * from "./core/log.ts";
export * from "./core/seams.ts";
