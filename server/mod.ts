/**
 * The agent server, assembled: session store, call manager, outbound dialer and the route
 * table, behind one `Deno.serve` handler. `server/main.ts` is the command line around it;
 * embedders use {@link startAgentServer} (listen, and stop with a drain) or
 * {@link createAgentServer} (the handler, for their own `Deno.serve`), with a config from
 * {@link parseConfig} or {@link loadConfig}. docs/embedding.md has a complete program.
 *
 * Permissions: `--allow-net=<listen address>`; the rest follows the config (provider hosts,
 * the variables passed through `env`), as `deno task start --print-permissions` prints it.
 * Nothing is read from the environment unless `env` is given. A browser call through the
 * playground loads the WebRTC stack then: `--allow-sys=networkInterfaces --ignore-env` and
 * UDP to the browser (docs/embedding.md, "Permissions by entry point").
 *
 * @example
 * ```ts
 * import { parseConfig, startAgentServer } from "@flowcat/flowcat/server";
 * const config = await parseConfig({
 *   providers: { realtime: { name: "echo" } },
 *   agent: { graph: "graph.yaml" },
 * });
 * const server = await startAgentServer({ config, port: 0 });
 * await server.stop();
 * ```
 * @module
 */

export * from "./app.ts";
export {
  type RunningAgentServer,
  startAgentServer,
  type StartAgentServerOptions,
} from "./start.ts";
