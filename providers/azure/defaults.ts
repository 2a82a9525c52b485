/**
 * Azure's defaults and where a config places an Azure provider: the Speech region (or endpoint)
 * and the Azure OpenAI resource (or endpoint), the key variables, the hosts to grant. A leaf
 * module with no client code, so the registry can import it without loading a client.
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import type { ProviderPlace } from "../provider_types.ts";
import { AZURE_SPEECH_AUTH_HEADER, isRegionName, speechHost } from "./speech_wire.ts";

/** The variable holding a Speech resource key (speech to text and text to speech). */
export const AZURE_SPEECH_KEY_ENV = "AZURE_SPEECH_KEY";
/** The variable holding an Azure OpenAI resource key (language model and realtime). */
export const AZURE_OPENAI_KEY_ENV = "AZURE_OPENAI_API_KEY";
/** The data-plane API version of chat completions (the latest GA one). */
export const AZURE_OPENAI_API_VERSION = "2024-10-21";
/** Recognition language when the config names none. */
export const AZURE_STT_DEFAULT_LANGUAGE = "en-US";
/** The SDK's default voice for en-US (src/sdk/Synthesizer.ts, buildSsml). */
export const AZURE_TTS_DEFAULT_VOICE = "en-US-AvaMultilingualNeural";
/** Rates the recognizer accepts raw 16-bit mono PCM at. */
export const AZURE_STT_RATES: readonly number[] = [8000, 16000];
/** Rates of the raw PCM synthesis formats Flowcat asks for (`raw-<n>khz-16bit-mono-pcm`). */
export const AZURE_TTS_RATES: readonly number[] = [8000, 16000, 24000];

/** A Speech socket's root: the config's `url`, else `wss://<region>.<stt|tts>.speech...`. */
export function speechRoot(provider: string, service: "stt" | "tts", place: ProviderPlace): string {
  if (place.url !== undefined) return place.url.replace(/^http/i, "ws").replace(/\/+$/, "");
  const region = place.options.region;
  if (!isRegionName(region)) {
    throw new FlowcatError(
      "config",
      `${provider}: options.region must name the Speech resource's region (e.g. eastus), or set url`,
    );
  }
  return `wss://${speechHost(region, service)}`;
}

/** The `host:port` a Speech provider dials, from its region (none without one). */
export function speechHosts(service: "stt" | "tts"): (place: ProviderPlace) => string[] {
  return (place) => {
    const region = place.options.region;
    return isRegionName(region) ? [`${speechHost(region, service)}:443`] : [];
  };
}

/** True for a plausible Azure resource (subdomain) name. */
function isResourceName(v: unknown): v is string {
  return typeof v === "string" && /^[a-z0-9][a-z0-9-]{0,62}$/i.test(v);
}

/** An Azure OpenAI resource's root: the config's `url`, else `https://<resource>.openai.azure.com`. */
export function openAIRoot(provider: string, place: ProviderPlace): string {
  if (place.url !== undefined) return place.url.replace(/\/+$/, "");
  const resource = place.options.resource;
  if (!isResourceName(resource)) {
    throw new FlowcatError(
      "config",
      `${provider}: options.resource must name the Azure OpenAI resource (the <name> of ` +
        `<name>.openai.azure.com), or set url`,
    );
  }
  return `https://${resource.toLowerCase()}.openai.azure.com`;
}

/** The `host:port` an Azure OpenAI provider dials, from its resource (none without one). */
export function openAIHosts(place: ProviderPlace): string[] {
  const resource = place.options.resource;
  return isResourceName(resource) ? [`${resource.toLowerCase()}.openai.azure.com:443`] : [];
}

/** The deployment (the config's `model`); a config error naming what to set when absent. */
export function deploymentOf(provider: string, model: string | undefined): string {
  if (model === undefined || model === "") {
    throw new FlowcatError(
      "config",
      `${provider}: name the Azure OpenAI deployment as the model (model: my-deployment)`,
    );
  }
  return model;
}

/** A string option, or `def`; anything but a non-empty string is a config error. */
export function stringOption(
  provider: string,
  options: Readonly<Record<string, unknown>>,
  key: string,
  def: string,
): string {
  const v = options[key];
  if (v === undefined) return def;
  if (typeof v !== "string" || v === "") {
    throw new FlowcatError("config", `${provider}: options.${key} must be a non-empty string`);
  }
  return v;
}

/** What a start-up probe of an Azure provider sends: a URL, its auth, what passes. */
export interface AzureProbe {
  /** The URL to GET. */
  url: string;
  /** Headers for `key`. */
  headers: (key: string | undefined) => Record<string, string>;
  /** `ok`: the key is checked (a model list); `reachable`: only the host is. */
  expect: "ok" | "reachable";
}

/**
 * The probe of an Azure provider: Azure OpenAI lists its models (`GET /openai/models`, which
 * checks the key); a Speech host has no read-only endpoint, so its root is asked with the key
 * and any answer but 401/403 and 5xx passes (that the gateway answers a bad key with 401 at the
 * root is expected, not verified against the service). Throws `FlowcatError("config")` when
 * the config does not place the provider.
 */
export function azureProbe(
  provider: string,
  service: "speech-stt" | "speech-tts" | "openai",
  place: ProviderPlace,
): AzureProbe {
  if (service === "openai") {
    const root = openAIRoot(provider, place).replace(/^ws/i, "http");
    return {
      url: `${root}/openai/models?api-version=${AZURE_OPENAI_API_VERSION}`,
      headers: (key): Record<string, string> => (key ? { "api-key": key } : {}),
      expect: place.url === undefined ? "ok" : "reachable",
    };
  }
  const root = speechRoot(provider, service === "speech-stt" ? "stt" : "tts", place);
  return {
    url: `${new URL(root.replace(/^ws/i, "http")).origin}/`,
    headers: (key): Record<string, string> => (key ? { [AZURE_SPEECH_AUTH_HEADER]: key } : {}),
    expect: "reachable",
  };
}
