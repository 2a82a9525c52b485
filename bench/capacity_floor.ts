/**
 * The floor under the capacity benchmark's latency: the same load against a server that answers
 * each Twilio media message with the same payload straight from the socket's message callback
 * (one `JSON.parse`, one template string, one send), with no pipeline, codec or resampler.
 * What a call costs end to end above this floor is Flowcat's; the floor itself is the load
 * generator, loopback, Deno's WebSocket and the event loop shared by every call on the thread.
 *
 * Used by `bench/capacity_server.ts --floor` (the answer webhook is still the agent server's).
 * @module
 */

/** A request handler, as `Deno.serve` takes it. */
export type Handler = (req: Request, info: Deno.ServeHandlerInfo) => Response | Promise<Response>;

/** Sockets of the floor server open now (its "active calls"). */
export interface FloorCount {
  active: number;
}

const MEDIA_PATH = "/telephony/ws/";

/** Wrap `inner`: WebSocket upgrades under /telephony/ws/ go to the bare echo instead. */
export function floorHandler(inner: Handler, count: FloorCount): Handler {
  return (req, info) => {
    const url = new URL(req.url);
    if (
      !url.pathname.startsWith(MEDIA_PATH) ||
      req.headers.get("upgrade")?.toLowerCase() !== "websocket"
    ) {
      return inner(req, info);
    }
    const { socket, response } = Deno.upgradeWebSocket(req);
    socket.onopen = () => count.active++;
    socket.onclose = () => count.active--;
    socket.onmessage = (e) => {
      const text = e.data;
      if (typeof text !== "string" || !text.startsWith('{"event":"media"')) return;
      const m = JSON.parse(text) as { streamSid: string; media: { payload: string } };
      socket.send(
        `{"event":"media","streamSid":"${m.streamSid}","media":{"payload":"${m.media.payload}"}}`,
      );
    };
    return response;
  };
}
