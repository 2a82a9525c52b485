/**
 * The built-in processors: transport in/out, realtime model, brain, transcript and finalize,
 * voice activity and turn-taking, recorder, and the cascaded services (speech-to-text, language
 * model, text-to-speech, context aggregation, greeting). The RNNoise noise filter loads an npm
 * package, so it is its own entry point: `./processors/noise-filter`.
 * @module
 */
export * from "./transport.ts";
export * from "./realtime.ts";
export * from "./brain.ts";
export * from "./finalize.ts";
export * from "./vad.ts";
export * from "./echo_cancel.ts";
export * from "./turn.ts";
export * from "./recorder.ts";
export * from "./stt.ts";
export * from "./llm.ts";
export * from "./tts.ts";
export * from "./assistant_context.ts";
export * from "./context.ts";
export * from "./greeting.ts";
export * from "./amd.ts";
