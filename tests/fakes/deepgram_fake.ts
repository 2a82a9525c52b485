/**
 * A local fake of Deepgram's live transcription WebSocket (`/v1/listen`) for tests. It speaks
 * the real protocol (developers.deepgram.com: /reference/speech-to-text/listen-streaming,
 * /docs/keep-alive, /docs/finalize, /docs/close-stream):
 *
 * - the upgrade must carry `Authorization: Token <key>`, else HTTP 401 with Deepgram's
 *   `{"err_code":"INVALID_AUTH",...}` body; bad `encoding`/`sample_rate`/`channels` give 400;
 * - binary messages are audio and are recorded per connection;
 * - text messages are JSON controls: `KeepAlive` (no answer), `Finalize` (answered by a final
 *   `Results` with `from_finalize: true`), `CloseStream` (answered by `Metadata`, then close);
 * - the test pushes `Results` / `UtteranceEnd`, drops the connection, or refuses upgrades.
 *
 * Listens on 127.0.0.1 at an ephemeral port.
 *
 * @example
 * ```ts
 * import { createDeepgramStt } from "@flowcat/flowcat/stt/deepgram";
 * import type { StartParams } from "@flowcat/flowcat";
 * declare const params: StartParams;
 * const fake = new DeepgramFake({ apiKey: "k" });
 * fake.start();
 * const stt = createDeepgramStt({ provider: "deepgram", apiKey: "k", baseUrl: fake.url });
 * await stt.start(params);
 * fake.sendResult({ transcript: "hello", isFinal: true, speechFinal: true });
 * await stt.stop?.();
 * await fake.close();
 * ```
 * @module
 */

/** One upgrade request as the fake saw it (accepted or not). */
export interface UpgradeRequest {
  path: string;
  query: Record<string, string>;
  /** Header names lower-case. */
  headers: Record<string, string>;
  /** HTTP status the fake answered with (101 when upgraded). */
  status: number;
}

/** One accepted connection. */
export interface FakeConnection {
  socket: WebSocket;
  /** Binary audio messages, in order. */
  audio: Uint8Array[];
  /** Parsed text control messages, in order. */
  controls: { type: string }[];
}

/** Options of {@link DeepgramFake}. */
export interface DeepgramFakeOptions {
  /** The key the fake accepts (default `test-key`). */
  apiKey?: string;
  /** Transcript of the `from_finalize` answer to `Finalize` (default `finalized`). */
  finalizeTranscript?: string;
}

/** A Results message as the test wants it. */
export interface FakeResult {
  transcript: string;
  isFinal: boolean;
  speechFinal?: boolean;
  fromFinalize?: boolean;
  /** Detected language (`languages[0]`, as multilingual models report it). */
  language?: string;
}

/** The fake server; the latest accepted connection is "current". */
export class DeepgramFake {
  /** Every upgrade request, refused ones included. */
  readonly requests: UpgradeRequest[] = [];
  /** Every accepted connection, in order. */
  readonly connections: FakeConnection[] = [];
  /** When set, upgrades are refused with this HTTP status (e.g. 503 to fail a reconnect). */
  refuseWith: number | undefined;

  readonly #apiKey: string;
  readonly #finalizeTranscript: string;
  #server: Deno.HttpServer<Deno.NetAddr> | undefined;
  readonly #closed = new Map<WebSocket, Promise<void>>();
  #start = 0;

  /** Make a fake; nothing listens until {@link DeepgramFake.start}. */
  constructor(opts: DeepgramFakeOptions = {}) {
    this.#apiKey = opts.apiKey ?? "test-key";
    this.#finalizeTranscript = opts.finalizeTranscript ?? "finalized";
  }

