/**
 * Example: Flowcat inside a host's own Deno server. The host keeps its own routes and control
 * plane and hands Twilio media streams to Flowcat, with its own brain and the local echo model
 * (no key, no network beyond the listener).
 *
 * | method | path                          | who       | what                                      |
 * | ------ | ----------------------------- | --------- | ----------------------------------------- |
 * | GET    | `/health`                     | the host  | `{"ok":true,"calls":N}`                   |
 * | POST   | `/twilio/voice`               | the host  | opens a run, answers TwiML `<Stream>`     |
 * | GET    | `/telephony/ws/twilio/:runId` | Flowcat   | Twilio's media WebSocket for that run     |
 *
 * The media socket must present the run's token: in the URL query, or (Twilio, which keeps no
 * query on a stream URL) as the `token` custom parameter of the start message, which the TwiML
 * from `/twilio/voice` sets.
 *
 * Run: `deno run --allow-net=127.0.0.1 examples/embed/ws_host.ts --port 8080`
 * (add `--public-url https://agent.example.com` behind a tunnel; see README.md here).
 * @module
 */

import { parseArgs } from "node:util";
import {
  consoleLogger,
  errorMessage,
  InMemorySessions,
  type Logger,
  silentLogger,
} from "@flowcat/flowcat";
import { answerDocument, streamUrl } from "@flowcat/flowcat/telephony/answer";
import { createTwilioSerializer } from "@flowcat/flowcat/telephony/serializers/twilio";
import { socketFromWebSocket, WsMediaTransport } from "@flowcat/flowcat/telephony/ws";
import { runEchoCall } from "./host_call.ts";

/** Options of {@link startWsHost}. */
export interface WsHostOptions {
  /** Port to listen on (default 0: a free one). */
  port?: number;
  /** Address to listen on (default 127.0.0.1). */
  hostname?: string;
  /** Origin the carrier reaches this host at (default the listening URL). */
  publicUrl?: string;
  logger?: Logger;
}

/** A running host. */
export interface WsHost {
  /** `http://hostname:port` of the listener. */
  url: string;
  /** The host's control plane (runs, finalize reports, artifacts). */
  sessions: InMemorySessions;
  /** Hang up running calls and stop listening. */
  close(): Promise<void>;
}

const MEDIA_ROUTE = new URLPattern({ pathname: "/telephony/ws/twilio/:runId(\\d+)" });

/** Start the host's server: its own routes plus the Twilio media route. */
export function startWsHost(opts: WsHostOptions = {}): WsHost {
  const log = opts.logger ?? silentLogger;
  const hostname = opts.hostname ?? "127.0.0.1";
  const sessions = new InMemorySessions();
  const calls = new Map<WsMediaTransport, Promise<void>>();

  const handler = (req: Request): Response => {
    const url = new URL(req.url);
    if (req.method === "GET" && url.pathname === "/health") {
      return Response.json({ ok: true, calls: calls.size });
    }
    if (req.method === "POST" && url.pathname === "/twilio/voice") {
      const run = sessions.open();
      const doc = answerDocument("twilio", {
        streamUrl: streamUrl(publicUrl, "twilio", run.runId, run.token),
        token: run.token,
        runId: run.runId,
      })!;
      return new Response(doc.body, { headers: { "content-type": doc.contentType } });
    }
    const media = MEDIA_ROUTE.exec(url);
    if (req.method === "GET" && media !== null) {
      if (req.headers.get("upgrade")?.toLowerCase() !== "websocket") {
        return Response.json({ error: "expected a WebSocket upgrade" }, { status: 426 });
      }
      const { socket, response } = Deno.upgradeWebSocket(req);
      const transport = new WsMediaTransport(socketFromWebSocket(socket), createTwilioSerializer());
      const runId = Number(media.pathname.groups.runId);
      const call = serveMediaCall(transport, sessions, runId, url.searchParams.get("token"), log)
        .catch((err) => log.error("call failed", { runId, err: errorMessage(err) }))
        .finally(() => calls.delete(transport));
      calls.set(transport, call);
      return response;
    }
    return Response.json({ error: "not found" }, { status: 404 });
  };

  const server = Deno.serve({ hostname, port: opts.port ?? 0, onListen: () => {} }, handler);
  const url = `http://${hostname}:${server.addr.port}`;
  const publicUrl = opts.publicUrl ?? url;
  return {
    url,
    sessions,
    close: async () => {
      for (const transport of calls.keys()) await transport.close();
      await Promise.allSettled(calls.values());
      await server.shutdown();
    },
  };
}

/** Check the run's token from the start message (or query), then run the call to its end. */
async function serveMediaCall(
  transport: WsMediaTransport,
  sessions: InMemorySessions,
  runId: number,
  queryToken: string | null,
  log: Logger,
): Promise<void> {
  const start = await transport.waitForStart();
  if (start === undefined) return await transport.close();
  const token = queryToken ?? start.params?.token ?? "";
  try {
    await sessions.resolve(runId, token);
  } catch (err) {
    log.warn("media socket refused", { runId, err: errorMessage(err) });
    return await transport.close();
  }
  log.info("call started", { runId, callSid: start.callId });
  await runEchoCall({ transport, sessions, run: { runId, token }, logger: log });
  log.info("call ended", { runId });
}

/** `--port N` and `--public-url URL` from the command line, with a clear error for bad ones. */
function cliOptions(args: string[]): WsHostOptions {
  const { values } = parseArgs({
    args,
    options: { port: { type: "string", default: "8080" }, "public-url": { type: "string" } },
  });
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`--port must be a port number (0-65535), got ${JSON.stringify(values.port)}`);
  }
  return { port, publicUrl: values["public-url"], logger: consoleLogger("info", "ws-host") };
}

if (import.meta.main) {
  let options: WsHostOptions;
  try {
    options = cliOptions(Deno.args);
  } catch (err) {
    console.error(errorMessage(err));
    Deno.exit(2);
  }
  const host = startWsHost(options);
  console.log(`listening on ${host.url}: GET /health, POST /twilio/voice, media on /telephony/ws`);
  Deno.addSignalListener("SIGINT", () => host.close().then(() => Deno.exit(0)));
}
