/**
 * What the registry and the Cartesia clients (speech-to-text, text-to-speech) agree on: endpoints
 * and default models or voices.
 * A leaf module with no client code, so the registry reads it without loading any client.
 * @module
 */

/** Default API root. */
export const CARTESIA_DEFAULT_BASE_URL = "wss://api.cartesia.ai";

/** Default model. */
export const CARTESIA_DEFAULT_MODEL = "sonic-3";

/** The API host. */
export const CARTESIA_STT_HOST = "api.cartesia.ai";
/** The speech-to-text model used when the config names none. */
export const CARTESIA_STT_DEFAULT_MODEL = "ink-whisper";
/** API version sent as `cartesia_version` (ink is served from 2025-04-16 on). */
export const CARTESIA_STT_VERSION = "2026-03-01";
