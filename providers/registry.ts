/**
 * Provider registry: name -> what the provider needs (hosts it dials, its key variable) and a
 * lazy loader. The agent server resolves providers by name from its config; a provider's module
 * is imported only when a config names it, so an unused provider costs nothing.
 *
 * The embedded library never reads keys from the environment: embedders construct clients
 * directly. Only the server reads `<PROVIDER>_API_KEY` (see {@link providerKeyEnv}), or the
 * variable a provider names for itself (see {@link credentialEnv}: Azure's, a configured one).
 *
 * Permissions: none to import; a provider it loads needs `--allow-net` to that provider's
 * `hosts`.
 *
 * @example
 * ```ts
 * import { providerKeyEnv, providersOfKind, REALTIME_PROVIDERS } from "@flowcat/flowcat/providers";
 * const groq = providersOfKind("llm").groq; // hosts ["api.groq.com:443"], needsKey true
 * providerKeyEnv("groq"); // "GROQ_API_KEY"
 * const createEcho = await REALTIME_PROVIDERS.echo.load(); // imports only the echo model
 * const model = createEcho({});
 * ```
 * @module
 */

import type {
  ProviderInfo,
  ProviderKind,
  RealtimeFactory,
  RealtimeProviderOptions,
} from "./provider_types.ts";
import { serviceProviders } from "./service_registry.ts";
import { AWS_DEFAULT_REGION, AWS_ENV, awsHostsFor, BEDROCK } from "./aws/defaults.ts";
import { AZURE_OPENAI_KEY_ENV, openAIHosts } from "./azure/defaults.ts";
import { openAICompatibleKeyEnv } from "./openai/realtime_config.ts";

// The cascaded-service types, so an embedder passing its own service factories needs only this
// entry point.
export type {
  ServiceFactory,
  ServiceKind,
  ServiceOf,
  ServiceProviderInfo,
} from "./service_registry.ts";
export type { ServiceOptions } from "./service_options.ts";

export type {
  EnvReader,
  ProviderEnvVar,
  ProviderInfo,
  ProviderKind,
  ProviderPlace,
  RealtimeFactory,
  RealtimeProviderOptions,
} from "./provider_types.ts";

/** A realtime provider with its lazy factory. */
export interface RealtimeProviderInfo extends ProviderInfo {
  /** Always `realtime`. */
  kind: "realtime";
  /** Import the provider's module and return its factory (loaded only when used). */
  load(): Promise<RealtimeFactory>;
  /**
   * Build once, at server start, what the provider would otherwise build during its first call
   * (a WebAssembly engine), so that call's audio does not stall. Absent: nothing to warm.
   */
  warm?(opts: RealtimeProviderOptions): Promise<void>;
}

/** Realtime (speech-to-speech) providers by name. */
export const REALTIME_PROVIDERS: Readonly<Record<string, RealtimeProviderInfo>> = Object.freeze({
  echo: {
    name: "echo",
    kind: "realtime",
    hosts: [],
    needsKey: false,
    description: "local, credential-free: speaks back what it hears",
    load: () => import("./echo/realtime.ts").then((m) => m.createEchoRealtime),
    warm: (opts) => import("./echo/realtime.ts").then((m) => m.warmEchoRealtime(opts)),
  },
  gemini: {
    name: "gemini",
    kind: "realtime",
    hosts: ["generativelanguage.googleapis.com:443"],
    needsKey: true,
    description: "Google Gemini Live (BidiGenerateContent)",
    load: () => import("./google/gemini_live.ts").then((m) => m.createGeminiLive),
  },
  openai: {
    name: "openai",
    kind: "realtime",
    hosts: ["api.openai.com:443"],
    needsKey: true,
    description: "OpenAI Realtime (GA protocol)",
    load: () => import("./openai/realtime.ts").then((m) => m.createOpenAIRealtime),
  },
  xai: {
    name: "xai",
    kind: "realtime",
    hosts: ["api.x.ai:443"],
    needsKey: true,
    description: "xAI Grok voice (Grok Voice Agent API)",
    load: () => import("./xai/realtime.ts").then((m) => m.createXaiRealtime),
  },
  ultravox: {
    name: "ultravox",
    kind: "realtime",
    hosts: ["api.ultravox.ai:443", "voice.ultravox.ai:443"],
    needsKey: true,
    description: "Ultravox (server WebSocket call)",
    load: () => import("./ultravox/realtime.ts").then((m) => m.createUltravoxRealtime),
  },
  "nova-sonic": {
    name: "nova-sonic",
    kind: "realtime",
    hosts: [BEDROCK.host(AWS_DEFAULT_REGION)],
    needsKey: true,
    env: AWS_ENV,
    hostsFor: awsHostsFor(BEDROCK),
    description: "Amazon Nova Sonic on Bedrock (InvokeModelWithBidirectionalStream, SigV4)",
    load: () => import("./aws/nova_sonic.ts").then((m) => m.createNovaSonic),
  },
  azure: {
    name: "azure",
    kind: "realtime",
    hosts: [],
    needsKey: true,
    description: "Azure OpenAI Realtime (options.resource; model: the deployment)",
    keyEnv: AZURE_OPENAI_KEY_ENV,
    hostsFor: (options) => openAIHosts({ options }),
    load: () => import("./azure/realtime.ts").then((m) => m.createAzureRealtime),
  },
  "openai-compatible": {
    name: "openai-compatible",
    kind: "realtime",
    // Its url is required: the url's host is the grant.
    hosts: [],
    needsKey: true,
    description: "any OpenAI Realtime endpoint (url; options.key_env, options.auth_header)",
    keyEnvFor: (options) => openAICompatibleKeyEnv(options),
    load: () => import("./openai/realtime_style.ts").then((m) => m.createOpenAICompatibleRealtime),
  },
});

/** Every provider of `kind`, by name. */
export function providersOfKind(kind: ProviderKind): Readonly<Record<string, ProviderInfo>> {
  return kind === "realtime" ? REALTIME_PROVIDERS : serviceProviders(kind);
}

/**
 * The environment variable holding a provider's key: `<PROVIDER>_API_KEY`, upper-case, with
 * characters other than letters and digits as `_`.
 *
 * @example
 * ```ts
 * providerKeyEnv("openai"); // "OPENAI_API_KEY"
 * ```
 */
export function providerKeyEnv(name: string): string {
  return `${name.toUpperCase().replace(/[^A-Z0-9]/g, "_")}_API_KEY`;
}

/**
 * The variable the server reads a configured provider's credential from: the one its `options`
 * name (`openai-compatible`'s `key_env`), the provider's own (`GOOGLE_APPLICATION_CREDENTIALS`
 * for the Google Cloud ones, `AZURE_SPEECH_KEY`), else {@link providerKeyEnv}.
 *
 * @example
 * ```ts
 * credentialEnv("llm", "vertex"); // "GOOGLE_APPLICATION_CREDENTIALS"
 * credentialEnv("llm", "groq"); // "GROQ_API_KEY"
 * ```
 */
export function credentialEnv(
  kind: ProviderKind,
  name: string,
  options: Readonly<Record<string, unknown>> = {},
): string {
  const info = providersOfKind(kind)[name];
  return info?.keyEnvFor?.(options) ?? info?.keyEnv ?? providerKeyEnv(name);
}
