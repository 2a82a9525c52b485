/**
 * What the registry and the Anthropic clients agree on: endpoints and default models or voices.
 * A leaf module with no client code, so the registry reads it without loading any client.
 * @module
 */

/** API root used when the options give none. */
export const ANTHROPIC_DEFAULT_BASE_URL = "https://api.anthropic.com";

/**
 * Default model: the fastest Claude (latency matters in a voice call); which models and aliases
 * the API serves: docs/providers/anthropic.md.
 */
export const ANTHROPIC_DEFAULT_MODEL = "claude-haiku-4-5";
