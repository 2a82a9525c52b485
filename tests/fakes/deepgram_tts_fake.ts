/**
 * A local Deepgram Aura speak WebSocket server for tests, speaking the real wire protocol: path
 * `/v1/speak` with `model`, `encoding` and `sample_rate` queries, `Authorization: Token <key>`
 * (HTTP 401 otherwise, 429 when told to refuse), `Speak` / `Flush` / `Clear` / `Close` text
 * messages, binary PCM audio, `Metadata`, `Flushed` and `Cleared` JSON answers. It records every
 * connection and message.
 * @module
 */

/** How the fake answers a `Flush`. */
export type DeepgramTtsFakeMode =
  /** Every chunk of `audio`, then `Flushed`. */
  | "normal"
  /** The first chunk only, then nothing (a `Clear` still gets `Cleared`). */
  | "stall"
  /** The first chunk, then the socket is closed with code 1011 and no reason. */
  | "drop"
  /** The socket is closed with code 1011 and a NET error reason. */
  | "error";

/** One WebSocket connection the fake accepted. */
export interface DeepgramTtsConnection {
  url: URL;
  headers: Headers;
  /** Parsed client messages in arrival order. */
  messages: Record<string, unknown>[];
}

/** The fake server; fields are public knobs a test may change. */
export class DeepgramTtsFake {
  /** The key the fake accepts. */
  readonly key: string;
  /** Raw PCM bytes, one binary message each. */
  audio: Uint8Array[];
  mode: DeepgramTtsFakeMode = "normal";
  /** Refuse handshakes with this HTTP status (e.g. 429) while set. */
  refuseWith: number | undefined;
  readonly connections: DeepgramTtsConnection[] = [];
  /** Statuses of refused handshakes. */
  readonly refused: number[] = [];
  #server: Deno.HttpServer<Deno.NetAddr> | undefined;
  readonly #sockets: WebSocket[] = [];
  readonly #closed: Promise<void>[] = [];

  /** A fake; call {@link DeepgramTtsFake.start} to listen. */
  constructor(opts: { key?: string; audio?: Uint8Array[] } = {}) {
    this.key = opts.key ?? "test-deepgram-key";
    this.audio = opts.audio ?? [];
  }

  /** Listen on an ephemeral port of 127.0.0.1. */
  start(): Promise<this> {
    this.#server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      (req) => this.#accept(req),
    );
    return Promise.resolve(this);
  }

  /** `ws://127.0.0.1:<port>`: pass as the client's `baseUrl`. */
  get url(): string {
    if (!this.#server) throw new Error("DeepgramTtsFake: start() first");
    return `ws://127.0.0.1:${this.#server.addr.port}`;
  }

  /** All client messages of every connection, in order. */
  get messages(): Record<string, unknown>[] {
    return this.connections.flatMap((c) => c.messages);
  }

  /** Close every connection and stop listening. */
  async close(): Promise<void> {
    for (const s of this.#sockets) {
      if (s.readyState === WebSocket.OPEN) s.close(1000);
    }
    await Promise.allSettled(this.#closed);
    await this.#server?.shutdown();
  }

  #accept(req: Request): Response {
    const url = new URL(req.url);
    if (url.pathname !== "/v1/speak") return new Response("not found", { status: 404 });
    if (req.headers.get("upgrade")?.toLowerCase() !== "websocket") {
      return new Response("WebSocket only", { status: 400 });
    }
    const auth = req.headers.get("authorization") ?? "";
    if (!/^token /i.test(auth) || auth.slice(6) !== this.key) {
      this.refused.push(401);
      return Response.json({ err_code: "INVALID_AUTH", err_msg: "Invalid credentials." }, {
        status: 401,
      });
    }
    if (this.refuseWith) {
      this.refused.push(this.refuseWith);
      return Response.json({ err_code: "TOO_MANY_REQUESTS", err_msg: "Too many requests" }, {
        status: this.refuseWith,
      });
    }
    if (url.searchParams.get("encoding") !== "linear16" || !url.searchParams.get("model")) {
      return new Response("bad query", { status: 400 });
    }
    const headers = new Headers(req.headers);
    const { socket, response } = Deno.upgradeWebSocket(req);
    const conn: DeepgramTtsConnection = { url, headers, messages: [] };
    this.connections.push(conn);
    this.#sockets.push(socket);
    this.#closed.push(new Promise((r) => socket.addEventListener("close", () => r())));
    socket.addEventListener("open", () => {
      socket.send(JSON.stringify({
        type: "Metadata",
        request_id: crypto.randomUUID(),
        model_name: url.searchParams.get("model"),
        model_version: "2025-04-07.0",
        model_uuid: crypto.randomUUID(),
      }));
    });
    let sequence = 0;
    socket.addEventListener("message", (e) => {
      const msg = JSON.parse(String(e.data));
      conn.messages.push(msg);
      if (msg.type === "Close") socket.close(1000);
      if (msg.type === "Clear") {
        socket.send(JSON.stringify({ type: "Cleared", sequence_id: sequence++ }));
      }
      if (msg.type !== "Flush") return;
      if (this.mode === "error") return socket.close(1011, "NET-0001: internal server error");
      const chunks = this.mode === "normal" ? this.audio : this.audio.slice(0, 1);
      for (const bytes of chunks) socket.send(bytes);
      if (this.mode === "normal") {
        socket.send(JSON.stringify({ type: "Flushed", sequence_id: sequence++ }));
      }
      if (this.mode === "drop") socket.close(1011);
    });
    return response;
  }
}
