/**
 * What every cascaded provider client (speech-to-text, language model, text-to-speech) is
 * made from: one options shape, filled from the server config or by an embedder.
 *
 * @example
 * ```ts
 * import type { ServiceOptions } from "./service_options.ts";
 * declare const key: string;
 * const opts: ServiceOptions = { provider: "groq", apiKey: key, model: "llama-3.3-70b" };
 * ```
 * @module
 */

import type { Logger } from "../core/log.ts";

/** Options of a cascaded provider client. Every field but `provider` is optional. */
export interface ServiceOptions {
  /** The provider's name as the config spells it (`openai`, `groq`, `ollama`...): in errors. */
  provider: string;
  /** Credential from the operator's environment; never logged, never put in an error. */
  apiKey?: string;
  /**
   * Values of the variables a provider declares in place of one key (AWS credentials and
   * region), by variable name; only those that are set. Never logged.
   */
  credentials?: Readonly<Record<string, string>>;
  /** API root, e.g. `https://api.openai.com/v1` (each family has its default). */
  baseUrl?: string;
  /** Model id (each provider has its default). */
  model?: string;
  /** Voice id (text-to-speech). */
  voice?: string;
  /** Language hint, BCP-47 (`en`, `en-US`). */
  language?: string;
  /** Provider-specific extras from the config (temperature, max_tokens, ...). */
  options?: Record<string, unknown>;
  /** Deadline for a response's headers / a socket's open, ms (default 15000). */
  timeoutMs?: number;
  /** The fetch to use (tests). */
  fetch?: typeof fetch;
  /** Logger (default silent). */
  logger?: Logger;
}
