/**
 * Speechmatics' defaults, read by both the client and the provider registry (a leaf module, so
 * the registry need not load the client to know them).
 * @module
 */

/** The host of the realtime API (the EU cluster; `url` picks another). */
export const SPEECHMATICS_HOST = "eu2.rt.speechmatics.com";
/** The operating point used when the config names no model. */
export const SPEECHMATICS_DEFAULT_MODEL = "enhanced";
