/**
 * What the registry and the NVIDIA Riva clients agree on: endpoints and default models or voices.
 * A leaf module with no client code, so the registry reads it without loading any client.
 * @module
 */

/** A local Riva server's gRPC address. */
export const RIVA_DEFAULT_URL = "http://127.0.0.1:50051";
