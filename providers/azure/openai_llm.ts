/**
 * Azure OpenAI chat completions: the OpenAI chat-completions wire (providers/openai/chat.ts)
 * at a deployment URL, `POST https://<resource>.openai.azure.com/openai/deployments/<deployment>
 * /chat/completions?api-version=<version>`, with the key in an `api-key` header. The config's
 * `model` names the deployment; `options.api_version` overrides the API version.
 *
 * @example
 * ```ts
 * import { createAzureOpenAILlm } from "@flowcat/flowcat/llm/azure";
 * declare const key: string;
 * const llm = createAzureOpenAILlm({
 *   provider: "azure",
 *   apiKey: key,
 *   model: "my-gpt-4o-mini",
 *   options: { resource: "contoso" },
 * });
 * ```
 *
 * Permissions: `--allow-net=<resource>.openai.azure.com:443` (or the `url` given).
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import type { LlmService } from "../../core/seams.ts";
import { OpenAIChatLlm } from "../openai/chat.ts";
import type { ServiceOptions } from "../service_options.ts";
import { AZURE_OPENAI_API_VERSION, deploymentOf, openAIRoot, stringOption } from "./defaults.ts";

/** The chat-completions URL of a deployment. */
export function azureChatUrl(root: string, deployment: string, apiVersion: string): string {
  const query = new URLSearchParams({ "api-version": apiVersion });
  return `${root}/openai/deployments/${encodeURIComponent(deployment)}/chat/completions?${query}`;
}

/** An Azure OpenAI chat-completions client; the key, resource and deployment are checked here. */
export function createAzureOpenAILlm(opts: ServiceOptions): LlmService {
  const provider = opts.provider;
  if (!opts.apiKey) throw new FlowcatError("config", `${provider}: missing Azure OpenAI key`);
  const options = opts.options ?? {};
  const root = openAIRoot(provider, { url: opts.baseUrl, options });
  const deployment = deploymentOf(provider, opts.model);
  const version = stringOption(provider, options, "api_version", AZURE_OPENAI_API_VERSION);
  return new OpenAIChatLlm(opts, {
    url: azureChatUrl(root, deployment, version),
    auth: (key) => ({ "api-key": key }),
  });
}
