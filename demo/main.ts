/**
 * Flowcat demo tool (credential-free). `deno task demo pipeline`.
 * @module
 */

import { parseArgs } from "node:util";
import { runDemoPipeline } from "./pipeline.ts";

const USAGE = `Usage: deno task demo <subcommand> [options]

Subcommands:
  pipeline                 440 Hz sine through Source -> Echo -> Tap -> Sink; prints OK when
                           frames in = frames out = frames sourced
  ws-echo [--connect URL]  WebSocket media transport loopback (three PCM frames echoed)

Options:
  -h, --help               show this help
`;

/** Entry point; returns the process exit code. */
export async function main(args: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: { help: { type: "boolean", short: "h" }, connect: { type: "string" } },
    });
  } catch (err) {
    console.error(`demo: ${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const [cmd, ...rest] = parsed.positionals;
  if (parsed.values.help || cmd === undefined) {
    console.log(USAGE);
    return cmd === undefined && !parsed.values.help ? 2 : 0;
  }
  if (rest.length > 0) {
    console.error(`demo: unexpected argument "${rest[0]}"\n\n${USAGE}`);
    return 2;
  }
  switch (cmd) {
    case "pipeline": {
      const r = await runDemoPipeline();
      for (const line of r.lines) console.log(line);
      return r.ok ? 0 : 1;
    }
    case "ws-echo": {
      const { runWsEcho } = await import("./ws_echo.ts");
      return await runWsEcho(parsed.values.connect);
    }
    default:
      console.error(`demo: unknown subcommand "${cmd}"\n\n${USAGE}`);
      return 2;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
