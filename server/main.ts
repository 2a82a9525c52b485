// Over 400 lines: the command line read top to bottom: arguments, grants, serving, drain.
/**
 * `deno task start`: the Flowcat agent server.
 *
 * ```sh
 * deno task start                                  # examples/agent.yaml: local echo agent, no key
 * deno task start --config my-agent.yaml --port 8000
 * deno task start --config my-agent.yaml --print-permissions
 * ```
 *
 * A config with problems prints every one of them (`path: message (hint)`) and exits 2.
 * SIGINT / SIGTERM drain: no new calls, running calls get `limits.drain_seconds`, then are
 * cancelled, then the process exits.
 * @module
 */

import { parseArgs } from "node:util";
import { errorMessage, FlowcatError } from "../core/errors.ts";
import type { Logger } from "../core/log.ts";
import { createAgentServer } from "./app.ts";
import { checkEnv, formatConfigProblems, loadConfig } from "./config.ts";
import type { AgentServerConfig, TlsFiles } from "./config.ts";
import { readTlsFiles, type TlsPem } from "./tls.ts";
import { credentialFileReads, permissionCommand, type PermissionOptions } from "./permissions.ts";
import {
  hostInterfaces,
  playgroundPeerWarning,
  ungrantedPeerAddresses,
  webrtcPeerHosts,
} from "./webrtc_peers.ts";
import { loggerFromEnv } from "./log_env.ts";
import { grantProblems } from "./grant_check.ts";
import { unwiredProblems } from "./provider_wiring.ts";
import { runCheck, warnUnreachable } from "./check.ts";
import { dsnNetHost, type ErrorReporter } from "./error_reporting.ts";
import { parseWorkerCount, startWorkers } from "./workers.ts";
import { describeWorkerFailure, onEscapedError } from "./worker_failures.ts";
import { type AgentHttp, guardHopPort, serveAgentHttp } from "./serve.ts";
import { carrierApiHost, SIGNALWIRE_SPACE_ENV } from "../telephony/carrier_api.ts";
import type { CarrierName } from "../telephony/serializers/mod.ts";

/** Config used when `--config` is not given. */
export const DEFAULT_CONFIG = "examples/agent.yaml";

/**
 * What `--workers` threads read: Deno checks read access to every module a worker loads, so its
 * module graph (the sources and the npm packages) must be readable. Sources only: no config,
 * `deno.json` or `.git` beyond what the config itself grants.
 */
export const WORKER_READS: readonly string[] = Object.freeze([
  "server",
  "core",
  "providers",
  "telephony",
  "transports",
  "node_modules",
]);

/** The espeak-ng engine file the echo agent's local voice reads. */
export const ESPEAK_WASM =
  "node_modules/.deno/espeak-ng@1.0.2/node_modules/espeak-ng/dist/espeak-ng.wasm";

/** What `--help` prints. */
export const HELP = `Flowcat agent server

Usage: deno task start [options]

Options:
  --config <path>        agent config, YAML or JSON (default ${DEFAULT_CONFIG})
  --port <n>             listen port (default: the config's server.port, 6210)
  --host <addr>          listen address (default: the config's server.host, 127.0.0.1)
  --public-url <url>     public https origin carriers reach (for answer documents)
  --tls-cert <file>      serve HTTPS with this PEM certificate chain (with --tls-key;
                         browsers on other hosts need https for the microphone)
  --tls-key <file>       the certificate's PEM private key
  --workers <n|auto>     serve from n threads sharing the port (auto: one per core; default 1)
  --print-permissions    print the least-privilege deno command for this config and exit
  --check                probe every configured provider (and its key, where a cheap
                         endpoint tells), print a table, exit 1 when any failed
  -h, --help             this text

Environment: <PROVIDER>_API_KEY for the configured provider (e.g. GEMINI_API_KEY; AWS
providers read AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION),
FLOWCAT_LOG (debug|info|warn|error), FLOWCAT_LOG_FORMAT (text|json), FLOWCAT_VOICE,
FLOWCAT_VAD_*, OTEL_DENO=true (OpenTelemetry traces; OTEL_EXPORTER_OTLP_* as Deno reads them),
SENTRY_DSN (error reports).
See docs/config.md and docs/observability.md.
`;

