/**
 * Defaults of the Fish Audio text-to-speech client, in a module of their own so the service registry can name
 * them without loading the client.
 * @module
 */

/** Default API root. */
export const FISH_DEFAULT_BASE_URL = "wss://api.fish.audio";
/** Default model (the official SDK's default). */
export const FISH_DEFAULT_MODEL = "s2-pro";
/** Default output rate. */
export const FISH_DEFAULT_SAMPLE_RATE = 24000;
/** Rates offered for `pcm`. */
export const FISH_RATES: readonly number[] = [8000, 16000, 24000, 32000, 44100];
