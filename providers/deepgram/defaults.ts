/**
 * Defaults of the Deepgram Aura text-to-speech client, in a module of their own so the service registry can name
 * them without loading the client.
 * @module
 */

/** Default API root. */
export const DEEPGRAM_TTS_DEFAULT_BASE_URL = "wss://api.deepgram.com";
/** Default model (an Aura model names its voice). */
export const DEEPGRAM_TTS_DEFAULT_MODEL = "aura-2-helena-en";
/** Default output rate. */
export const DEEPGRAM_TTS_DEFAULT_SAMPLE_RATE = 24000;
/** Rates the speak socket accepts for `linear16`. */
export const DEEPGRAM_TTS_RATES: readonly number[] = [8000, 16000, 24000, 32000, 48000];
