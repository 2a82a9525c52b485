/**
 * The built-in processors: transport in/out, realtime model, brain, transcript and finalize,
 * voice activity and turn-taking, recorder, noise filter.
 * @module
 */
export * from "./transport.ts";
export * from "./realtime.ts";
export * from "./brain.ts";
export * from "./finalize.ts";
export * from "./vad.ts";
export * from "./turn.ts";
export * from "./recorder.ts";
export * from "./noise_filter.ts";
