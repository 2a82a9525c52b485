/**
 * What the registry and the Deepgram clients agree on: endpoints and default models or voices.
 * A leaf module with no client code, so the registry reads it without loading any client.
 * @module
 */

/** Deepgram's WebSocket root. */
export const DEEPGRAM_DEFAULT_URL = "wss://api.deepgram.com";

/** Model used when the config names none (Nova-3, Deepgram's current general model). */
export const DEEPGRAM_DEFAULT_MODEL = "nova-3";
