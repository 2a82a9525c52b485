/**
 * What the registry and the ElevenLabs clients (speech-to-text, text-to-speech) agree on: endpoints
 * and default models or voices.
 * A leaf module with no client code, so the registry reads it without loading any client.
 * @module
 */

/** Default API root. */
export const ELEVENLABS_DEFAULT_BASE_URL = "wss://api.elevenlabs.io";

/** Default model: ElevenLabs' lowest-latency model that streams on this socket. */
export const ELEVENLABS_DEFAULT_MODEL = "eleven_flash_v2_5";

/** The API host. */
export const ELEVENLABS_STT_HOST = "api.elevenlabs.io";
/** The realtime speech-to-text model used when the config names none. */
export const ELEVENLABS_STT_DEFAULT_MODEL = "scribe_v2_realtime";
