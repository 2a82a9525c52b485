/**
 * What the registry and the ElevenLabs clients agree on: endpoints and default models or voices.
 * A leaf module with no client code, so the registry reads it without loading any client.
 * @module
 */

/** Default API root. */
export const ELEVENLABS_DEFAULT_BASE_URL = "wss://api.elevenlabs.io";

/** Default model: ElevenLabs' lowest-latency model that streams on this socket. */
export const ELEVENLABS_DEFAULT_MODEL = "eleven_flash_v2_5";
