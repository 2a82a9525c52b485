/**
 * Cartesia speech-to-text defaults, read by both the client and the provider registry (a leaf
 * module, so the registry need not load the client to know them).
 * @module
 */

/** The API host. */
export const CARTESIA_STT_HOST = "api.cartesia.ai";
/** The speech-to-text model used when the config names none. */
export const CARTESIA_STT_DEFAULT_MODEL = "ink-whisper";
/** API version sent as `cartesia_version` (ink is served from 2025-04-16 on). */
export const CARTESIA_STT_VERSION = "2026-03-01";
