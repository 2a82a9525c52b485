/**
 * Options of the Gemini Live client, and how the agent server's `providers.realtime.options`
 * map onto them (docs/config.md, docs/realtime.md).
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import type { Logger } from "../../core/log.ts";
import { GEMINI_DEFAULT_MODEL } from "./gemini_live_wire.ts";

/** Options of the Gemini Live client. */
export interface GeminiLiveOptions {
  /** Gemini API key; sent only in the URL query, never logged. */
  apiKey: string;
  /** Endpoint override (tests, proxies); `?key=` is appended. */
  url?: string;
  /** Model name (default `GEMINI_DEFAULT_MODEL`); `models/` is added when missing. */
  model?: string;
  /** Voice; wins over `RealtimeSetup.voice`. Default Fenrir. */
  voice?: string;
  /** BCP-47 speech language for `speechConfig.languageCode`. */
  languageCode?: string;
  /** Logger for connection and protocol events (default silent). */
  logger?: Logger;
  /** WebSocket open deadline (default 10 s). */
  connectTimeoutMs?: number;
  /** Deadline for `setupComplete` after `setup` was sent (default 10 s). */
  setupTimeoutMs?: number;
  /** Reconnect tries after `goAway`, a dropped socket or `updateSystem` (default 3). */
  reconnectAttempts?: number;
  /** Wait before the second try; doubles for each further one (default 250 ms). */
  reconnectBackoffMs?: number;
  /**
   * Caller audio kept for a handover: not yet sent, or sent but not yet covered by a resumption
   * handle. Beyond it the oldest is dropped, with a warning (default 30 s).
   */
  audioBufferMs?: number;
}

/** {@link GeminiLiveOptions} with every default filled in. */
export type ResolvedGeminiOptions = Required<
  Omit<GeminiLiveOptions, "voice" | "languageCode" | "logger" | "url">
>;

/** Fill in the defaults (listed in docs/config.md). */
export function resolveGeminiOptions(opts: GeminiLiveOptions): ResolvedGeminiOptions {
  return {
    apiKey: opts.apiKey,
    model: opts.model || GEMINI_DEFAULT_MODEL,
    connectTimeoutMs: opts.connectTimeoutMs ?? 10_000,
    setupTimeoutMs: opts.setupTimeoutMs ?? 10_000,
    reconnectAttempts: Math.max(1, opts.reconnectAttempts ?? 3),
    reconnectBackoffMs: opts.reconnectBackoffMs ?? 250,
    audioBufferMs: opts.audioBufferMs ?? 30_000,
  };
}

/**
 * The provider options the registry passes (its `RealtimeProviderOptions`, named by shape here so
 * this module needs nothing from the registry, which loads the client).
 */
export interface GeminiProviderOptions {
  apiKey?: string;
  model?: string;
  voice?: string;
  url?: string;
  options?: Record<string, unknown>;
  logger?: Logger;
}

/** Client options from the server's provider options; bad numbers warn and use the default. */
export function geminiOptionsFrom(opts: GeminiProviderOptions): GeminiLiveOptions {
  if (!opts.apiKey) throw new FlowcatError("config", "gemini: missing API key");
  const o = opts.options ?? {};
  const num = (k: string): number | undefined => {
    const v = o[k];
    if (v === undefined) return undefined;
    if (typeof v === "number" && Number.isFinite(v) && v >= 0) return v;
    opts.logger?.warn(`gemini: options.${k} is not a non-negative number; using the default`);
    return undefined;
  };
  return {
    apiKey: opts.apiKey,
    url: opts.url,
    model: opts.model,
    voice: opts.voice,
    logger: opts.logger,
    languageCode: typeof o.languageCode === "string" ? o.languageCode : undefined,
    connectTimeoutMs: num("connectTimeoutMs"),
    setupTimeoutMs: num("setupTimeoutMs"),
    reconnectAttempts: num("reconnectAttempts"),
    reconnectBackoffMs: num("reconnectBackoffMs"),
    audioBufferMs: num("audioBufferMs"),
  };
}
