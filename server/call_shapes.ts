/**
 * The two call shapes the agent server runs, loaded once at start from the config:
 * speech-to-speech (one realtime provider) and cascaded (speech-to-text, language model,
 * text-to-speech). Loading resolves the providers in the registries, imports their modules
 * and reads their keys, so a missing key or an unwired provider stops the server at start
 * with one clear line instead of failing the first call.
 * @module
 */

import { buildCascadedTask, buildS2sTask, type CallBase } from "../core/builders.ts";
import { errorMessage, FlowcatError } from "../core/errors.ts";
import type { Logger } from "../core/log.ts";
import type { PipelineTask } from "../core/task.ts";
import type { ProviderInfo } from "../providers/provider_types.ts";
import {
  credentialEnv,
  REALTIME_PROVIDERS,
  type RealtimeFactory,
  type RealtimeProviderOptions,
} from "../providers/registry.ts";
import { realtimeEnvSettings } from "../providers/realtime/env.ts";
import type { ServiceOptions } from "../providers/service_options.ts";
import type { ProviderEnvVar } from "../providers/provider_types.ts";
import {
  type ServiceFactory,
  type ServiceKind,
  type ServiceOf,
  serviceProviders,
} from "../providers/service_registry.ts";
import type { ProviderKind } from "../providers/provider_types.ts";
import type { ProviderConfig } from "./config_types.ts";
import type { AgentServerConfig } from "./config_types.ts";
import { assertProvidersWired } from "./provider_wiring.ts";

/** Reads one environment variable (injectable for tests). */
export type EnvGet = (name: string) => string | undefined;

/** What a call needs beyond the shape: the leg, brain, run and watchers. */
export type CallInputs = CallBase & { greeting?: string };

/** A loaded call shape. */
export interface CallShape {
  /** Provider name a remote brain is told (`provider` in `POST /session`). */
  provider: string;
  /** The providers and models, for the call-start line: `echo`, `whisper.cpp -> ollama (llama3.2) -> espeak`. */
  models: string;
  /** Model per service, where one is known (for traces). */
  serviceModels: Partial<Record<"realtime" | "stt" | "llm" | "tts", string>>;
  /** Assemble one call. */
  build(inputs: CallInputs): PipelineTask;
}

/** Options of {@link loadCallShape}. */
export interface LoadShapeOptions {
  config: AgentServerConfig;
  env: EnvGet;
  logger: Logger;
  /** Replaces the registry's realtime factory (tests). */
  realtimeFactory?: RealtimeFactory;
  /** Replaces registry factories of cascaded services (tests). */
  serviceFactories?: { [K in ServiceKind]?: ServiceFactory<K> };
}

/** Realtime providers speaking the OpenAI Realtime protocol (their env knobs are OpenAI's). */
const OPENAI_FAMILY: ReadonlySet<string> = new Set(["openai", "azure", "openai-compatible"]);

/** Load the shape the config's `pipeline` names. */
export function loadCallShape(opts: LoadShapeOptions): Promise<CallShape> {
  return opts.config.pipeline === "cascaded" ? loadCascaded(opts) : loadS2s(opts);
}

function readKey(env: EnvGet, p: ProviderConfig, kind: ProviderKind, info?: ProviderInfo): string {
  const name = credentialEnv(kind, p.name, p.options);
  const key = env(name);
  if (key === undefined || key === "") {
    const what = info?.keyIsFile ? "key file" : "key";
    throw new FlowcatError(
      "config",
      `${name} is not set (the ${what} for ${kind} provider ${p.name})`,
    );
  }
  if (!info?.keyIsFile) return key;
  // The variable names a file (a service-account key): its text is the credential.
  try {
    return Deno.readTextFileSync(key);
  } catch (e) {
    const why = e instanceof Deno.errors.NotFound
      ? "no such file"
      : e instanceof Deno.errors.NotCapable || e instanceof Deno.errors.PermissionDenied
      ? `no read permission; run with --allow-read=${key}`
      : errorMessage(e);
    throw new FlowcatError("config", `${name}: cannot read ${key} (${why})`);
  }
}

