/**
 * What the registry and the Google clients agree on: endpoints and default models or voices.
 * A leaf module with no client code, so the registry reads it without loading any client.
 * @module
 */

/** API root used when the options give none. */
export const GEMINI_DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com";

/**
 * Default model, the GA Flash model (set `options.thinking_level: "minimal"` for the lowest
 * latency); which older models are shut down: docs/providers/gemini.md.
 */
export const GEMINI_DEFAULT_MODEL = "gemini-3.5-flash";

/** The Speech API's gRPC endpoint. */
export const GOOGLE_STT_DEFAULT_URL = "https://speech.googleapis.com";

/** Default recognition model. */
export const GOOGLE_STT_DEFAULT_MODEL = "latest_long";

/** The Text-to-Speech API root. */
export const GOOGLE_TTS_DEFAULT_URL = "https://texttospeech.googleapis.com";

/** Default voice. */
export const GOOGLE_TTS_DEFAULT_VOICE = "en-US-Chirp3-HD-Charon";

/** The global Vertex AI endpoint. */
export const VERTEX_DEFAULT_BASE_URL = "https://aiplatform.googleapis.com";

/** Default model: the GA Gemini Flash model Vertex serves. */
export const VERTEX_DEFAULT_MODEL = "gemini-2.5-flash";
