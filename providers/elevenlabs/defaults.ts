/**
 * ElevenLabs speech-to-text defaults, read by both the client and the provider registry (a leaf
 * module, so the registry need not load the client to know them).
 * @module
 */

/** The API host. */
export const ELEVENLABS_STT_HOST = "api.elevenlabs.io";
/** The realtime speech-to-text model used when the config names none. */
export const ELEVENLABS_STT_DEFAULT_MODEL = "scribe_v2_realtime";