/** Parsed command line. */
export interface ServerArgs {
  config: string;
  port?: number;
  host?: string;
  publicUrl?: string;
  /** HTTPS certificate and key files (both or neither). */
  tls?: TlsFiles;
  /** Worker threads sharing the port (1: serve on the main thread). */
  workers: number;
  printPermissions: boolean;
  /** Probe the providers, print a table and exit (`--check`). */
  check: boolean;
  help: boolean;
}

/** Parse the command line; a usage mistake is a `config` error. */
export function parseServerArgs(args: string[]): ServerArgs {
  let v;
  try {
    v = parseArgs({
      args,
      options: {
        config: { type: "string" },
        port: { type: "string" },
        host: { type: "string" },
        "public-url": { type: "string" },
        "tls-cert": { type: "string" },
        "tls-key": { type: "string" },
        workers: { type: "string" },
        "print-permissions": { type: "boolean", default: false },
        check: { type: "boolean", default: false },
        help: { type: "boolean", short: "h", default: false },
      },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (err) {
    throw new FlowcatError("config", `${errorMessage(err)} (see --help)`);
  }
  const out: ServerArgs = {
    config: v.config ?? DEFAULT_CONFIG,
    workers: v.workers === undefined ? 1 : parseWorkerCount(v.workers),
    printPermissions: v["print-permissions"] ?? false,
    check: v.check ?? false,
    help: v.help ?? false,
  };
  if (v.port !== undefined) {
    const n = Number(v.port);
    if (!/^\d{1,5}$/.test(v.port) || n > 65535) {
      throw new FlowcatError("config", `--port: expected 0-65535, got "${v.port}"`);
    }
    out.port = n;
  }
  if (v.host !== undefined) out.host = v.host;
  if ((v["tls-cert"] === undefined) !== (v["tls-key"] === undefined)) {
    throw new FlowcatError("config", "--tls-cert and --tls-key go together");
  }
  if (v["tls-cert"] !== undefined && v["tls-key"] !== undefined) {
    out.tls = { certFile: v["tls-cert"], keyFile: v["tls-key"] };
  }
  if (v["public-url"] !== undefined) {
    if (!/^https?:\/\/[^/?#\s]+\/?$/.test(v["public-url"])) {
      throw new FlowcatError(
        "config",
        `--public-url: expected an origin such as https://agent.example.com, got "${
          v["public-url"]
        }"`,
      );
    }
    out.publicUrl = v["public-url"].replace(/\/$/, "");
  }
  return out;
}

/** Extra reads the implementation needs beyond the config's own files. */
export function implementationReads(config: AgentServerConfig): string[] {
  const { realtime: rt, tts } = config.providers;
  const espeak = (rt?.name === "echo" && rt.options.tts !== "none") || tts?.name === "espeak";
  return espeak ? [ESPEAK_WASM] : [];
}

/**
 * The inputs of the least-privilege flags for `config` run with `a`'s overrides on this host:
 * the files the implementation reads, with the playground on the addresses WebRTC answers
 * browsers at (read from this host's interfaces now), and the error-reporting server when a DSN
 * is configured (in the config or in `SENTRY_DSN`, read through `env`).
 */
export function serverPermissionOptions(
  config: AgentServerConfig,
  a: Pick<ServerArgs, "config" | "host" | "port" | "tls"> & { workers?: number },
  env: (name: string) => string | undefined = () => undefined,
): PermissionOptions {
  const host = a.host ?? config.server.host;
  const tls = a.tls ?? config.server.tls;
  const dsn = dsnNetHost(config, env);
  return {
    configPath: a.config,
    env,
    host,
    port: a.port ?? config.server.port,
    ...(a.workers !== undefined && a.workers > 1 ? { workers: a.workers } : {}),
    extraRead: [
      ...implementationReads(config),
      ...credentialFileReads(config, env),
      ...(tls ? [tls.certFile, tls.keyFile] : []),
      ...(a.workers !== undefined && a.workers > 1 ? WORKER_READS : []),
    ],
    extraNet: [
      ...(config.playground.enabled ? webrtcPeerHosts(host, hostInterfaces()) : []),
      ...carrierApiHosts(config, env),
      ...(dsn !== undefined ? [dsn] : []),
    ],
  };
}

/** The REST API hosts of the enabled carriers (outbound calls and transfers). */
function carrierApiHosts(
  config: AgentServerConfig,
  env: (name: string) => string | undefined,
): string[] {
  const space = env(SIGNALWIRE_SPACE_ENV);
  return config.telephony.carriers
    .map((c) => carrierApiHost(c as CarrierName, space))
    .filter((h): h is string => h !== undefined);
}

function envGet(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined; // not granted: reads as unset
  }
}

/**
 * Parse the command line and load its config, answering `--help` and every user mistake (one
 * line or the config's problem list, no stack trace): the exit code then, else both.
 */
export async function parseAndLoad(
  args: string[],
): Promise<{ args: ServerArgs; config: AgentServerConfig } | number> {
  let a: ServerArgs;
  try {
    a = parseServerArgs(args);
  } catch (e) {
    console.error(`flowcat: ${errorMessage(e)}`);
    return 2;
  }
  if (a.help) {
    console.log(HELP);
    return 0;
  }
  const loaded = await loadConfig(a.config);
  if (!loaded.ok) {
    console.error(formatConfigProblems(loaded.problems, a.config));
    return 2;
  }
  return { args: a, config: loaded.config };
}

/** Run the server; resolves with the exit code. */
export async function main(args: string[]): Promise<number> {
  const err = (s: string) => console.error(s);
  const parsed = await parseAndLoad(args);
  if (typeof parsed === "number") return parsed;
  const { args: a, config } = parsed;
  if (a.printPermissions) {
    console.log(permissionCommand(config, serverPermissionOptions(config, a, envGet)));
    return 0;
  }
  if (a.check) return await runCheck(config, { env: envGet, print: (l) => console.log(l) });
  if (a.host !== undefined) config.server.host = a.host;
  if (a.port !== undefined) config.server.port = a.port;
  if (a.publicUrl !== undefined) config.telephony.publicUrl = a.publicUrl;
  if (a.tls !== undefined) config.server.tls = a.tls;
  let tls: TlsPem | undefined;
  try {
    tls = config.server.tls ? await readTlsFiles(config.server.tls) : undefined;
  } catch (e) {
    err(`flowcat: ${errorMessage(e)}`);
    return 2;
  }
  // A provider Flowcat does not speak yet comes before its key: the key would not help.
  const unwired = unwiredProblems(config);
  if (unwired.length > 0) {
    err(formatConfigProblems(unwired, a.config));
    return 2;
  }
  // Missing key variables: every one named, before anything starts.
  const envProblems = checkEnv(config, envGet);
  if (envProblems.length > 0) {
    err(formatConfigProblems(envProblems, a.config));
    return 2;
  }
  // A grant the config needs but this process lacks is said now, naming the field, not found
  // call by call. Checked once the providers loaded: a provider missing from a compiled
  // executable is the more useful message.
  const missingGrants = () => {
    const problems = grantProblems(
      config,
      (d) => Deno.permissions.querySync(d).state === "granted",
    );
    if (problems.length > 0) err(formatConfigProblems(problems, a.config));
    return problems.length > 0;
  };
  const logger: Logger = loggerFromEnv(envGet, "flowcat");
  // In the background: a local provider that is down is said now, not at the first call.
  void warnUnreachable(config, logger, { env: envGet });
  if (a.workers > 1) return missingGrants() ? 2 : await serveOnWorkers(a, config, tls);
  let app;
  try {
    app = await createAgentServer({ config, env: envGet, logger });
  } catch (e) {
    // A user mistake (bad config, missing key, provider not yet wired) is one line, no trace.
    if (e instanceof FlowcatError && (e.kind === "config" || e.kind === "not_wired")) {
      err(`flowcat: ${e.message}`);
      return 2;
    }
    throw e;
  }
  if (missingGrants()) {
    await app.close();
    return 2;
  }
  if (app.errors !== undefined) reportUncaught(app.errors);
  const { host, port } = config.server;
  let server: AgentHttp;
  try {
    server = await serveAgentHttp({
      config,
      handler: app.handler,
      logger,
      metrics: app.metrics,
      ...(tls !== undefined ? { tls } : {}),
    });
  } catch (e) {
    err(`flowcat: cannot listen on ${host}:${port}: ${errorMessage(e)}`);
    await app.close();
    return 1;
  }
  const addr = server.addr;
  printBanner(config, addr.hostname, addr.port, "", tls !== undefined);
  const signal = await stopSignal();
  console.log(`flowcat: ${signal}: draining ${app.calls.active} call(s)...`);
  await app.calls.drain();
  await server.shutdown();
  await app.close();
  console.log("flowcat: stopped");
  return 0;
}

function printBanner(
  config: AgentServerConfig,
  host: string,
  port: number,
  note: string,
  https: boolean,
): void {
  const shown = host.includes(":") ? `[${host}]` : host;
  const scheme = https ? "https" : "http";
  const p = config.providers;
  const rt = p.realtime?.name ??
    `cascaded: ${p.stt?.name} -> ${p.llm?.name} -> ${p.tts?.name}`;
  console.log(`Flowcat agent server on ${scheme}://${shown}:${port}/ (model: ${rt}${note})`);
  if (config.playground.enabled) {
    console.log(`  playground: open ${scheme}://${shown}:${port}/ and press Start call`);
    const granted = (h: string) => Deno.permissions.querySync({ name: "net", host: h }).state;
    const missing = ungrantedPeerAddresses(hostInterfaces(), (h) => granted(h) === "granted");
    const peerWarning = playgroundPeerWarning(missing);
    if (peerWarning !== undefined) console.log(peerWarning);
    if (!isLoopback(host)) {
      console.log(
        "  warning: the playground has no authentication and this address is not loopback: " +
          "anyone who reaches it can start calls on your model account " +
          "(set playground.enabled: false, or listen on 127.0.0.1; see docs/security.md)",
      );
    }
  }
}

/**
 * Report what escapes every handler (an unhandled rejection, an uncaught error) before the
 * process dies of it, as it would have anyway.
 */
function reportUncaught(errors: ErrorReporter): void {
  const fatal = async (err: unknown, where: string) => {
    errors.unexpected(err, { where }, "fatal");
    await errors.flush(2000);
    console.error(`flowcat: ${where.replace("_", " ")}: ${errorMessage(err)}`);
    Deno.exit(1);
  };
  onEscapedError((err, where) => void fatal(err, where));
}

/** Whether `host` is a loopback address (or a name for one). */
export function isLoopback(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  return h === "localhost" || h === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/** Resolves with the first SIGINT / SIGTERM, then stops listening for them. */
async function stopSignal(): Promise<string> {
  const stop = Promise.withResolvers<string>();
  const signals: Deno.Signal[] = Deno.build.os === "windows" ? ["SIGINT"] : ["SIGINT", "SIGTERM"];
  const handlers = signals.map((s) => [s, () => stop.resolve(s)] as const);
  for (const [s, h] of handlers) Deno.addSignalListener(s, h);
  const signal = await stop.promise;
  for (const [s, h] of handlers) Deno.removeSignalListener(s, h);
  return signal;
}

async function serveOnWorkers(
  a: ServerArgs,
  config: AgentServerConfig,
  tls: TlsPem | undefined,
): Promise<number> {
  const { host, port } = config.server;
  let pool;
  try {
    pool = await startWorkers({
      configPath: a.config,
      host,
      port,
      count: a.workers,
      hopPort: guardHopPort(config),
      ...(a.publicUrl !== undefined ? { publicUrl: a.publicUrl } : {}),
      ...(tls !== undefined ? { tls } : {}),
    });
  } catch (e) {
    console.error(`flowcat: ${errorMessage(e)}`);
    return e instanceof FlowcatError && e.kind === "config" ? 2 : 1;
  }
  printBanner(config, host, pool.port, `; ${pool.count} workers on one port`, tls !== undefined);
  // A worker that failed (server/worker_failures.ts) stops the server, as one process would.
  const first = await Promise.race([stopSignal(), pool.failed]);
  if (typeof first !== "string") console.error(`flowcat: ${describeWorkerFailure(first)}`);
  else console.log(`flowcat: ${first}: draining the workers...`);
  const drained = await pool.drain();
  console.log(`flowcat: stopped (${drained} call(s) drained)`);
  return typeof first === "string" ? 0 : 1;
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
