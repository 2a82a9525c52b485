/**
 * A local Cartesia TTS WebSocket server for tests, speaking the real wire protocol
 * (https://docs.cartesia.ai/2024-11-13/api-reference/tts/websocket): path `/tts/websocket`,
 * `cartesia_version` query, `X-API-Key` header (or `api_key` query), generation requests keyed
 * by `context_id`, `{context_id, cancel:true}`, and `chunk` / `done` / `error` responses with
 * `status_code` and `context_id`. It records every connection and message.
 *
 * @example
 * ```ts
 * import { createCartesiaTts } from "@flowcat/flowcat/tts/cartesia";
 * declare const bytes: Uint8Array;
 * const fake = await new CartesiaFake({ audio: [bytes] }).start();
 * const tts = createCartesiaTts({ provider: "cartesia", apiKey: fake.key, baseUrl: fake.url });
 * await fake.close();
 * ```
 * @module
 */

/** How the fake answers a generation request. */
export type CartesiaFakeMode =
  /** Every chunk of `audio`, then `done`. */
  | "normal"
  /** An `error` response for the context (status 400). */
  | "error"
  /** The first chunk only, then nothing until a cancel (cancellation tests). */
  | "stall"
  /** The first chunk, then the socket is closed (1011). */
  | "drop"
  /** An `error` response with status 429 (too many concurrent requests). */
  | "rate_limit";

/** Options of {@link CartesiaFake}. */
export interface CartesiaFakeOptions {
  /** The key the fake accepts (default `test-cartesia-key`). */
  key?: string;
  /** Raw PCM bytes, one `chunk` each (odd lengths are allowed). */
  audio?: Uint8Array[];
  mode?: CartesiaFakeMode;
}

/** One WebSocket connection the fake accepted. */
export interface CartesiaConnection {
  url: URL;
  headers: Headers;
  /** Parsed client messages in arrival order. */
  messages: Record<string, unknown>[];
  closeCode?: number;
}

/** The fake server; fields are public knobs a test may change. */
export class CartesiaFake {
  readonly key: string;
  audio: Uint8Array[];
  mode: CartesiaFakeMode;
  /** Error text sent in `error` mode (the reference's own example). */
  errorMessage = "Invalid model: The model is not valid, make sure it is a valid model ID.";
  readonly connections: CartesiaConnection[] = [];
  /** Status codes of refused handshakes. */
  readonly refused: number[] = [];
  #server: Deno.HttpServer<Deno.NetAddr> | undefined;
  readonly #sockets: WebSocket[] = [];
  readonly #closed: Promise<void>[] = [];

  /** A fake; call {@link CartesiaFake.start} to listen. */
  constructor(opts: CartesiaFakeOptions = {}) {
    this.key = opts.key ?? "test-cartesia-key";
    this.audio = opts.audio ?? [];
    this.mode = opts.mode ?? "normal";
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
    if (!this.#server) throw new Error("CartesiaFake: start() first");
    return `ws://127.0.0.1:${this.#server.addr.port}`;
  }

  /** All client messages of every connection, in order. */
  get messages(): Record<string, unknown>[] {
    return this.connections.flatMap((c) => c.messages);
  }

  /** Resolve once `cond()` holds (polled), or reject after `ms`. */
  async waitFor(cond: () => boolean, ms = 3000, what = "condition"): Promise<void> {
    const end = Date.now() + ms;
    while (!cond()) {
      if (Date.now() > end) throw new Error(`CartesiaFake: timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  /** Close every connection and stop listening. */
  async close(): Promise<void> {
    for (const s of this.#sockets) {
      if (s.readyState === WebSocket.OPEN) s.close(1001, "fake closing");
    }
    await Promise.allSettled(this.#closed);
    await this.#server?.shutdown();
  }

  #accept(req: Request): Response {
    const url = new URL(req.url);
    if (url.pathname !== "/tts/websocket") return new Response("not found", { status: 404 });
    if (req.headers.get("upgrade")?.toLowerCase() !== "websocket") {
      return new Response("WebSocket only", { status: 400 });
    }
    const version = url.searchParams.get("cartesia_version") ?? req.headers.get("cartesia-version");
    if (!version) {
      this.refused.push(400);
      return Response.json({ error: "missing Cartesia-Version" }, { status: 400 });
    }
    const key = req.headers.get("x-api-key") ?? url.searchParams.get("api_key");
    if (key !== this.key) {
      this.refused.push(401);
      return Response.json({ error: "Invalid API key" }, { status: 401 });
    }
    // Copied before the upgrade: the request's headers are unreadable after it.
    const headers = new Headers(req.headers);
    const { socket, response } = Deno.upgradeWebSocket(req);
    const conn: CartesiaConnection = { url, headers, messages: [] };
    this.connections.push(conn);
    this.#sockets.push(socket);
    this.#closed.push(
      new Promise((r) =>
        socket.addEventListener("close", (e) => {
          conn.closeCode = e.code;
          r();
        })
      ),
    );
    socket.addEventListener("message", (e) => this.#onMessage(conn, socket, e.data));
    return response;
  }

  #onMessage(conn: CartesiaConnection, socket: WebSocket, data: unknown): void {
    let msg: Record<string, unknown>;
    try {
      msg = JSON.parse(String(data));
    } catch {
      socket.send(
        JSON.stringify({ type: "error", done: true, error: "bad json", status_code: 400 }),
      );
      return;
    }
    conn.messages.push(msg);
    const contextId = msg.context_id;
    if (msg.cancel === true || typeof msg.transcript !== "string") return;
    const base = { context_id: contextId, status_code: 206 };
    if (this.mode === "error" || this.mode === "rate_limit") {
      const limited = this.mode === "rate_limit";
      socket.send(JSON.stringify({
        type: "error",
        done: true,
        error: limited ? "Too many concurrent requests" : this.errorMessage,
        status_code: limited ? 429 : 400,
        context_id: contextId,
      }));
      return;
    }
    const chunks = this.mode === "normal" ? this.audio : this.audio.slice(0, 1);
    for (const bytes of chunks) {
      socket.send(
        JSON.stringify({
          type: "chunk",
          data: bytes.toBase64(),
          done: false,
          step_time: 12,
          ...base,
        }),
      );
    }
    if (this.mode === "normal") socket.send(JSON.stringify({ type: "done", done: true, ...base }));
    if (this.mode === "drop") socket.close(1011, "internal error");
  }
}
