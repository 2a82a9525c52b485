/**
 * Defaults of the Rime text-to-speech client, in a module of their own so the service registry can name
 * them without loading the client.
 * @module
 */

/** Default API root. */
export const RIME_DEFAULT_BASE_URL = "wss://users-ws.rime.ai";
/** Default model. */
export const RIME_DEFAULT_MODEL = "coda";
/** Default voice (`speaker`). */
export const RIME_DEFAULT_VOICE = "luna";
/** Default output rate. */
export const RIME_DEFAULT_SAMPLE_RATE = 24000;
/** Rates offered for `pcm`. */
export const RIME_PCM_RATES: readonly number[] = [8000, 16000, 22050, 24000, 44100, 48000];
