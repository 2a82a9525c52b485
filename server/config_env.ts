/**
 * Environment variables a config needs: provider keys (`<PROVIDER>_API_KEY`), the SIP password,
 * webhook secrets, API and brain tokens, plus the optional `FLOWCAT_*` knobs. Used for
 * `--allow-env` and for the start-up check; values are never read into a message.
 * @module
 */

import { credentialEnv, type ProviderKind, providersOfKind } from "../providers/registry.ts";
import { REALTIME_ENV_NAMES } from "../providers/realtime/env.ts";
import type { Problem } from "../core/agent/problems.ts";
import type { AgentServerConfig } from "./config_types.ts";
import { WEBHOOK_SECRET_ENV } from "../telephony/webhooks.ts";
import { carrierApiEnv } from "../telephony/carrier_api.ts";
import type { CarrierName } from "../telephony/serializers/mod.ts";
import { OTEL_ENV } from "./tracing.ts";

/** Log level variable the server reads (`debug`, `info`, `warn`, `error`, `silent`). */
export const LOG_ENV = "FLOWCAT_LOG";

/** Log format variable the server reads (`text`, `json`). */
export const LOG_FORMAT_ENV = "FLOWCAT_LOG_FORMAT";

/** The variable holding an error-reporting DSN (it wins over `observability.errors.dsn`). */
export const SENTRY_DSN_ENV = "SENTRY_DSN";

/** One environment variable the server reads. */
export interface EnvRequirement {
  /** Variable name, e.g. `GEMINI_API_KEY`. */
  name: string;
  /** Why it is read, for messages and docs. */
  why: string;
  /** True when the server refuses to start without it. */
  required: boolean;
  /** The config field that asks for it (absent for the optional knobs). */
  path?: string;
}

const KINDS: readonly ProviderKind[] = ["realtime", "stt", "llm", "tts"];

/**
 * Every variable the server reads for `config`, required ones first, each name once.
 *
 * @example
 * ```ts
 * declare const config: Parameters<typeof requiredEnv>[0];
 * requiredEnv(config).filter((e) => e.required).map((e) => e.name); // ["GEMINI_API_KEY"]
 * ```
 */
