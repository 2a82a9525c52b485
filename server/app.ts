/**
 * {@link createAgentServer}: the agent server assembled (session store, call manager, outbound
 * dialer, route table) behind one `Deno.serve` handler, and the types its options and result use.
 * The public entry point is `server/mod.ts`.
 * @module
 */

import { FlowcatError } from "../core/errors.ts";
import { consoleLogger, type Logger } from "../core/log.ts";
import { rateLimitedLogger } from "../core/log_limit.ts";
import type { WebRtcAnswerOptions } from "../transports/webrtc.ts";
import type { RealtimeFactory } from "../providers/registry.ts";
import { CallManager, type CallTicket, type CallWatcher, type EnvGet } from "./calls.ts";
import type { AgentServerConfig } from "./config.ts";
import {
  carrierDialer,
  type DialRequest,
  type DialResult,
  type OutboundDialer,
  type SipDialFn,
} from "./outbound.ts";
import type { CarrierTransferOptions } from "../telephony/carrier_transfer.ts";
import type { ServiceFactory, ServiceKind } from "../providers/service_registry.ts";
import { router } from "./router.ts";
import { type SipTrunk, startSipTrunk } from "./sip_trunk.ts";
import { agentRoutes } from "./routes.ts";
import { warmEngines, type WarmReport } from "./warmup.ts";
import { createServerMetrics, type ServerMetrics } from "./server_metrics.ts";
import { type CallTracing, exportMetricsFromEnv, tracingFromEnv } from "./tracing.ts";
import { type ErrorReporter, errorReporterFrom } from "./error_reporting.ts";
import {
  MemorySessionSource,
  type RunOrigin,
  type RunRecord,
  type SessionCluster,
} from "./session_store.ts";

export type {
  CallManager,
  CallTicket,
  CallWatcher,
  EnvGet,
  MemorySessionSource,
  RunOrigin,
  RunRecord,
  SessionCluster,
};
export type { DialRequest, DialResult, OutboundDialer, SipDialFn, SipTrunk };
export type { ServerMetrics, WarmReport };
export type { CallTracing, TracedCall, TracedCallEnd, TracedCallInfo } from "./tracing.ts";
export type { ErrorReporter, ReportedCall } from "./error_reporting.ts";
export type { CallIdentity } from "./call_log.ts";
export type { CallFailureReport, CallService, FailureKind } from "./call_failures.ts";
export type {
  Counter,
  CounterChild,
  Family,
  FamilySnapshot,
  Gauge,
  GaugeChild,
  Histogram,
  HistogramChild,
  Mirrored,
  MirrorFactory,
  MirrorSink,
  Registry,
} from "./prometheus.ts";
export type { ServiceFactory, ServiceKind };
export {
  ConfigError,
  formatConfigProblems,
  loadConfig,
  parseConfig,
  type ParseConfigOptions,
} from "./config.ts";
export type { AgentServerConfig } from "./config.ts";
export { type HttpSessionOptions, HttpSessionSource } from "./session_http.ts";

