/**
 * What the registry and the OpenAI clients agree on: endpoints and default models or voices.
 * A leaf module with no client code, so the registry reads it without loading any client.
 * @module
 */

/** API root used when the options name none. */
export const OPENAI_CHAT_DEFAULT_BASE_URL = "https://api.openai.com/v1";

/** Model used when the options name none. */
export const OPENAI_CHAT_DEFAULT_MODEL = "gpt-4o-mini";

/** OpenAI's API root. */
export const OPENAI_TTS_BASE_URL = "https://api.openai.com/v1";

/** Default speech model. */
export const OPENAI_TTS_DEFAULT_MODEL = "gpt-4o-mini-tts";

/** Default voice. */
export const OPENAI_TTS_DEFAULT_VOICE = "alloy";
