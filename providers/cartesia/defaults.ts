/**
 * What the registry and the Cartesia clients agree on: endpoints and default models or voices.
 * A leaf module with no client code, so the registry reads it without loading any client.
 * @module
 */

/** Default API root. */
export const CARTESIA_DEFAULT_BASE_URL = "wss://api.cartesia.ai";

/** Default model. */
export const CARTESIA_DEFAULT_MODEL = "sonic-3";
