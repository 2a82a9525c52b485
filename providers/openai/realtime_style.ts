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
import type { RealtimeLlm } from "../../core/seams.ts";
import type { RealtimeFactory, RealtimeProviderOptions } from "../provider_types.ts";
import { ENV_NAME, OPENAI_REALTIME_SPEC, type OpenAIStyleSpec } from "./realtime_config.ts";
import { OpenAIRealtimeClient } from "./realtime.ts";

export type { OpenAIStyleSpec } from "./realtime_config.ts";
export type { OpenAIRealtimeProtocol } from "./realtime_wire.ts";

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

/**
 * The `openai-compatible` realtime provider: any endpoint speaking the OpenAI Realtime protocol,
 * named in the config by its `url` (required), with `options.auth_header` (a header name that
 * carries the key; default `Authorization: Bearer`), `options.key_env` (the key variable,
 * default `OPENAI_COMPATIBLE_API_KEY`) and OpenAI's default model and voice.
 */
export function createOpenAICompatibleRealtime(opts: RealtimeProviderOptions): RealtimeLlm {
  const name = "openai-compatible";
  const o = opts.options ?? {};
  if (opts.url === undefined) {
    throw new FlowcatError("config", `${name}: url is required (the endpoint's wss:// URL)`);
  }
  if (o.key_env !== undefined && (typeof o.key_env !== "string" || !ENV_NAME.test(o.key_env))) {
    throw new FlowcatError("config", `${name}: options.key_env must be a variable name (MY_KEY)`);
  }
  const header = o.auth_header;
  if (header !== undefined && (typeof header !== "string" || !/^[A-Za-z0-9-]+$/.test(header))) {
    throw new FlowcatError("config", `${name}: options.auth_header must be a header name`);
  }
  return openAIStyleRealtime({
    name,
    baseUrl: opts.url,
    ...(header !== undefined ? { authHeader: header } : {}),
    defaultModel: OPENAI_REALTIME_SPEC.defaultModel,
    defaultVoice: OPENAI_REALTIME_SPEC.defaultVoice,
  })(opts);
}
