/**
 * {@link startAgentServer}: the whole agent server in an embedder's program, started from a
 * config object and stopped with one call, the way `deno task start` runs it (missing secrets
 * refused before anything listens; stop drains the calls, then closes).
 *
 * @example
 * ```ts
 * import { parseConfig } from "./config.ts";
 * const config = await parseConfig({
 *   providers: { realtime: { name: "echo" } },
 *   agent: { graph: "graph.yaml" },
 * });
 * const server = await startAgentServer({ config, port: 0 });
 * console.log(server.url); // http://127.0.0.1:PORT/
 * await server.stop();
 * ```
 * @module
 */

import { consoleLogger, type Logger } from "../core/log.ts";
import { type AgentServer, createAgentServer } from "./app.ts";
import { type AgentHttp, serveAgentHttp } from "./serve.ts";
import type { EnvGet } from "./calls.ts";
import { type AgentServerConfig, checkEnv, ConfigError } from "./config.ts";
import { assertProvidersWired } from "./provider_wiring.ts";

/** Options of {@link startAgentServer}. */
export interface StartAgentServerOptions {
  /** A validated config (`parseConfig` or `loadConfig`). */
  config: AgentServerConfig;
  /** Port to listen on (default the config's `server.port`; 0 picks a free one). */
  port?: number;
  /** Address to listen on (default the config's `server.host`). */
  hostname?: string;
  /**
   * Reads environment variables: provider keys, carrier webhook secrets, tokens (default: none
   * is read, e.g. `(name) => Deno.env.get(name)` with `--allow-env=<names>` to read them).
   */
  env?: EnvGet;
  /** Where the server and its calls log (default: info and above to stderr). */
  logger?: Logger;
  /** Load every engine the calls use before listening (default true). */
  warm?: boolean;
}

/** A started agent server. */
export interface RunningAgentServer {
  /** `http://host:port/` it listens at. */
  url: string;
  /** The port it listens on. */
  port: number;
  /** The server's parts (calls, sessions, metrics). */
  app: AgentServer;
  /**
   * Stop: refuse new calls, let running ones end (up to `limits.drain_seconds`), stop
   * listening and close what the server opened. Safe to call twice.
   */
  stop(): Promise<void>;
}

/**
 * Start the agent server for `config` and resolve once it listens. A required environment
 * variable that `env` does not give (a provider key, an enabled carrier's webhook secret)
 * throws a `ConfigError` naming each one, before anything listens; a provider that is not yet
 * wired throws `FlowcatError("<provider>: not yet wired")` before that.
 */
export async function startAgentServer(opts: StartAgentServerOptions): Promise<RunningAgentServer> {
  const { config } = opts;
  const env: EnvGet = opts.env ?? (() => undefined);
  assertProvidersWired(config);
  const missing = checkEnv(config, env);
  if (missing.length > 0) throw new ConfigError(missing);
  const logger = opts.logger ?? consoleLogger("info", "flowcat");
  const app = await createAgentServer({
    config,
    env,
    logger,
    ...(opts.warm !== undefined ? { warm: opts.warm } : {}),
  });
  const server = {
    ...config.server,
    host: opts.hostname ?? config.server.host,
    port: opts.port ?? config.server.port,
  };
  let http: AgentHttp;
  try {
    // Behind the connection guard, as `deno task start` serves (unless `server.guard` is off).
    http = await serveAgentHttp({
      config: { ...config, server },
      handler: app.handler,
      logger,
      metrics: app.metrics,
    });
  } catch (err) {
    await app.close();
    throw err;
  }
  const addr = http.addr;
  const host = addr.hostname.includes(":") ? `[${addr.hostname}]` : addr.hostname;
  let stopping: Promise<void> | undefined;
  return {
    url: `http://${host}:${addr.port}/`,
    port: addr.port,
    app,
    stop: () =>
      stopping ??= (async () => {
        await app.calls.drain();
        await http.shutdown();
        await app.close();
      })(),
  };
}
