/**
 * Embedding 2: a phone agent in your own `Deno.serve`. Every WebSocket that reaches this
 * server is taken as a Twilio media stream and answered by a one-node agent (the local echo
 * model here: swap in a real one such as `createGeminiLive` from
 * `@flowcat/flowcat/realtime/gemini`). The agent is the five lines inside the handler.
 *
 * Run: `deno run --allow-net=127.0.0.1 examples/embed/phone_agent.ts 8080`, then point a
 * Twilio `<Stream>` at `wss://<your public host>/` (through a tunnel or a TLS proxy).
 * A production host checks each call's token before running it: see ws_host.ts here.
 * @module
 */

import { buildS2sTask, InMemorySessions, staticBrain } from "@flowcat/flowcat";
import { EchoRealtime } from "@flowcat/flowcat/realtime/echo";
import { createTwilioSerializer } from "@flowcat/flowcat/telephony/serializers/twilio";
import { socketFromWebSocket, WsMediaTransport } from "@flowcat/flowcat/telephony/ws";

const sessions = new InMemorySessions();
const port = Number(Deno.args[0] ?? 8080);

Deno.serve({ hostname: "127.0.0.1", port }, (req) => {
  if (req.headers.get("upgrade") !== "websocket") return new Response("Flowcat phone agent\n");
  const { socket, response } = Deno.upgradeWebSocket(req);
  const transport = new WsMediaTransport(socketFromWebSocket(socket), createTwilioSerializer());
  const brain = staticBrain("You are the front desk. Help briefly, then call end_call.");
  buildS2sTask({ transport, realtime: new EchoRealtime(), brain, ...sessions.open() }).run()
    .catch((err) => console.error("call failed:", err));
  return response;
});