export function requiredEnv(config: AgentServerConfig): EnvRequirement[] {
  const out: EnvRequirement[] = [];
  const add = (e: EnvRequirement) => {
    if (!out.some((o) => o.name === e.name)) out.push(e);
  };
  for (const kind of KINDS) {
    const p = config.providers[kind];
    const info = p === undefined ? undefined : providersOfKind(kind)[p.name];
    if (p === undefined || info === undefined) continue;
    if (!info.needsKey) {
      // A local provider pointed at an https:// URL (a proxy, NVIDIA's hosted Riva) may want
      // its key: the server sends it when set.
      if (p.url?.startsWith("https://")) {
        add({
          name: credentialEnv(kind, p.name),
          why: `key of the ${p.name} ${kind} provider, sent when set`,
          required: false,
        });
      }
      continue;
    }
    // Cloud credentials in several variables (AWS) instead of one key.
    if (info.env !== undefined) {
      for (const v of info.env) {
        add({
          name: v.name,
          why: `${v.why} (${p.name} ${kind} provider)`,
          required: v.required,
          ...(v.required ? { path: `providers.${kind}.name` } : {}),
        });
      }
      continue;
    }
    add({
      name: credentialEnv(kind, p.name, p.options),
      why: info.keyIsFile
        ? `key file of the ${p.name} ${kind} provider`
        : `API key of the ${p.name} ${kind} provider`,
      required: true,
      path: `providers.${kind}.name`,
    });
  }
  if (config.agent.kind === "remote" && config.agent.tokenEnv !== undefined) {
    add({
      name: config.agent.tokenEnv,
      why: "bearer token sent to the remote brain",
      required: true,
      path: "agent.remote.token_env",
    });
  }
  const sip = config.telephony.sip;
  if (sip?.passwordEnv !== undefined) {
    add({
      name: sip.passwordEnv,
      why: "SIP trunk password",
      required: sip.register,
      path: "telephony.sip.password_env",
    });
  }
  if (sip?.inbound.auth !== undefined) {
    add({
      name: sip.inbound.auth.passwordEnv,
      why: "password inbound SIP callers must present",
      required: true,
      path: "telephony.sip.inbound.auth.password_env",
    });
  }
  for (const [carrier, name] of Object.entries(config.telephony.webhookSecretsEnv)) {
    if (name === undefined) continue;
    add({
      name,
      why: `${carrier} webhook signing secret`,
      required: true,
      path: `telephony.webhook_secrets_env.${carrier}`,
    });
  }
  // Enabled carriers without a named variable read their default ones (and carriers with two,
  // such as Sinch, Bandwidth or Exotel, always do). Required: a carrier without its secret
  // would refuse every webhook, so the server refuses to start instead.
  const named = config.telephony.webhookSecretsEnv as Record<string, string | undefined>;
  for (const carrier of config.telephony.carriers) {
    const defaults = WEBHOOK_SECRET_ENV[carrier as CarrierName] ?? [];
    if (defaults.length === 1 && named[carrier] !== undefined) continue;
    for (const name of defaults) {
      add({
        name,
        why: `${carrier} webhook credential (default variable)`,
        required: true,
        path: "telephony.carriers",
      });
    }
  }
  // REST credentials for outbound calls and transfers through each enabled carrier: optional
  // (a call that needs them and finds none fails with a message naming them).
  for (const carrier of config.telephony.carriers) {
    for (const name of carrierApiEnv(carrier as CarrierName)) {
      add({
        name,
        why: `${carrier} REST API credential (outbound calls, transfers)`,
        required: false,
      });
    }
  }
  if (config.api.tokenEnv !== undefined) {
    add({
      name: config.api.tokenEnv,
      why: "bearer token of POST /calls",
      required: true,
      path: "api.token_env",
    });
  }
  if (config.server.clusterSecretEnv !== undefined) {
    add({
      name: config.server.clusterSecretEnv,
      why: "call-token secret shared by the hosts behind one balancer",
      required: true,
      path: "server.cluster_secret_env",
    });
  }
  for (const m of config.tools.mcp) {
    if (m.transport === "http" && m.bearerEnv !== undefined) {
      add({
        name: m.bearerEnv,
        why: `bearer token of MCP server ${m.name}`,
        required: true,
        path: "tools.mcp.bearer_env",
      });
    }
  }
  for (const m of config.tools.mcp) {
    if (m.transport === "stdio") {
      for (const name of m.env) {
        add({ name, why: `passed on to MCP server ${m.name}`, required: false });
      }
    }
  }
  add({ name: LOG_ENV, why: "log level (debug, info, warn, error, silent)", required: false });
  add({ name: LOG_FORMAT_ENV, why: "log format (text, json)", required: false });
  add({ name: OTEL_ENV, why: "OpenTelemetry export on (true): call spans", required: false });
  add({
    name: SENTRY_DSN_ENV,
    why: "error reports to this DSN (wins over the config's)",
    required: false,
  });
  if (config.pipeline === "s2s") {
    for (const name of REALTIME_ENV_NAMES) {
      add({ name, why: "realtime voice and turn-taking knob", required: false });
    }
  }
  return out;
}

/**
 * Problems for required variables that are unset or empty, read through `get` (e.g.
 * `(n) => Deno.env.get(n)`). Each names the variable and the field that asks for it, never a
 * value.
 */
export function checkEnv(
  config: AgentServerConfig,
  get: (name: string) => string | undefined,
): Problem[] {
  const problems: Problem[] = [];
  for (const req of requiredEnv(config)) {
    if (!req.required) continue;
    let value: string | undefined;
    try {
      value = get(req.name);
    } catch {
      problems.push({
        path: req.path ?? "",
        message: `cannot read environment variable ${req.name} (run with --allow-env=${req.name})`,
        code: "env",
      });
      continue;
    }
    if (value !== undefined && value.trim() !== "") continue;
    problems.push({
      path: req.path ?? "",
      message: `environment variable ${req.name} is not set (${req.why}; export ${req.name}=...)`,
      code: "env",
    });
  }
  return problems;
}