/** The values of a provider's declared variables that are set; a required one unset throws. */
function readCredentials(
  env: EnvGet,
  info: { name: string; env?: readonly ProviderEnvVar[] },
  kind: string,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const v of info.env ?? []) {
    const value = env(v.name);
    if (value !== undefined && value !== "") out[v.name] = value;
    else if (v.required) {
      throw new FlowcatError(
        "config",
        `${v.name} is not set (${v.why}, for ${kind} provider ${info.name})`,
      );
    }
  }
  return out;
}

async function loadS2s(opts: LoadShapeOptions): Promise<CallShape> {
  const { config, env, logger } = opts;
  const p = config.providers.realtime;
  if (p === undefined) throw new FlowcatError("config", "pipeline s2s needs providers.realtime");
  const info = REALTIME_PROVIDERS[p.name];
  if (info === undefined) {
    throw new FlowcatError("config", `providers.realtime.name: unknown provider "${p.name}"`);
  }
  const factory = opts.realtimeFactory ?? await info.load();
  const base: RealtimeProviderOptions = { options: { ...p.options }, logger };
  if (opts.realtimeFactory === undefined && info.warm !== undefined) {
    const started = performance.now();
    // A fixed greeting is the first thing every call says: warm it too (one with {{vars}}
    // differs per call).
    const greeting = config.agent.greeting;
    const warmOpts = greeting === undefined || greeting.includes("{{")
      ? base
      : { ...base, options: { ...base.options, greeting } };
    // A provider that cannot warm up still starts: the first call then pays for it.
    await info.warm(warmOpts).then(
      () =>
        logger.debug("provider warmed up", { provider: p.name, ms: performance.now() - started }),
      (err) => logger.warn("provider warm-up failed", { provider: p.name, err: errorMessage(err) }),
    );
  }
  if (p.model !== undefined) base.model = p.model;
  if (p.voice !== undefined) base.voice = p.voice;
  if (p.url !== undefined) base.url = p.url;
  if (info.env !== undefined) base.credentials = readCredentials(env, info, "realtime");
  else if (info.needsKey) {
    base.apiKey = readKey(env, p, "realtime", info);
    // A cloud client only resolves its options when made: make one now, so a bad option (an
    // Azure resource or deployment missing) fails at start, not on the first call.
    if (opts.realtimeFactory === undefined) factory(base);
  } else if (opts.realtimeFactory === undefined) factory(base); // the echo's `rates`, likewise
  // Other providers' clients pick their own default voice; Azure's and OpenAI-compatible ones
  // are OpenAI's client.
  const family = OPENAI_FAMILY.has(p.name) ? "openai" : p.name === "gemini" ? "gemini" : undefined;
  return {
    provider: p.name,
    models: described(p.name, base.model),
    serviceModels: { realtime: base.model ?? p.name },
    build(inputs) {
      // The call's own logger (it carries the call's id), for the knobs and the model client.
      const log = inputs.logger ?? logger;
      const settings = realtimeEnvSettings(family, env, (l) => log.warn(l));
      const o: RealtimeProviderOptions = { ...base, logger: log, options: { ...base.options } };
      if (inputs.greeting !== undefined) o.options!.greeting = inputs.greeting;
      return buildS2sTask({
        ...inputs,
        realtime: factory(o),
        model: base.model ?? p.name,
        kickoff: inputs.greeting === undefined
          ? "The caller has joined. Greet them as your instructions say."
          : `The caller has joined. Start by saying: "${inputs.greeting}"`,
        voice: base.voice ?? settings.voice,
        vad: settings.vad,
      });
    },
  };
}

