/**
 * A local Deepgram Aura speak WebSocket server for tests, speaking the real wire protocol: path
 * `/v1/speak` with `model`, `encoding` and `sample_rate` queries, `Authorization: Token <key>`
 * (HTTP 401 otherwise, 429 when told to refuse), `Speak` / `Flush` / `Clear` / `Close` text
 * messages, binary PCM audio, `Metadata`, `Flushed` and `Cleared` JSON answers.
 * `mode` (see _ws_fake_server.ts) shapes the answer to `Flush`: `error` closes the socket with
 * 1011 and a NET error reason, `drop` with 1011 and none; a `Clear` always gets `Cleared`.
 * @module
 */

import { FakeWsServer, field } from "./_ws_fake_server.ts";

/** The fake server; fields are public knobs a test may change. */
export class DeepgramTtsFake extends FakeWsServer {
  /** The key the fake accepts. */
  readonly key: string;
  /** Raw PCM bytes, one binary message each. */
  audio: Uint8Array[];

  /** A fake, listening. */
  constructor(opts: { key?: string; audio?: Uint8Array[] } = {}) {
    let sequence = 0;
    super({
      path: "/v1/speak",
      authorized: (req) => req.headers.get("authorization") === `Token ${this.key}`,
      opened: (socket, conn) =>
        socket.send(JSON.stringify({
          type: "Metadata",
          request_id: crypto.randomUUID(),
          model_name: conn.url.searchParams.get("model"),
          model_version: "2025-04-07.0",
          model_uuid: crypto.randomUUID(),
        })),
      message: (socket, _conn, msg) => {
        const type = field(msg, "type");
        if (type === "Close") socket.close(1000);
        if (type === "Clear") {
          socket.send(JSON.stringify({ type: "Cleared", sequence_id: sequence++ }));
        }
        if (type !== "Flush") return;
        if (this.mode === "error") return socket.close(1011, "NET-0001: internal server error");
        const chunks = this.mode === "normal" ? this.audio : this.audio.slice(0, 1);
        for (const bytes of chunks) socket.send(bytes);
        if (this.mode === "normal") {
          socket.send(JSON.stringify({ type: "Flushed", sequence_id: sequence++ }));
        }
        if (this.mode === "drop") socket.close(1011);
      },
    });
    this.key = opts.key ?? "test-deepgram-key";
    this.audio = opts.audio ?? [];
  }
}