/** Options of {@link createAgentServer}. */
export interface AgentServerOptions {
  /** Validated server config (see `server/config.ts`). */
  config: AgentServerConfig;
  /** Reads environment variables (provider keys, carrier secrets, the API token); default none. */
  env?: EnvGet;
  /** Where the server and its calls log (default: info and above to stderr). */
  logger?: Logger;
  /** Replaces the registry's realtime factory (tests). */
  realtimeFactory?: RealtimeFactory;
  /** Replaces registry factories of cascaded services (tests). */
  serviceFactories?: { [K in ServiceKind]?: ServiceFactory<K> };
  /** Places SIP calls for `POST /calls`; default: the config's SIP trunk. */
  sipDial?: SipDialFn;
  /** Address the SIP trunk binds (default 0.0.0.0). */
  sipBindHost?: string;
  /** Replaces the outbound dialer entirely (tests). */
  dialer?: OutboundDialer;
  /** Where carrier calls are transferred over REST (tests: a fake API's origin). */
  carrierApi?: CarrierTransferOptions;
  /** Carrier silence after which a call counts as lost, ms (default 20000; tests shorten it). */
  mediaSilenceLimitMs?: number;
  /** WebRTC answer options for the playground (ICE mode, extra host addresses). */
  webrtc?: Omit<WebRtcAnswerOptions, "logger">;
  /** Set on each worker when several share one port (see `server/workers.ts`). */
  cluster?: SessionCluster;
  /**
   * Refused requests (bad webhook signature, call token, bearer) are logged once per this many
   * ms with a count (default 10000): a flood costs one line per interval.
   */
  refusalLogIntervalMs?: number;
  /**
   * Traces calls; default: OpenTelemetry when `env` has `OTEL_DENO=true` (server/tracing.ts),
   * else none.
   */
  tracing?: CallTracing;
  /**
   * Reports fatal call failures and unexpected errors; default: to the DSN of
   * `observability.errors.dsn` or `SENTRY_DSN` (server/error_reporting.ts), else none.
   */
  errors?: ErrorReporter;
  /**
   * Where `/metrics` text comes from instead of this server's registry (a worker asks the main
   * thread, which joins every worker's metrics).
   */
  metricsText?: () => Promise<string>;
  /**
   * Load and run every engine the config's calls use before returning (server/warmup.ts), so
   * the first call is not the one that pays for it (default true).
   */
  warm?: boolean;
}

/** A running agent server's parts. */
export interface AgentServer {
  /** The `Deno.serve` handler serving every route. */
  handler: (req: Request, info?: Deno.ServeHandlerInfo) => Promise<Response>;
  /** Runs calls and counts the live ones. */
  calls: CallManager;
  /** The runs (calls) the server knows about, with tokens and artifacts. */
  sessions: MemorySessionSource;
  /** The SIP trunk, when the config has one. */
  sip: SipTrunk | undefined;
  /** The server's metrics (what `GET /metrics` exposes). */
  metrics: ServerMetrics;
  /** Where error reports go, when reporting is on. */
  errors: ErrorReporter | undefined;
  /** What was warmed at start (absent with `warm: false`). */
  warmup: WarmReport | undefined;
  /**
   * Close what the server opened besides HTTP (the SIP trunk) and say the refusal counts still
   * pending. Call after draining.
   */
  close(): Promise<void>;
}

/**
 * Build the server (loads the providers; throws a config error for a missing key).
 *
 * @example
 * ```ts
 * import { createAgentServer } from "@flowcat/flowcat/server";
 * import { formatConfigProblems, loadConfig } from "@flowcat/flowcat/server/config";
 * import { consoleLogger } from "@flowcat/flowcat";
 * const logger = consoleLogger();
 * const loaded = await loadConfig("flowcat.yaml");
 * if (!loaded.ok) throw new Error(formatConfigProblems(loaded.problems));
 * const env = (name: string) => Deno.env.get(name);
 * const app = await createAgentServer({ config: loaded.config, env });
 * Deno.serve({ port: loaded.config.server.port }, app.handler);
 * ```
 */
