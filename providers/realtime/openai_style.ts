/**
 * "OpenAI-style realtime": a factory for any provider that speaks the OpenAI Realtime protocol
 * (Azure OpenAI, self-hosted gateways, compatible vendors). Such a provider is one line of config.
 *
 * Permissions: `--allow-net=<the provider's host>:443` (its `baseUrl`).
 *
 * @example
 * ```ts
 * import { openAIStyleRealtime } from "@flowcat/flowcat/realtime/openai-style";
 * export const createAcmeRealtime = openAIStyleRealtime({
 *   name: "acme",
 *   baseUrl: "wss://realtime.acme.example/v1/realtime",
 *   authHeader: "api-key",
 *   defaultModel: "acme-voice-1",
 *   defaultVoice: "nova",
 * });
 * ```
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import type { RealtimeFactory } from "../provider_types.ts";
import type { OpenAIStyleSpec } from "./openai_config.ts";
import { OpenAIRealtimeClient } from "./openai_realtime.ts";

export type { OpenAIStyleSpec } from "./openai_config.ts";
export type { OpenAIRealtimeProtocol } from "./openai_wire.ts";

/**
 * A {@link RealtimeFactory} for a provider speaking the OpenAI Realtime protocol at
 * `spec.baseUrl`. Per-call options (`apiKey`, `model`, `voice`, `url`, `options.protocol`, ...)
 * work as for `createOpenAIRealtime`. Throws `FlowcatError("config")` at once on a spec that
 * cannot work (no name, base URL or defaults).
 */
export function openAIStyleRealtime(spec: OpenAIStyleSpec): RealtimeFactory {
  for (const field of ["name", "baseUrl", "defaultModel", "defaultVoice"] as const) {
    if (typeof spec[field] !== "string" || spec[field] === "") {
      throw new FlowcatError("config", `openAIStyleRealtime: spec.${field} is required`);
    }
  }
  const frozen: OpenAIStyleSpec = Object.freeze({ ...spec });
  return (opts) => new OpenAIRealtimeClient(opts, frozen);
}
