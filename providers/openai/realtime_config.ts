/**
 * Resolving an OpenAI-style realtime client's settings from a provider spec (endpoint, auth,
 * defaults) and the per-call {@link RealtimeProviderOptions}. Shared by `createOpenAIRealtime`
 * and every `openAIStyleRealtime` wrapper, so they validate options the same way.
 * @module
 */

import { FlowcatError } from "../../core/errors.ts";
import { type Logger, silentLogger } from "../../core/log.ts";
import type { RealtimeSetup } from "../../core/seams.ts";
import type { RealtimeProviderOptions } from "../provider_types.ts";
import type {
  OpenAIAudioFormat,
  OpenAIRealtimeProtocol,
  OpenAISessionConfig,
} from "./realtime_wire.ts";

/** A provider that speaks the OpenAI Realtime protocol. */
export interface OpenAIStyleSpec {
  /** Provider name, used in errors and logs. */
  name: string;
  /** WebSocket endpoint without the model, e.g. `wss://api.openai.com/v1/realtime`. */
  baseUrl: string;
  /**
   * How the key is sent: a header name (the key is its whole value, e.g. `api-key`) or a function
   * making the headers. Default: `Authorization: Bearer <key>`.
   */
  authHeader?: string | ((key: string) => Record<string, string>);
  /** Model used when the config names none. */
  defaultModel: string;
  /** Voice used when the config names none. */
  defaultVoice: string;
  /** Dialect when the config does not set `options.protocol`; default `"ga"`. */
  protocol?: OpenAIRealtimeProtocol;
}

/** Everything an {@link OpenAIRealtimeClient} needs, resolved. Holds the credential: never log it. */
export interface OpenAIClientConfig {
  provider: string;
  /** Full URL including `?model=`. */
  url: string;
  /** Request headers, including auth. */
  headers: Record<string, string>;
  model: string;
  /** Voice from the provider options; wins over the setup's voice. */
  voiceOverride?: string;
  defaultVoice: string;
  protocol: OpenAIRealtimeProtocol;
  transcriptionModel: string;
  vadThreshold: number;
  /** Whether the server cancels the active response on barge-in (`interrupt_response`). */
  serverInterrupt: boolean;
  /** Deadline for opening the socket and for the session handshake, each. */
  timeoutMs: number;
  /** Tries to open a reseeded session after a dropped socket (0: none, the call ends). */
  reconnectAttempts: number;
  /** Wait before the first try; doubled for each further one. */
  reconnectBackoffMs: number;
  /** Caller audio kept for a reseeded session (not yet a transcribed turn), ms. */
  audioBufferMs: number;
  /** Audio both ways: 24 kHz PCM16, or 8 kHz mu-law (a telephone leg's own). */
  audioFormat: OpenAIAudioFormat;
  logger: Logger;
}

/** Default deadline for the socket and for the handshake. */
export const DEFAULT_OPENAI_TIMEOUT_MS = 10_000;

function authHeaders(spec: OpenAIStyleSpec, key: string): Record<string, string> {
  const a = spec.authHeader;
  if (a === undefined) return { Authorization: `Bearer ${key}` };
  if (typeof a === "string") return { [a]: key };
  return a(key);
}

function option<T>(
  provider: string,
  options: Record<string, unknown>,
  name: string,
  ok: (v: unknown) => v is T,
  def: T,
): T {
  const v = options[name];
  if (v === undefined) return def;
  if (ok(v)) return v;
  throw new FlowcatError("config", `${provider}: options.${name} is invalid`);
}

const isString = (v: unknown): v is string => typeof v === "string" && v !== "";
const isBool = (v: unknown): v is boolean => typeof v === "boolean";
const isProtocol = (v: unknown): v is OpenAIRealtimeProtocol =>
  v === "ga" || v === "beta" || v === "xai";
const isUnit = (v: unknown): v is number => typeof v === "number" && v >= 0 && v <= 1;
const isPositive = (v: unknown): v is number =>
  typeof v === "number" && Number.isFinite(v) && v > 0;
const isCount = (v: unknown): v is number => Number.isInteger(v) && (v as number) >= 0;
const isFormat = (v: unknown): v is OpenAIAudioFormat => v === "pcm16" || v === "g711_ulaw";

/**
 * Resolve a client config. Options read from `opts.options`: `protocol` (`"ga"` | `"beta"` | `"xai"`),
 * `transcriptionModel`, `vadThreshold` (0..1, default 0.5), `serverInterrupt` (default true),
 * `timeoutMs`, `reconnectAttempts` (default 3), `reconnectBackoffMs` (default 250),
 * `audioBufferMs` (default 30000), `audioFormat` (`"pcm16"`, the default, or `"g711_ulaw"`: 8 kHz
 * mu-law both ways, not with `xai`). Throws `FlowcatError("config")` on a missing key, a bad URL or a bad option;
 * the messages never hold the key or the URL.
 */
