/**
 * What the registry and the Deepgram clients (live speech-to-text, Aura text-to-speech) agree on:
 * endpoints, default models and rates. A leaf module with no client code, so the registry reads it
 * without loading any client.
 * @module
 */

/** Deepgram's WebSocket root (speech-to-text). */
export const DEEPGRAM_DEFAULT_URL = "wss://api.deepgram.com";

/** Model used when the config names none (Nova-3, Deepgram's current general model). */
export const DEEPGRAM_DEFAULT_MODEL = "nova-3";

/** Default API root of Aura text-to-speech. */
export const DEEPGRAM_TTS_DEFAULT_BASE_URL = "wss://api.deepgram.com";
/** Default Aura model (an Aura model names its voice). */
export const DEEPGRAM_TTS_DEFAULT_MODEL = "aura-2-helena-en";
/** Default Aura output rate. */
export const DEEPGRAM_TTS_DEFAULT_SAMPLE_RATE = 24000;
/** Rates the speak socket accepts for `linear16`. */
export const DEEPGRAM_TTS_RATES: readonly number[] = [8000, 16000, 24000, 32000, 48000];
