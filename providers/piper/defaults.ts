/**
 * What the registry and the Piper clients agree on: endpoints and default models or voices.
 * A leaf module with no client code, so the registry reads it without loading any client.
 * @module
 */

/** Where `python3 -m piper.http_server` listens by default. */
export const PIPER_BASE_URL = "http://127.0.0.1:5000";