  /** Listen on 127.0.0.1 at an ephemeral port. */
  start(): void {
    this.#server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      (req) => this.#accept(req),
    );
  }

  /** WebSocket root to pass as `baseUrl`, e.g. `ws://127.0.0.1:4711`. */
  get url(): string {
    if (this.#server === undefined) throw new Error("fake not started");
    return `ws://127.0.0.1:${this.#server.addr.port}`;
  }

  /** The latest accepted connection. */
  get current(): FakeConnection {
    const c = this.connections.at(-1);
    if (c === undefined) throw new Error("fake: no connection yet");
    return c;
  }

  /** Resolve once the `n`th connection is open on the server side; reject after `ms`. */
  async waitForConnection(n = 1, ms = 3000): Promise<FakeConnection> {
    const end = Date.now() + ms;
    for (;;) {
      const c = this.connections[n - 1];
      if (c?.socket.readyState === WebSocket.OPEN) return c;
      if (Date.now() > end) throw new Error(`fake: connection ${n} not open within ${ms} ms`);
      await new Promise<void>((r) => setTimeout(r, 5));
    }
  }

  /** Total audio bytes received on every connection. */
  audioBytes(): number {
    let n = 0;
    for (const c of this.connections) for (const a of c.audio) n += a.length;
    return n;
  }

  /** Control messages of one type across connections. */
  controls(type: string): { type: string }[] {
    return this.connections.flatMap((c) => c.controls.filter((m) => m.type === type));
  }

  /** Push a `Results` message to the current connection. */
  sendResult(r: FakeResult): void {
    this.send(resultsMessage(r, this.#start));
    this.#start += 0.5;
  }

  /** Push `UtteranceEnd` to the current connection. */
  sendUtteranceEnd(): void {
    this.send({ type: "UtteranceEnd", channel: [0, 1], last_word_end: this.#start });
  }

  /** Send any JSON message (or raw text) to the current connection. */
  send(msg: Record<string, unknown> | string): void {
    const ws = this.current.socket;
    if (ws.readyState !== WebSocket.OPEN) throw new Error("fake: current connection not open");
    ws.send(typeof msg === "string" ? msg : JSON.stringify(msg));
  }

  /** Close the current connection from the server side (Deepgram uses 1011 for NET errors). */
  async dropConnection(code = 1011, reason = "NET-0001"): Promise<void> {
    const ws = this.current.socket;
    if (ws.readyState === WebSocket.OPEN) ws.close(code, reason);
    await this.#closed.get(ws);
  }

  /** Close every socket and stop listening. */
  async close(): Promise<void> {
    for (const ws of this.#closed.keys()) {
      if (ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING) ws.close();
    }
    await Promise.all(this.#closed.values());
    await this.#server?.shutdown();
    this.#server = undefined;
  }

  #accept(req: Request): Response {
    const url = new URL(req.url);
    const seen: UpgradeRequest = {
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: Object.fromEntries(req.headers),
      status: 101,
    };
    this.requests.push(seen);
    const refuse = (status: number, code: string, msg: string) => {
      seen.status = status;
      return Response.json(
        { err_code: code, err_msg: msg, request_id: crypto.randomUUID() },
        { status, headers: { "dg-error": msg } },
      );
    };
    if (req.headers.get("upgrade")?.toLowerCase() !== "websocket") {
      return refuse(400, "Bad Request", "websocket upgrade expected");
    }
    if (url.pathname !== "/v1/listen") return refuse(404, "Not Found", "unknown path");
    if (req.headers.get("authorization") !== `Token ${this.#apiKey}`) {
      return refuse(401, "INVALID_AUTH", "Invalid credentials.");
    }
    if (this.refuseWith !== undefined) return refuse(this.refuseWith, "UNAVAILABLE", "refused");
    const problem = checkQuery(url.searchParams);
    if (problem !== undefined) return refuse(400, "Bad Request", problem);
    const { socket, response } = Deno.upgradeWebSocket(req);
    socket.binaryType = "arraybuffer";
    const conn: FakeConnection = { socket, audio: [], controls: [] };
    this.#closed.set(socket, new Promise((r) => socket.addEventListener("close", () => r())));
    this.connections.push(conn);
    socket.addEventListener("message", (ev) => this.#onMessage(conn, ev.data));
    return response;
  }

  #onMessage(conn: FakeConnection, data: unknown): void {
    if (data instanceof ArrayBuffer) {
      conn.audio.push(new Uint8Array(data));
      return;
    }
    let msg: { type: string };
    try {
      msg = JSON.parse(String(data));
    } catch {
      conn.controls.push({ type: "<malformed>" });
      return;
    }
    conn.controls.push(msg);
    if (conn.socket.readyState !== WebSocket.OPEN) return;
    if (msg.type === "Finalize") {
      conn.socket.send(JSON.stringify(resultsMessage({
        transcript: this.#finalizeTranscript,
        isFinal: true,
        speechFinal: false,
        fromFinalize: true,
      }, this.#start)));
    } else if (msg.type === "CloseStream") {
      conn.socket.send(JSON.stringify(metadataMessage()));
      conn.socket.close(1000);
    }
  }
}

/** The query checks Deepgram applies to raw audio (400 when they fail). */
function checkQuery(q: URLSearchParams): string | undefined {
  const encoding = q.get("encoding");
  if (encoding === null) return undefined; // containerized audio: Deepgram sniffs it
  if (!["linear16", "linear32", "flac", "mulaw", "alaw", "opus", "speex"].includes(encoding)) {
    return `unknown encoding ${encoding}`;
  }
  if (!/^\d+$/.test(q.get("sample_rate") ?? "")) return "sample_rate required with encoding";
  if (q.has("channels") && !/^\d+$/.test(q.get("channels") ?? "")) return "bad channels";
  return undefined;
}

/** A `Results` message shaped like Deepgram's (fields per @deepgram/sdk LiveTranscriptionEvent). */
export function resultsMessage(r: FakeResult, start = 0): Record<string, unknown> {
  const words = r.transcript.split(/\s+/).filter(Boolean).map((w, i) => ({
    word: w.toLowerCase().replace(/[^\p{L}\p{N}']/gu, ""),
    start: start + i * 0.2,
    end: start + i * 0.2 + 0.18,
    confidence: 0.98,
    punctuated_word: w,
  }));
  const alt: Record<string, unknown> = { transcript: r.transcript, confidence: 0.98, words };
  if (r.language) alt.languages = [r.language];
  return {
    type: "Results",
    channel_index: [0, 1],
    duration: 0.5,
    start,
    is_final: r.isFinal,
    speech_final: r.speechFinal ?? false,
    channel: { alternatives: [alt] },
    metadata: {
      request_id: "00000000-0000-4000-8000-000000000000",
      model_info: { name: "general-nova-3", version: "2024-12-20.0", arch: "nova-3" },
      model_uuid: "00000000-0000-4000-8000-000000000001",
    },
    from_finalize: r.fromFinalize ?? false,
  };
}

/** The summary `Metadata` Deepgram sends after `CloseStream` (/docs/close-stream). */
function metadataMessage(): Record<string, unknown> {
  return {
    type: "Metadata",
    transaction_key: "deprecated",
    request_id: "00000000-0000-4000-8000-000000000000",
    sha256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    created: new Date().toISOString(),
    duration: 0,
    channels: 1,
  };
}