export async function createAgentServer(opts: AgentServerOptions): Promise<AgentServer> {
  const { config } = opts;
  const env: EnvGet = opts.env ?? (() => undefined);
  const logger = opts.logger ?? consoleLogger("info", "flowcat");
  const provider = config.providers.realtime?.name ?? config.providers.llm?.name ?? "none";
  const brainConfig = config.agent.kind === "remote" ? config.agent.brainConfig : {};
  const sessions = new MemorySessionSource({
    provider,
    brainConfig,
    ...(config.recording.enabled ? { artifactDir: config.recording.dir } : {}),
    ...withCluster(config, env, opts.cluster),
  });
  const metrics = createServerMetrics();
  // A worker's points carry its index, as its /metrics samples do.
  await exportMetricsFromEnv(
    env,
    metrics.registry,
    opts.cluster ? { worker: String(opts.cluster.index) } : {},
  );
  const tracing = opts.tracing ??
    await tracingFromEnv(env, { recordContent: config.observability.tracing.recordContent });
  const errors = opts.errors ?? await errorReporterFrom(config, env, logger);
  // Only a config naming MCP servers loads the MCP SDK (and needs its grants).
  const tools = config.tools.mcp.length === 0
    ? undefined
    : await import("./mcp/toolbox.ts").then((m) =>
      m.openMcpToolbox(config.tools.mcp, { env, logger })
    );
  const calls = await CallManager.create({
    config,
    sessions,
    env,
    logger,
    metrics,
    ...(opts.realtimeFactory ? { realtimeFactory: opts.realtimeFactory } : {}),
    ...(opts.serviceFactories ? { serviceFactories: opts.serviceFactories } : {}),
    ...(tracing !== undefined ? { tracing } : {}),
    ...(errors !== undefined ? { errors } : {}),
    ...(tools !== undefined ? { tools } : {}),
  });
  // Before the first call can come in: it must not be the one that loads the engines.
  const warmup = opts.warm === false ? undefined : await warmEngines(config, logger);
  if (warmup !== undefined) {
    logger.info("engines warmed", { ms: warmup.ms, engines: warmup.engines.join(",") });
  }
  const sipCfg = config.telephony.sip;
  const sip = sipCfg === undefined || opts.sipDial !== undefined ? undefined : await startSipTrunk({
    sip: sipCfg,
    calls,
    sessions,
    env,
    logger,
    ...(opts.sipBindHost !== undefined ? { bindHost: opts.sipBindHost } : {}),
  });
  const sipDial = opts.sipDial ?? sip?.dial;
  const dialer = opts.dialer ?? carrierDialer({
    sessions,
    env,
    carriers: config.telephony.carriers,
    ...(config.telephony.sip ? { callerId: config.telephony.sip.callerId } : {}),
    ...(sipDial ? { sip: sipDial } : {}),
  });
  const refusals = rateLimitedLogger(logger, { intervalMs: opts.refusalLogIntervalMs ?? 10_000 });
  const handler = router(
    agentRoutes({
      config,
      calls,
      sessions,
      env,
      logger,
      refusals,
      metrics,
      ...(opts.metricsText !== undefined ? { metricsText: opts.metricsText } : {}),
      dialer,
      webrtc: opts.webrtc,
      ...(opts.carrierApi !== undefined ? { carrierApi: opts.carrierApi } : {}),
      ...(opts.mediaSilenceLimitMs !== undefined
        ? { mediaSilenceLimitMs: opts.mediaSilenceLimitMs }
        : {}),
    }),
    {
      maxBodyBytes: config.limits.maxBodyBytes,
      logger,
      ...(errors !== undefined
        ? {
          onError: (err: unknown, path: string) => errors.unexpected(err, { where: "route", path }),
        }
        : {}),
    },
  );
  const close = async () => {
    refusals.close();
    await sip?.close();
    await tools?.close();
    await errors?.flush(2000);
  };
  return { handler, calls, sessions, sip, metrics, errors, warmup, close };
}

/** Shortest shared call-token secret accepted (characters). */
const MIN_CLUSTER_SECRET = 32;

/**
 * The session cluster: with `server.cluster_secret_env`, tokens are signed with that shared
 * secret (over the workers' own cluster, if any), so any host behind the balancer verifies them.
 */
function withCluster(
  config: AgentServerConfig,
  env: EnvGet,
  workers: SessionCluster | undefined,
): { cluster?: SessionCluster } {
  const name = config.server.clusterSecretEnv;
  if (name === undefined) return workers === undefined ? {} : { cluster: workers };
  const value = env(name) ?? "";
  if (value.length < MIN_CLUSTER_SECRET) {
    throw new FlowcatError(
      "config",
      `server.cluster_secret_env: ${name} must hold at least ${MIN_CLUSTER_SECRET} characters ` +
        "(e.g. openssl rand -hex 32), the same on every host",
    );
  }
  const secret = new TextEncoder().encode(value);
  return { cluster: { ...(workers ?? { index: 0, count: 1 }), secret, hosts: true } };
}
