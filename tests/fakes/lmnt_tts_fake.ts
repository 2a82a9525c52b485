/**
 * A local LMNT speech-session WebSocket server for tests, speaking the real wire protocol
 * (version 2): path `/v1/ai/speech/stream`, the key in the first (init) message, `{text}`,
 * `{command: flush|reset|eof, nonce}`, binary audio, `{complete, nonce}` and `{error}`. A bad
 * key gets an error message and a close, as the handshake carries no key.
 * `mode` (see _ws_fake_server.ts) shapes the answer to a flush: `error` is an `error` message; a
 * reset always completes.
 * @module
 */

import { FakeWsServer, field } from "./_ws_fake_server.ts";

/** The fake server; fields are public knobs a test may change. */
export class LmntFake extends FakeWsServer {
  /** The key the fake accepts. */
  readonly key: string;
  /** Raw PCM bytes, one binary message each. */
  audio: Uint8Array[];

  /** A fake, listening. */
  constructor(opts: { key?: string; audio?: Uint8Array[] } = {}) {
    super({
      path: "/v1/ai/speech/stream",
      authorized: () => true, // the key comes in the init message
      message: (socket, conn, msg) => {
        if (conn.messages.length === 1) {
          if (field(msg, "X-API-Key") !== this.key || field(msg, "protocol_version") !== 2) {
            socket.send(JSON.stringify({ error: "Unauthorized: invalid API key" }));
            socket.close(1008, "unauthorized");
          }
          return;
        }
        const command = field(msg, "command");
        const nonce = field(msg, "nonce");
        if (command === "eof") return socket.close(1000);
        if (command === "reset") return socket.send(JSON.stringify({ complete: "reset", nonce }));
        if (command !== "flush") return;
        if (this.mode === "error") {
          return socket.send(JSON.stringify({ error: "Internal server error" }));
        }
        const chunks = this.mode === "normal" ? this.audio : this.audio.slice(0, 1);
        for (const bytes of chunks) socket.send(bytes);
        if (this.mode === "normal") socket.send(JSON.stringify({ complete: "flush", nonce }));
        if (this.mode === "drop") socket.close(1011);
      },
    });
    this.key = opts.key ?? "test-lmnt-key";
    this.audio = opts.audio ?? [];
  }
}
