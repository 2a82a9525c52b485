/**
 * Defaults of the LMNT text-to-speech client, in a module of their own so the service registry can name
 * them without loading the client.
 * @module
 */

/** Default API root. */
export const LMNT_DEFAULT_BASE_URL = "wss://api.lmnt.com";
/** Default model. */
export const LMNT_DEFAULT_MODEL = "blizzard";
/** Default voice. */
export const LMNT_DEFAULT_VOICE = "lily";
/** Default output rate. */
export const LMNT_DEFAULT_SAMPLE_RATE = 24000;
/** Rates LMNT offers for raw PCM. */
export const LMNT_RATES: readonly number[] = [8000, 16000, 24000];
