/**
 * Embedding 3: the whole agent server inside your program, from a config object written in
 * code (snake_case, the same fields and checks as a YAML config: docs/config.md). The
 * playground is at `GET /`, liveness at `GET /healthz`; SIGINT or SIGTERM drains the calls and
 * stops the server.
 *
 * Run: `deno run --allow-net=127.0.0.1 examples/embed/whole_server.ts 6210`
 * @module
 */

import { parseConfig, startAgentServer } from "@flowcat/flowcat/server";

const config = await parseConfig({
  pipeline: "s2s",
  // The echo model with a chime for a voice; a real model: { name: "gemini" } and
  // env: (name) => Deno.env.get(name) below, run with --allow-env=GEMINI_API_KEY.
  providers: { realtime: { name: "echo", options: { tts: "none" } } },
  agent: {
    graph: {
      start: "desk",
      nodes: [
        {
          id: "desk",
          prompt: "You are the front desk. Help briefly; call goodbye when the caller is done.",
          transitions: [{ name: "goodbye", description: "The caller is done.", target: "bye" }],
        },
        { id: "bye", terminal: true, say: "Goodbye!" },
      ],
    },
  },
  playground: { enabled: true },
  server: { host: "127.0.0.1", port: Number(Deno.args[0] ?? 6210) },
});

const server = await startAgentServer({ config });
console.log(`agent server on ${server.url}`);

const signals = ["SIGINT", "SIGTERM"] as const;
const stop = async () => {
  for (const s of signals) Deno.removeSignalListener(s, stop);
  await server.stop();
  console.log("agent server stopped");
};
for (const s of signals) Deno.addSignalListener(s, stop);
