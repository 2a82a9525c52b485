/**
 * A local Fish Audio live WebSocket server for tests, speaking the real wire protocol: path
 * `/v1/tts/live`, `Authorization: Bearer <key>` and `model` headers (401 otherwise, 429 when
 * told to refuse), MessagePack `start` / `text` / `flush` / `stop` events, `audio` events with
 * binary PCM and a `finish` event (`stop` or `error`). Messages are recorded decoded.
 * `mode` (see _ws_fake_server.ts) shapes the answer to a session's `stop`: `error` is
 * `finish` with reason `error`.
 * @module
 */

import { packMsg, unpackMsg } from "../../providers/fish/wire.ts";
import { FakeWsServer, field } from "./_ws_fake_server.ts";

/** The fake server; fields are public knobs a test may change. */
export class FishFake extends FakeWsServer {
  /** The key the fake accepts. */
  readonly key: string;
  /** Raw PCM bytes, one `audio` event each. */
  audio: Uint8Array[];

  /** A fake, listening. */
  constructor(opts: { key?: string; audio?: Uint8Array[] } = {}) {
    super({
      path: "/v1/tts/live",
      authorized: (req) =>
        req.headers.get("authorization") === `Bearer ${this.key}` && !!req.headers.get("model"),
      decode: (bytes) => unpackMsg(bytes),
      message: (socket, conn, msg) => {
        const event = field(msg, "event");
        if (event !== "stop") return;
        if (field(conn.messages[0], "event") !== "start") return socket.close(1008, "no start");
        if (this.mode === "error") {
          return socket.send(packMsg({ event: "finish", reason: "error" }));
        }
        const chunks = this.mode === "normal" ? this.audio : this.audio.slice(0, 1);
        for (const audio of chunks) socket.send(packMsg({ event: "audio", audio, time: 0.1 }));
        if (this.mode === "normal") {
          socket.send(packMsg({ event: "finish", reason: "stop" }));
          socket.close(1000);
        }
        if (this.mode === "drop") socket.close(1011);
      },
    });
    this.key = opts.key ?? "test-fish-key";
    this.audio = opts.audio ?? [];
  }
}
