/**
 * The server half every WebSocket provider fake shares: listens on 127.0.0.1 (ephemeral port),
 * answers one path, refuses a bad key with 401 and, while told to, every handshake with another
 * status (429), records each connection with its URL, headers and parsed client messages, and
 * hands messages to the vendor's wire logic.
 * @module
 */

/** `msg[key]` when `msg` is a JSON object (a recorded client message), else undefined. */
export function field(msg: unknown, key: string): unknown {
  return typeof msg === "object" && msg !== null && !(msg instanceof Uint8Array)
    ? (msg as Record<string, unknown>)[key]
    : undefined;
}

/** One WebSocket connection the fake accepted. */
export interface FakeConnection {
  url: URL;
  headers: Headers;
  /** Client messages in arrival order: parsed JSON for text, bytes for binary. */
  messages: unknown[];
}

/** The vendor part of a fake. */
export interface FakeWire {
  /** Path the fake answers (others are 404). */
  path: string;
  /** Whether the handshake carries the accepted key. */
  authorized(req: Request, url: URL): boolean;
  /** Decodes a binary client message before it is recorded (default: kept as bytes). */
  decode?(bytes: Uint8Array): unknown;
  /** A new connection is open. */
  opened?(socket: WebSocket, conn: FakeConnection): void;
  /** One client message, already recorded. */
  message(socket: WebSocket, conn: FakeConnection, msg: unknown): void;
}

/** How a fake answers the next utterance (each vendor fake says what that means on its wire). */
export type FakeMode =
  /** All the audio, then the end of the utterance. */
  | "normal"
  /** The first chunk only, then nothing. */
  | "stall"
  /** The first chunk, then the socket is closed (1011). */
  | "drop"
  /** The vendor's server-error signal. */
  | "error";

/** A listening fake server around a {@link FakeWire}. */
export class FakeWsServer {
  mode: FakeMode = "normal";
  /** Refuse handshakes with this HTTP status (e.g. 429) while set. */
  refuseWith: number | undefined;
  readonly connections: FakeConnection[] = [];
  /** Statuses of refused handshakes. */
  readonly refused: number[] = [];
  readonly #wire: FakeWire;
  readonly #server: Deno.HttpServer<Deno.NetAddr>;
  readonly #sockets: WebSocket[] = [];
  readonly #closed: Promise<void>[] = [];

  /** Listen now. */
  constructor(wire: FakeWire) {
    this.#wire = wire;
    this.#server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      (req) => this.#accept(req),
    );
  }

  /** `ws://127.0.0.1:<port>`: pass as the client's `baseUrl`. */
  get url(): string {
    return `ws://127.0.0.1:${this.#server.addr.port}`;
  }

  /** All client messages of every connection, in order. */
  get messages(): unknown[] {
    return this.connections.flatMap((c) => c.messages);
  }

  /** Close every connection and stop listening. */
  async close(): Promise<void> {
    for (const s of this.#sockets) if (s.readyState === WebSocket.OPEN) s.close(1000);
    await Promise.allSettled(this.#closed);
    await this.#server.shutdown();
  }

  #accept(req: Request): Response {
    const url = new URL(req.url);
    if (url.pathname !== this.#wire.path) return new Response("not found", { status: 404 });
    if (req.headers.get("upgrade")?.toLowerCase() !== "websocket") {
      return new Response("WebSocket only", { status: 400 });
    }
    if (!this.#wire.authorized(req, url)) {
      this.refused.push(401);
      return Response.json({ message: "Invalid API key" }, { status: 401 });
    }
    if (this.refuseWith) {
      this.refused.push(this.refuseWith);
      return Response.json({ message: "Too many requests" }, { status: this.refuseWith });
    }
    // Copied before the upgrade: the request's headers are unreadable after it.
    const headers = new Headers(req.headers);
    const { socket, response } = Deno.upgradeWebSocket(req);
    socket.binaryType = "arraybuffer";
    const conn: FakeConnection = { url, headers, messages: [] };
    this.connections.push(conn);
    this.#sockets.push(socket);
    this.#closed.push(new Promise((r) => socket.addEventListener("close", () => r())));
    socket.addEventListener("open", () => this.#wire.opened?.(socket, conn));
    socket.addEventListener("message", (e) => {
      const bytes = typeof e.data === "string" ? undefined : new Uint8Array(e.data);
      const msg = bytes ? (this.#wire.decode?.(bytes) ?? bytes) : JSON.parse(e.data);
      conn.messages.push(msg);
      this.#wire.message(socket, conn, msg);
    });
    return response;
  }
}
