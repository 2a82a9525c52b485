/**
 * Defaults of the Neuphonic text-to-speech client, in a module of their own so the service registry can name
 * them without loading the client.
 * @module
 */

/** Default API root. */
export const NEUPHONIC_DEFAULT_BASE_URL = "https://api.neuphonic.com";
/** Default output rate. */
export const NEUPHONIC_DEFAULT_SAMPLE_RATE = 22050;
/** Rates offered for `pcm_linear`. */
export const NEUPHONIC_RATES: readonly number[] = [8000, 16000, 22050];