/** A loaded cascaded service: its factory and the options every call gets. */
interface LoadedService<K extends ServiceKind> {
  /** A client for one call, logging to `logger` (default: the server's). */
  make: (logger?: Logger) => ServiceOf[K];
  model?: string;
  /** Provider and model, as the call-start line names them. */
  described: string;
}

async function loadService<K extends ServiceKind>(
  kind: K,
  p: ProviderConfig | undefined,
  opts: LoadShapeOptions,
): Promise<LoadedService<K>> {
  if (p === undefined) {
    throw new FlowcatError("config", `pipeline cascaded needs providers.${kind}`);
  }
  const info = serviceProviders(kind)[p.name];
  if (info === undefined) {
    throw new FlowcatError("config", `providers.${kind}.name: unknown provider "${p.name}"`);
  }
  const factory = opts.serviceFactories?.[kind] ?? await info.load();
  const so: ServiceOptions = {
    provider: p.name,
    options: { ...info.options, ...p.options },
    logger: opts.logger,
  };
  const baseUrl = p.url ?? info.baseUrl;
  if (baseUrl !== undefined) so.baseUrl = baseUrl;
  const model = p.model ?? info.defaultModel;
  if (model !== undefined) so.model = model;
  else if (kind === "llm") {
    throw new FlowcatError(
      "config",
      info.family === "azure-openai"
        ? `providers.llm.model: name the Azure OpenAI deployment (e.g. model: my-gpt-4o-mini)`
        : `providers.llm.model: ${p.name} serves the model you loaded; name it (e.g. model: my-model)`,
    );
  }
  const voice = p.voice ?? info.defaultVoice;
  if (voice !== undefined) so.voice = voice;
  if (p.language !== undefined) so.language = p.language;
  if (info.env !== undefined) so.credentials = readCredentials(opts.env, info, kind);
  else if (info.needsKey) so.apiKey = readKey(opts.env, p, kind, info);
  else {
    // A local provider behind an operator's proxy may still want a key: pass it when set.
    const key = opts.env(credentialEnv(kind, p.name, p.options));
    if (key) so.apiKey = key;
  }
  // Construct one now: a bad option fails at start, not on the first call.
  factory(so);
  return {
    make: (logger) => factory(logger === undefined ? so : { ...so, logger }),
    described: described(p.name, model),
    ...(model !== undefined ? { model } : {}),
  };
}

async function loadCascaded(opts: LoadShapeOptions): Promise<CallShape> {
  const { providers } = opts.config;
  // Every provider's wiring before any key: an unwired one is the operator's first problem.
  assertProvidersWired(opts.config);
  const stt = await loadService("stt", providers.stt, opts);
  const llm = await loadService("llm", providers.llm, opts);
  const tts = await loadService("tts", providers.tts, opts);
  return {
    provider: providers.llm!.name,
    models: `${stt.described} -> ${llm.described} -> ${tts.described}`,
    serviceModels: definedOnly({ stt: stt.model, llm: llm.model, tts: tts.model }),
    build(inputs) {
      const { greeting, ...call } = inputs;
      return buildCascadedTask({
        ...call,
        stt: stt.make(inputs.logger),
        llm: llm.make(inputs.logger),
        tts: tts.make(inputs.logger),
        models: { stt: stt.model, llm: llm.model, tts: tts.model },
        turns: opts.config.turns,
        bargeIn: opts.config.turns.bargeIn,
        ...(greeting !== undefined
          ? { greeting }
          : { kickoff: "The caller has joined. Greet them as your instructions say." }),
      });
    },
  };
}

function definedOnly<T>(o: Record<string, T | undefined>): Record<string, T> {
  return Object.fromEntries(Object.entries(o).filter((e): e is [string, T] => e[1] !== undefined));
}

/** `name`, or `name (model)` when a model is named. */
function described(name: string, model: string | undefined): string {
  return model === undefined || model === name ? name : `${name} (${model})`;
}
