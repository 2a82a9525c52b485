/**
 * `demo ws-echo [--connect ws://host:port]`: the generic WebSocket media transport in loopback.
 * A stream starts with call_id `loopback`, three PCM frames (7, 6 and 64 samples) are sent,
 * echoed by the transport and compared byte for byte, the stream stops, and `loopback OK` is
 * printed. With `--connect`, a live peer speaking the generic framing does the echo.
 * @module
 */

import { GenericSerializer, pcm16ToBytes } from "../telephony/generic_serializer.ts";
import { socketFromWebSocket, WsMediaTransport } from "../telephony/ws_transport.ts";
import type { MediaSocket } from "../core/seams.ts";

/** Frame sizes the demo sends, in samples. */
export const ECHO_FRAME_SAMPLES = [7, 6, 64] as const;
const RATE = 16000;
const ECHO_TIMEOUT_MS = 5000;

/** The demo's test signal for frame `i` of `n` samples (distinct per frame, full scale range). */
export function echoFrame(i: number, n: number): Int16Array {
  const pcm = new Int16Array(n);
  for (let k = 0; k < n; k++) pcm[k] = ((k * 7919 + i * 104729) % 65536) - 32768;
  return pcm;
}

/** Serve the echo side: every connection gets a transport that echoes audio until stop. */
export function serveEcho(onEvent: (line: string) => void): Deno.HttpServer<Deno.NetAddr> {
  return Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
    if (req.headers.get("upgrade")?.toLowerCase() !== "websocket") {
      return new Response("WebSocket media endpoint\n", { status: 426 });
    }
    const { socket, response } = Deno.upgradeWebSocket(req);
    const transport = new WsMediaTransport(
      socketFromWebSocket(socket),
      new GenericSerializer(RATE),
    );
    (async () => {
      for (;;) {
        const m = await transport.recv();
        if (m === undefined) break;
        if (m.type === "start") onEvent(`transport: stream started, call_id=${m.callId}`);
        else if (m.type === "audio") await transport.sendAudio(m.audio);
        else if (m.type === "stop") {
          onEvent("transport: stream stopped");
          break;
        }
      }
      await transport.close();
    })();
    return response;
  });
}

async function nextBinary(sock: MediaSocket): Promise<Uint8Array> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`no echo within ${ECHO_TIMEOUT_MS} ms`)),
      ECHO_TIMEOUT_MS,
    );
  });
  try {
    for (;;) {
      const m = await Promise.race([sock.recv(), timeout]);
      if (m === undefined || m.type === "close") {
        throw new Error("peer closed the stream before echoing");
      }
      if (m.type === "binary") return m.data;
    }
  } finally {
    clearTimeout(timer);
  }
}

/** Run the demo; prints its lines and returns the exit code. */
export async function runWsEcho(
  connect?: string,
  print: (l: string) => void = console.log,
): Promise<number> {
  print("Flowcat demo: ws-echo");
  const events: string[] = [];
  let server: Deno.HttpServer<Deno.NetAddr> | undefined;
  let url = connect;
  if (url === undefined) {
    server = serveEcho((l) => events.push(l));
    url = `ws://127.0.0.1:${server.addr.port}/`;
    print(`server:         ${url} (in-process loopback)`);
  } else {
    if (!/^wss?:\/\//.test(url)) {
      print(`error: --connect needs a ws:// or wss:// URL, got "${url}"`);
      return 2;
    }
    print(`peer:           ${url}`);
  }
  let ok = true;
  let ws: WebSocket | undefined;
  try {
    ws = new WebSocket(url);
    const sock = socketFromWebSocket(ws);
    await sock.opened;
    await sock.sendText(JSON.stringify({ event: "start", call_id: "loopback", sample_rate: RATE }));
    print("stream started: call_id=loopback");
    for (const [i, n] of ECHO_FRAME_SAMPLES.entries()) {
      const sent = pcm16ToBytes(echoFrame(i, n));
      await sock.sendBinary(sent);
      const got = await nextBinary(sock);
      const same = got.length === sent.length && got.every((b, k) => b === sent[k]);
      ok &&= same;
      print(
        `frame ${i + 1}:        ${n} samples (${sent.length} bytes) echoed, ${
          same ? "identical" : `MISMATCH (${got.length} bytes back)`
        }`,
      );
    }
    await sock.sendText(JSON.stringify({ event: "stop" }));
    print("stream stopped");
    if (server) {
      // The in-process transport must have seen the same call id and the stop.
      const deadline = Date.now() + 2000;
      while (!events.includes("transport: stream stopped") && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 5));
      }
      const seen = events.includes("transport: stream started, call_id=loopback") &&
        events.includes("transport: stream stopped");
      if (!seen) print(`transport did not report start/stop: ${JSON.stringify(events)}`);
      ok &&= seen;
    }
  } catch (err) {
    const msg = err instanceof Deno.errors.NotCapable
      ? `${err.message} (grant it with --allow-net=<host:port>)`
      : (err as Error).message;
    print(`error: ${msg}`);
    ok = false;
  } finally {
    ws?.close();
    await server?.shutdown();
  }
  print(ok ? "loopback OK" : "loopback FAILED");
  return ok ? 0 : 1;
}
