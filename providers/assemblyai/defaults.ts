/**
 * AssemblyAI's defaults, read by both the client and the provider registry (a leaf module, so
 * the registry need not load the client to know them).
 * @module
 */

/** The host of the streaming API. */
export const ASSEMBLYAI_HOST = "streaming.assemblyai.com";
/** The speech model used when the config names none. */
export const ASSEMBLYAI_DEFAULT_MODEL = "universal-streaming-english";