export function resolveOpenAIConfig(
  spec: OpenAIStyleSpec,
  opts: RealtimeProviderOptions,
): OpenAIClientConfig {
  const provider = spec.name;
  if (opts.apiKey === undefined || opts.apiKey === "") {
    throw new FlowcatError("config", `${provider}: missing API key`);
  }
  const model = opts.model ?? spec.defaultModel;
  let url: URL;
  try {
    url = new URL(opts.url ?? spec.baseUrl);
  } catch (err) {
    throw new FlowcatError("config", `${provider}: bad realtime URL`, { cause: err });
  }
  if (url.protocol !== "wss:" && url.protocol !== "ws:") {
    throw new FlowcatError("config", `${provider}: realtime URL must be ws:// or wss://`);
  }
  // Azure's preview endpoint names the model as `deployment`.
  if (!url.searchParams.has("model") && !url.searchParams.has("deployment")) {
    url.searchParams.set("model", model);
  }
  const options = opts.options ?? {};
  const protocol = option(provider, options, "protocol", isProtocol, spec.protocol ?? "ga");
  const headers = authHeaders(spec, opts.apiKey);
  if (protocol === "beta") headers["OpenAI-Beta"] = "realtime=v1";
  const audioFormat = option(provider, options, "audioFormat", isFormat, "pcm16");
  if (audioFormat !== "pcm16" && protocol === "xai") {
    throw new FlowcatError(
      "config",
      `${provider}: options.audioFormat ${audioFormat} needs ga or beta`,
    );
  }
  return {
    provider,
    url: url.href,
    headers,
    model,
    voiceOverride: opts.voice,
    defaultVoice: spec.defaultVoice,
    protocol,
    transcriptionModel: option(
      provider,
      options,
      "transcriptionModel",
      isString,
      protocol === "ga" ? "gpt-4o-transcribe" : "whisper-1",
    ),
    vadThreshold: option(provider, options, "vadThreshold", isUnit, 0.5),
    serverInterrupt: option(provider, options, "serverInterrupt", isBool, true),
    timeoutMs: option(provider, options, "timeoutMs", isPositive, DEFAULT_OPENAI_TIMEOUT_MS),
    reconnectAttempts: option(provider, options, "reconnectAttempts", isCount, 3),
    reconnectBackoffMs: option(provider, options, "reconnectBackoffMs", isPositive, 250),
    audioBufferMs: option(provider, options, "audioBufferMs", isPositive, 30_000),
    audioFormat,
    logger: opts.logger ?? silentLogger,
  };
}

/** OpenAI's own endpoint and defaults. */
export const OPENAI_REALTIME_SPEC: Readonly<OpenAIStyleSpec> = Object.freeze({
  name: "openai",
  baseUrl: "wss://api.openai.com/v1/realtime",
  defaultModel: "gpt-realtime",
  defaultVoice: "alloy",
  protocol: "ga",
});

/** VAD timing when the setup gives none (OpenAI's own defaults). */
const DEFAULT_PREFIX_PADDING_MS = 300;
const DEFAULT_SILENCE_DURATION_MS = 500;

/**
 * The session a call starts with. Voice: the provider options', else the setup's, else the
 * spec's default. Only the VAD timings of `setup.vad` apply; its start/end sensitivities are
 * Gemini enums with no OpenAI equivalent (the threshold is `options.vadThreshold`).
 */
export function sessionConfigFor(
  cfg: OpenAIClientConfig,
  setup: RealtimeSetup,
): OpenAISessionConfig {
  return {
    instructions: setup.systemPrompt,
    voice: cfg.voiceOverride ?? setup.voice ?? cfg.defaultVoice,
    tools: setup.tools,
    transcriptionModel: cfg.transcriptionModel,
    audioFormat: cfg.audioFormat,
    turnDetection: {
      threshold: cfg.vadThreshold,
      prefixPaddingMs: setup.vad?.prefixPaddingMs ?? DEFAULT_PREFIX_PADDING_MS,
      silenceDurationMs: setup.vad?.silenceDurationMs ?? DEFAULT_SILENCE_DURATION_MS,
      interruptResponse: cfg.serverInterrupt,
    },
  };
}

/** The key variable of `openai-compatible` when the config names none. */
export const OPENAI_COMPATIBLE_KEY_ENV = "OPENAI_COMPATIBLE_API_KEY";

/** The key variable an `openai-compatible` config names (`options.key_env`), else the default. */
export function openAICompatibleKeyEnv(options: Readonly<Record<string, unknown>>): string {
  const name = options.key_env;
  return typeof name === "string" && ENV_NAME.test(name) ? name : OPENAI_COMPATIBLE_KEY_ENV;
}

/** What an environment variable name may be (upper case, digits, `_`). */
export const ENV_NAME: RegExp = /^[A-Z_][A-Z0-9_]*$/;
