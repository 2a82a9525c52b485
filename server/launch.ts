/**
 * `deno task start`: runs the agent server (server/main.ts) in a child Deno process under
 * exactly the permissions its config needs, computed here as `--print-permissions` prints
 * them. This launcher itself may read files (the config may live anywhere), list the network
 * interfaces (the playground's WebRTC peers are this host's addresses) and run `deno`; it
 * opens no socket and reads four environment variables, `SENTRY_DSN` (an error-reporting server
 * to grant), `SIGNALWIRE_SPACE_URL` (SignalWire's API host), `GOOGLE_APPLICATION_CREDENTIALS`
 * (the Google Cloud key file to grant reading) and `AWS_REGION` (the region of AWS providers
 * whose config names none); the server gets the whole environment, as the
 * shell had it.
 *
 * ```sh
 * deno task start --config my-agent.yaml --port 8000
 * ```
 * @module
 */

import { errorMessage } from "../core/errors.ts";
import { parseAndLoad, serverPermissionOptions } from "./main.ts";
import { permissionCommand, permissionFlags, SERVER_ENTRY } from "./permissions.ts";

/** The `deno run` arguments that start the server for `args` under the config's grants. */
export async function launchArgs(args: string[]): Promise<string[] | number> {
  const parsed = await parseAndLoad(args);
  if (typeof parsed === "number") return parsed;
  const { args: a, config } = parsed;
  const opts = serverPermissionOptions(config, a, readEnv);
  if (a.printPermissions) {
    console.log(permissionCommand(config, opts));
    return 0;
  }
  return ["run", "--no-prompt", ...permissionFlags(config, opts), SERVER_ENTRY, ...args];
}

/** A variable the launcher may read (see the module doc); others read as unset. */
function readEnv(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined;
  }
}

/** Run the server as a child and resolve with its exit code. */
export async function launch(args: string[]): Promise<number> {
  const argv = await launchArgs(args);
  if (typeof argv === "number") return argv;
  let child;
  try {
    child = new Deno.Command("deno", { args: argv, stdin: "inherit" }).spawn();
  } catch (e) {
    console.error(`flowcat: cannot start deno (${errorMessage(e)}); is deno on PATH?`);
    return 1;
  }
  // Ctrl-C reaches the whole process group, the server included, which drains and exits; a
  // SIGTERM sent to this process alone is passed on. Either way the server decides when.
  const forward = (sig: Deno.Signal) => () => {
    try {
      child.kill(sig);
    } catch { /* already gone */ }
  };
  const signals = Deno.build.os === "windows" ? [] : (["SIGTERM", "SIGHUP"] as Deno.Signal[]);
  const handlers = signals.map((s) => [s, forward(s)] as const);
  for (const [s, h] of handlers) Deno.addSignalListener(s, h);
  const ignoreInt = () => {};
  Deno.addSignalListener("SIGINT", ignoreInt);
  const status = await child.status;
  for (const [s, h] of handlers) Deno.removeSignalListener(s, h);
  Deno.removeSignalListener("SIGINT", ignoreInt);
  return status.signal !== null ? 128 + signalNumber(status.signal) : status.code;
}

function signalNumber(sig: Deno.Signal): number {
  return ({ SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 } as Record<string, number>)[sig] ?? 1;
}

if (import.meta.main) {
  Deno.exit(await launch(Deno.args));
}
