/**
 * Defaults of the Hume Octave text-to-speech client, in a module of their own so the service registry can name
 * them without loading the client.
 * @module
 */

/** Default API root. */
export const HUME_DEFAULT_BASE_URL = "https://api.hume.ai";
/** Default voice, from Hume's voice library. */
export const HUME_DEFAULT_VOICE = "Ava Song";
/** The only PCM rate Hume streams. */
export const HUME_SAMPLE_RATE = 48000;
