/**
 * Azure OpenAI Realtime: the OpenAI Realtime client (providers/openai/realtime.ts) at an
 * Azure resource, with the key in an `api-key` header. Two endpoints, by `options.api_version`:
 *
 * - absent or `v1` (GA): `wss://<resource>.openai.azure.com/openai/v1/realtime?model=<deployment>`,
 *   the GA protocol;
 * - a dated preview (`2025-04-01-preview`): `wss://<resource>.openai.azure.com/openai/realtime?
 *   api-version=<version>&deployment=<deployment>`, the beta protocol.
 *
 * The config's `model` names the deployment. Everything else (barge-in, tools, transcripts,
 * reconnects) is the OpenAI client's: docs/realtime-openai.md.
 *
 * @example
 * ```ts
 * import { createAzureRealtime } from "@flowcat/flowcat/realtime/azure";
 * declare const key: string;
 * const llm = createAzureRealtime({ apiKey: key, model: "gpt-realtime", options: { resource: "contoso" } });
 * ```
 *
 * Permissions: `--allow-net=<resource>.openai.azure.com:443` (or the `url` given).
 * @module
 */

import type { RealtimeLlm } from "../../core/seams.ts";
import type { RealtimeProviderOptions } from "../provider_types.ts";
import { OpenAIRealtimeClient } from "../openai/realtime.ts";
import { deploymentOf, openAIRoot, stringOption } from "./defaults.ts";

/** The realtime socket URL of a deployment for an API version (`v1`: GA). */
export function azureRealtimeUrl(root: string, deployment: string, apiVersion: string): string {
  const ws = root.replace(/^http/i, "ws");
  if (apiVersion === "v1") {
    return `${ws}/openai/v1/realtime?${new URLSearchParams({ model: deployment })}`;
  }
  const query = new URLSearchParams({ "api-version": apiVersion, deployment });
  return `${ws}/openai/realtime?${query}`;
}

/** A realtime client for an Azure OpenAI deployment. */
export function createAzureRealtime(opts: RealtimeProviderOptions): RealtimeLlm {
  const provider = "azure";
  const options = opts.options ?? {};
  const deployment = deploymentOf(provider, opts.model);
  const version = stringOption(provider, options, "api_version", "v1");
  const url = azureRealtimeUrl(
    openAIRoot(provider, { url: opts.url, options }),
    deployment,
    version,
  );
  return new OpenAIRealtimeClient({ ...opts, url }, {
    name: provider,
    baseUrl: url,
    authHeader: "api-key",
    defaultModel: deployment,
    defaultVoice: "alloy",
    protocol: version === "v1" ? "ga" : "beta",
  });
}
