/**
 * Soniox's defaults, read by both the client and the provider registry (a leaf module, so the
 * registry need not load the client to know them).
 * @module
 */

/** The host of the realtime API. */
export const SONIOX_HOST = "stt-rt.soniox.com";
/** The realtime model used when the config names none. */
export const SONIOX_DEFAULT_MODEL = "stt-rt-v4";
