/**
 * README.txt of the offline bundle: what is in it, how to run each program, and the permission
 * flags each runs under.
 * @module
 */

import type { EntryPoint } from "./entry_points.ts";
import { ROOT } from "./launcher.ts";

/** The README text for a bundle of `entries` (pure). */
export function distReadme(version: string, entries: readonly EntryPoint[]): string {
  const flags = entries.map((e) =>
    `  ${e.name}:\n${e.flags.map((f) => `    ${f.replaceAll(ROOT, "<bundle>")}`).join("\n")}`
  ).join("\n");
  return `Flowcat ${version}: offline bundle (Deno ${Deno.version.deno}, ${Deno.build.target})

Nothing here reaches the network at start: the scripts are bundled, the Deno runtime is lib/deno,
and the file read at run time (the eSpeak voice) sits next to the scripts.

Run (from anywhere; the launcher finds its own directory):

  bin/flowcat server                            agent server with config/ (http://127.0.0.1:6210/)
  bin/flowcat demo pipeline                     credential-free pipeline self-test
  bin/flowcat brain                             reference remote brain on 127.0.0.1:8080
                                                (config/graph.yaml)

The server runs the config in config/. Edit values there freely; a change that needs another
permission (a new provider, another port without the playground, a graph file elsewhere,
recording) needs a new bundle:
  deno task dist --config <your config>
Keys come from the environment (<PROVIDER>_API_KEY), as with deno task start.

Layout:
  bin/flowcat        launcher (POSIX sh)
  lib/deno           Deno runtime
  lib/*.js           bundled programs (worker.js: the server's --workers threads)
  lib/espeak-ng.wasm eSpeak NG engine (echo agent greeting, espeak TTS)
  config/            agent config, its graph, the brain's graph

Permission flags (<bundle> is this directory):
${flags}

See docs/deploy.md in the Flowcat repository.
`;
}
