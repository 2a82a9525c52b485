/**
 * Gladia's defaults, read by both the client and the provider registry (a leaf module, so the
 * registry need not load the client to know them).
 * @module
 */

/** The API host (session setup and the live WebSocket). */
export const GLADIA_HOST = "api.gladia.io";
/** The model used when the config names none. */
export const GLADIA_DEFAULT_MODEL = "solaria-1";
