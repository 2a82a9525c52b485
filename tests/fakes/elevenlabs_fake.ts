/**
 * A local ElevenLabs `stream-input` text-to-speech server for tests: a WebSocket on 127.0.0.1
 * speaking the real wire protocol (AsyncAPI of
 * https://elevenlabs.io/docs/api-reference/text-to-speech/v-1-text-to-speech-voice-id-stream-input):
 * path `/v1/text-to-speech/{voice_id}/stream-input`, `xi-api-key` header, client messages
 * `{text:" "}` / `{text:"... ", flush}` / `{text:""}`, server messages `{audio, isFinal,
 * normalizedAlignment, alignment}` and a final `{isFinal:true}`. Errors are sent the way the
 * service does (`{message, error, code}` then close 1008, elevenlabs-python#167).
 *
 * @example
 * ```ts
 * import { createElevenLabsTts } from "@flowcat/flowcat/tts/elevenlabs";
 * declare const bytes: Uint8Array;
 * const fake = await new ElevenLabsFake({ audio: [bytes] }).start();
 * const tts = createElevenLabsTts({ provider: "elevenlabs", apiKey: fake.key, baseUrl: fake.url });
 * await fake.close();
 * ```
 * @module
 */

/** How the fake answers text. */
export type ElevenLabsFakeMode =
  /** Stream every chunk of `audio` on the flushed text, `{isFinal:true}` on `{text:""}`. */
  | "normal"
  /** Answer the text with an error message, then close 1008. */
  | "error"
  /** Send the first chunk only and wait (cancellation tests). */
  | "stall"
  /** Send the first chunk, then close the socket abnormally (1011). */
  | "drop";

/** Options of {@link ElevenLabsFake}. */
export interface ElevenLabsFakeOptions {
  /** The key the fake accepts (default `test-eleven-key`). */
  key?: string;
  /** Raw PCM bytes, one server message each (odd lengths are allowed). */
  audio?: Uint8Array[];
  mode?: ElevenLabsFakeMode;
}

/** One WebSocket connection the fake accepted. */
export interface ElevenLabsConnection {
  url: URL;
  headers: Headers;
  /** Parsed client messages in arrival order. */
  messages: Record<string, unknown>[];
  /** Set when the socket closed: who closed it is not knowable, the code is. */
  closeCode?: number;
}

/** The fake server; fields are public knobs a test may change. */
export class ElevenLabsFake {
  readonly key: string;
  audio: Uint8Array[];
  mode: ElevenLabsFakeMode;
  /** Error text sent in `error` mode. */
  errorMessage = "Voice not found for this model.";
  /** Every accepted connection, and the handshakes refused (status codes). */
  readonly connections: ElevenLabsConnection[] = [];
  readonly refused: number[] = [];
  /** Refuse the next handshakes with this HTTP status (429: too many concurrent requests). */
  refuseWith: number | undefined;
  #server: Deno.HttpServer<Deno.NetAddr> | undefined;
  readonly #sockets: WebSocket[] = [];
  readonly #closed: Promise<void>[] = [];

  /** A fake; call {@link ElevenLabsFake.start} to listen. */
  constructor(opts: ElevenLabsFakeOptions = {}) {
    this.key = opts.key ?? "test-eleven-key";
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
    if (!this.#server) throw new Error("ElevenLabsFake: start() first");
    return `ws://127.0.0.1:${this.#server.addr.port}`;
  }

  /** Resolve once `cond()` holds (polled), or reject after `ms`. */
  async waitFor(cond: () => boolean, ms = 3000, what = "condition"): Promise<void> {
    const end = Date.now() + ms;
    while (!cond()) {
      if (Date.now() > end) throw new Error(`ElevenLabsFake: timed out waiting for ${what}`);
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
    if (!/^\/v1\/text-to-speech\/[^/]+\/stream-input$/.test(url.pathname)) {
      return new Response("not found", { status: 404 });
    }
    if (req.headers.get("upgrade")?.toLowerCase() !== "websocket") {
      return new Response("WebSocket only", { status: 400 });
    }
    if (this.refuseWith !== undefined) {
      this.refused.push(this.refuseWith);
      return Response.json(
        { detail: { status: "too_many_concurrent_requests", message: "Too many requests" } },
        { status: this.refuseWith },
      );
    }
    if (req.headers.get("xi-api-key") !== this.key) {
      this.refused.push(401);
      return Response.json(
        { detail: { status: "invalid_api_key", message: "Invalid API key" } },
        { status: 401 },
      );
    }
    // Copied before the upgrade: the request's headers are unreadable after it.
    const headers = new Headers(req.headers);
    const { socket, response } = Deno.upgradeWebSocket(req);
    const conn: ElevenLabsConnection = { url, headers, messages: [] };
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

  #onMessage(conn: ElevenLabsConnection, socket: WebSocket, data: unknown): void {
    let msg: Record<string, unknown>;
    try {
      msg = JSON.parse(String(data));
    } catch {
      socket.close(1008, "Could not parse input message");
      return;
    }
    conn.messages.push(msg);
    const text = msg.text;
    if (typeof text !== "string") return;
    if (conn.messages.length === 1) return; // the `{text:" "}` that opens the stream
    if (text === "") {
      if (this.mode !== "normal") return;
      socket.send(JSON.stringify({ audio: null, isFinal: true, normalizedAlignment: null }));
      socket.close(1000);
      return;
    }
    if (this.mode === "error") {
      socket.send(
        JSON.stringify({ message: this.errorMessage, error: "invalid_request", code: 1008 }),
      );
      socket.close(1008, this.errorMessage);
      return;
    }
    const chunks = this.mode === "normal" ? this.audio : this.audio.slice(0, 1);
    for (const bytes of chunks) {
      socket.send(JSON.stringify({
        audio: bytes.toBase64(),
        isFinal: false,
        normalizedAlignment: { charStartTimesMs: [0], charDurationsMs: [10], chars: ["H"] },
        alignment: { charStartTimesMs: [0], charDurationsMs: [10], chars: ["H"] },
      }));
    }
    if (this.mode === "drop") socket.close(1011, "internal error");
  }
}
