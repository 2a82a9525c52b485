/**
 * What a provider module and the registry agree on: the options a realtime factory takes and the
 * facts the registry holds about each provider. A leaf module, so a client can name these types
 * without importing the registry that loads it.
 * @module
 */

import type { Logger } from "../core/log.ts";
import type { RealtimeLlm } from "../core/seams.ts";

/** Kinds of provider a pipeline uses. */
export type ProviderKind = "realtime" | "stt" | "llm" | "tts";

/** What every realtime provider factory takes. */
export interface RealtimeProviderOptions {
  /** Credential; absent for local providers. Never logged. */
  apiKey?: string;
  /**
   * Values of the variables a provider declares in place of one key (AWS credentials and
   * region), by variable name; only those that are set. Never logged.
   */
  credentials?: Readonly<Record<string, string>>;
  /** Model id; the provider's default when left out. */
  model?: string;
  /** Voice name; the provider's default when left out. */
  voice?: string;
  /** Override the provider's endpoint (tests, proxies, compatible providers). */
  url?: string;
  /** Provider-specific options from the config. */
  options?: Record<string, unknown>;
  /** Logger for the client (default silent). */
  logger?: Logger;
}

/** Makes one realtime client per call. */
export type RealtimeFactory = (opts: RealtimeProviderOptions) => RealtimeLlm;

/** An environment variable a provider reads in place of `<NAME>_API_KEY`. */
export interface ProviderEnvVar {
  /** Variable name, e.g. `AWS_ACCESS_KEY_ID`. */
  name: string;
  /** True when the provider cannot work without it. */
  required: boolean;
  /** What it holds, for messages and docs. */
  why: string;
}

/** Reads an environment variable; `undefined` when unset or not readable. */
export type EnvReader = (name: string) => string | undefined;

/** What of a provider's config says where it is: the endpoint override and its options. */
export interface ProviderPlace {
  /** The config's `url`, when set. */
  url?: string;
  /** The config's `options` (a region, a resource, a key variable's name). */
  options: Readonly<Record<string, unknown>>;
}

/** A registered provider. */
export interface ProviderInfo {
  /** Name the config selects the provider by. */
  name: string;
  /** What the provider does in a pipeline. */
  kind: ProviderKind;
  /** `host:port` pairs the provider dials (for `--allow-net`); empty for local providers. */
  hosts: readonly string[];
  /** False for local, credential-free providers. */
  needsKey: boolean;
  /** The variable holding the credential; `<NAME>_API_KEY` when absent. */
  keyEnv?: string;
  /**
   * True when {@link keyEnv} names a file whose text is the credential (a service-account key):
   * the server reads it at start, and `--allow-read` grants that one path.
   */
  keyIsFile?: boolean;
  /** Hosts dialled for credentials (an OAuth token endpoint), kept when `url` replaces the API's. */
  authHosts?: readonly string[];
  /** One-line description for `--help` and docs. */
  description: string;
  /**
   * Variables the provider reads instead of `<NAME>_API_KEY` (cloud credentials, a region);
   * their values reach the client as `credentials`. Absent: the one key variable.
   */
  env?: readonly ProviderEnvVar[];
  /**
   * The hosts dialled for the config's provider options and the environment, when they depend
   * on them (a region); `hosts` then lists the default's.
   */
  hostsFor?(options: Readonly<Record<string, unknown>>, env: EnvReader): string[];
  /**
   * The variable holding the key when the config names it (an OpenAI-compatible endpoint's
   * `options.key_env`); it wins over {@link keyEnv}.
   */
  keyEnvFor?(options: Readonly<Record<string, unknown>>): string;
}
