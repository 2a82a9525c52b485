/**
 * A local Rime `/ws3` JSON WebSocket server for tests, speaking the real wire protocol:
 * synthesis arguments in the query, `Authorization: Bearer <key>` (HTTP 401 otherwise, 429 when
 * told to refuse), `{text, contextId}` and `{operation: flush|clear|eos}` messages, `chunk`
 * (base64), `timestamps`, `done` and `error` events tagged with the latest `contextId`.
 * `mode` (see _ws_fake_server.ts) shapes the answer to a flush: `error` is an `error` event.
 * @module
 */

import { FakeWsServer, field } from "./_ws_fake_server.ts";

/** The fake server; fields are public knobs a test may change. */
export class RimeFake extends FakeWsServer {
  /** The key the fake accepts. */
  readonly key: string;
  /** Raw PCM bytes, one `chunk` each. */
  audio: Uint8Array[];

  /** A fake, listening. */
  constructor(opts: { key?: string; audio?: Uint8Array[] } = {}) {
    let contextId: unknown = null;
    let buffered = "";
    super({
      path: "/ws3",
      authorized: (req) => req.headers.get("authorization") === `Bearer ${this.key}`,
      message: (socket, _conn, msg) => {
        const text = field(msg, "text");
        if (typeof text === "string") {
          buffered += text;
          contextId = field(msg, "contextId") ?? null;
          return;
        }
        const op = field(msg, "operation");
        if (op === "clear") buffered = "";
        if (op !== "flush" && op !== "eos") return;
        if (!buffered) return;
        const words = buffered.split(/\s+/);
        buffered = "";
        if (this.mode === "error") {
          const message = "Invalid speaker for model";
          return socket.send(JSON.stringify({ type: "error", message }));
        }
        socket.send(JSON.stringify({
          type: "timestamps",
          word_timestamps: {
            words,
            start: words.map((_, i) => i / 4),
            end: words.map((_, i) => (i + 1) / 4),
          },
          contextId,
        }));
        const chunks = this.mode === "normal" ? this.audio : this.audio.slice(0, 1);
        for (const bytes of chunks) {
          socket.send(JSON.stringify({ type: "chunk", data: bytes.toBase64(), contextId }));
        }
        if (this.mode === "normal") socket.send(JSON.stringify({ type: "done", contextId }));
        if (this.mode === "drop") socket.close(1011);
        else if (op === "eos") socket.close(1000);
      },
    });
    this.key = opts.key ?? "test-rime-key";
    this.audio = opts.audio ?? [];
  }
}
