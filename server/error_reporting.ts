/**
 * The agent server's error reporting: off unless a DSN is configured (`observability.errors.dsn`
 * in the config, or `SENTRY_DSN` in the environment, which wins). Then fatal call failures (a
 * model that cannot connect or drops its session, a brain that cannot be reached, a pipeline
 * that fails) and unexpected errors (a route handler that throws, an unhandled rejection) are
 * sent to that Sentry-compatible server with the call's context, by the dependency-free client
 * in providers/obs/error_reports.ts, loaded only then. Every key, token, password and webhook
 * secret the config names, and each call's token, is scrubbed from every report.
 * @module
 */

import { errorMessage, FlowcatError } from "../core/errors.ts";
import type { Logger } from "../core/log.ts";
import type { CallFailureReport } from "./call_failures.ts";
import type { CallIdentity } from "./call_log.ts";
import type { EnvGet } from "./call_shapes.ts";
import { requiredEnv, SENTRY_DSN_ENV } from "./config_env.ts";
import type { AgentServerConfig } from "./config_types.ts";

export { SENTRY_DSN_ENV };

/** What a call failure is reported with besides the failure itself. */
export interface ReportedCall extends CallIdentity {
  /** `s2s` or `cascaded`. */
  pipeline: string;
  /** Providers and models, as the call-start line names them. */
  models: string;
  /** The call's token: scrubbed from the report. */
  token?: string;
}

/** Sends the server's error reports. */
export interface ErrorReporter {
  /** `host:port` reports go to (for `--allow-net`). */
  readonly host: string;
  /** A fatal failure ended (or stopped) a call. */
  callFailure(call: ReportedCall, failure: CallFailureReport): void;
  /** Something nobody expected threw: `where` says what was running. */
  unexpected(err: unknown, where: Record<string, string>, level?: "fatal" | "error"): void;
  /** Wait for the reports in flight, at most `ms`. */
  flush(ms?: number): Promise<void>;
}

function read(env: EnvGet, name: string): string | undefined {
  try {
    const v = env(name)?.trim();
    return v === "" ? undefined : v;
  } catch {
    return undefined; // not granted: reads as unset
  }
}

/** The DSN `config` and `env` ask for, or `undefined` (reporting off). */
export function configuredDsn(config: AgentServerConfig, env: EnvGet): string | undefined {
  return read(env, SENTRY_DSN_ENV) ?? config.observability.errors.dsn;
}

/** `host:port` of the configured DSN (for `--allow-net`), or `undefined`. */
export function dsnNetHost(config: AgentServerConfig, env: EnvGet): string | undefined {
  const dsn = configuredDsn(config, env);
  if (dsn === undefined) return undefined;
  try {
    const u = new URL(dsn);
    const port = u.port !== "" ? u.port : u.protocol === "https:" ? "443" : "80";
    return `${u.hostname}:${port}`;
  } catch {
    return undefined;
  }
}

/** Values of every secret variable the config names (keys, tokens, passwords, webhook secrets). */
function secretValues(config: AgentServerConfig, env: EnvGet): string[] {
  const out: string[] = [];
  for (const e of requiredEnv(config)) {
    // Knobs (log level, format, OTEL_DENO, ...) have no config path: they are no secrets.
    if (e.path === undefined) continue;
    const v = read(env, e.name);
    if (v !== undefined) out.push(v);
  }
  return out;
}

/**
 * The reporter `config` and `env` ask for, or `undefined` when no DSN is set (nothing loaded).
 * A DSN that cannot be parsed is a config error (`FlowcatError` kind `config`, the value not
 * shown); one whose host the process may not reach is a warning now rather than silence later.
 */
export async function errorReporterFrom(
  config: AgentServerConfig,
  env: EnvGet,
  log: Logger,
): Promise<ErrorReporter | undefined> {
  const dsn = configuredDsn(config, env);
  if (dsn === undefined) return undefined;
  const { createErrorReports, parseDsn, stackFrames } = await import(
    "../providers/obs/error_reports.ts"
  );
  if (parseDsn(dsn) === undefined) {
    // Only SENTRY_DSN can get here (the config's DSN is validated); its value holds the key.
    throw new FlowcatError(
      "config",
      `${SENTRY_DSN_ENV} is not a DSN (expected https://<public key>@<host>/<project id>)`,
    );
  }
  let warned = false;
  const reports = createErrorReports({
    dsn,
    secrets: secretValues(config, env),
    ...(config.observability.errors.environment !== undefined
      ? { environment: config.observability.errors.environment }
      : {}),
    onSendError: (message) => {
      if (warned) return;
      warned = true; // once: a reporter that cannot report must not flood the log either
      log.warn("error report not sent", { host: reports.dsn.host, error: message });
    },
  });
  const host = reports.dsn.host;
  if (!netGranted(host)) {
    log.warn("error reports cannot be sent: no network permission for the DSN's host", {
      host,
      hint: `run with --allow-net=${host} (deno task start grants it when it sees the DSN)`,
    });
  }
  return {
    host,
    callFailure(call, f) {
      const what = f.service === undefined
        ? `call error: ${f.processor ?? "pipeline"} ${f.kind}`
        : `provider failed: ${f.service} ${f.provider} ${f.kind}`;
      const tags: Record<string, string> = {
        call_id: String(call.runId),
        transport: call.transport,
        direction: call.direction,
        pipeline: call.pipeline,
        failure_kind: f.kind,
      };
      if (call.callId !== undefined) tags.leg_id = call.callId;
      if (f.service !== undefined) tags.service = f.service;
      if (f.provider !== undefined) tags.provider = f.provider;
      if (f.status !== undefined) tags.http_status = String(f.status);
      if (f.closeCode !== undefined) tags.close_code = String(f.closeCode);
      reports.send(
        {
          level: "error",
          message: what,
          exception: { type: "CallFailure", value: f.message },
          tags,
          contexts: {
            call: {
              run_id: call.runId,
              ...(call.callId !== undefined ? { leg_id: call.callId } : {}),
              transport: call.transport,
              direction: call.direction,
              pipeline: call.pipeline,
              models: call.models,
            },
          },
          extra: { caller: f.caller },
          fingerprint: [
            "call-failure",
            f.service ?? f.processor ?? "pipeline",
            f.provider ?? "",
            f.kind,
          ],
        },
        call.token !== undefined ? [call.token] : [],
      );
    },
    unexpected(err, where, level = "error") {
      const e = err instanceof Error ? err : new Error(errorMessage(err));
      reports.send({
        level,
        message: `${e.name}: ${e.message}`,
        exception: { type: e.name, value: e.message, frames: stackFrames(e.stack) },
        tags: { ...where },
      });
    },
    flush: (ms) => reports.flush(ms),
  };
}

function netGranted(host: string): boolean {
  try {
    return Deno.permissions.querySync({ name: "net", host }).state === "granted";
  } catch {
    return false;
  }
}
