/**
 * A local fake of the Azure Speech WebSocket service for tests, recognition and synthesis on
 * one listener. It parses the wire itself (not with the client's codec), as the service does
 * and as the Speech SDK writes it (microsoft/cognitive-services-speech-sdk-js,
 * src/common.speech/WebsocketMessageFormatter.ts, SpeechConnectionMessage.Internal.ts):
 *
 * - the upgrade must carry `Ocp-Apim-Subscription-Key`, else HTTP 401; `refuseWith` answers
 *   every upgrade with that status (429, 503);
 * - text messages are `Path`/`X-RequestId`/`X-Timestamp`/`Content-Type` header lines, a blank
 *   line and a body; binary ones a 2-byte big-endian header length, header lines, payload;
 *   a message without `Path`, `X-RequestId` or `X-Timestamp` closes the socket with 1007;
 * - recognition (`/speech/recognition/conversation/cognitiveservices/v1?language=&format=`):
 *   a WAV header opens a turn (`turn.start`), audio is recorded per turn, an empty `audio`
 *   message ends it (`speech.endDetected`, `turn.end`); the test pushes hypotheses and phrases;
 * - synthesis (`/tts/cognitiveservices/websocket/v1`): `synthesis.context` then `ssml` is
 *   answered `turn.start`, `response` (stream id), binary `audio` chunks in the asked raw PCM
 *   format, `turn.end` — or, with `holdAudio`, only the first chunk until the test releases it.
 *
 * Listens on 127.0.0.1 at an ephemeral port.
 * @module
 */

/** One decoded client message. */
export interface FakeMessage {
  path: string;
  /** Header names lower-case. */
  headers: Record<string, string>;
  text?: string;
  binary?: Uint8Array;
}

/** One accepted connection. */
export interface FakeSpeechConnection {
  socket: WebSocket;
  /** `stt` or `tts`, by the upgrade path. */
  service: "stt" | "tts";
  /** Query of the upgrade. */
  query: Record<string, string>;
  /** Upgrade headers, names lower-case. */
  headers: Record<string, string>;
  /** Every message the client sent, in order. */
  messages: FakeMessage[];
  /** Recognition: audio bytes received after the WAV header, per request id. */
  audio: Map<string, number>;
  /** Recognition: bytes of those audio messages that are not all silence. */
  loud: number;
  /** Recognition: the request id of the open turn. */
  turn?: string;
}

const CRLF = "\r\n";
const enc = new TextEncoder();
const dec = new TextDecoder();

/** Options of {@link AzureSpeechFake}. */
export interface AzureSpeechFakeOptions {
  /** The key accepted (default `test-key`). */
  key?: string;
  /** Samples of synthesized audio per utterance (default 4800). */
  ttsSamples?: number;
  /** Samples per binary audio chunk (default 960). */
  chunkSamples?: number;
}

/** The fake service. */
export class AzureSpeechFake {
  /** Upgrade requests: path and the status answered. */
  readonly upgrades: { path: string; status: number }[] = [];
  /** Accepted connections in order. */
  readonly connections: FakeSpeechConnection[] = [];
  /** Answer every upgrade with this status when set. */
  refuseWith: number | undefined;
  /** Synthesis: stop after the first chunk until {@link release} (barge-in tests). */
  holdAudio = false;
  /** Synthesis: close the socket with 1011 after the first chunk. */
  dropMidAudio = false;
  /** Synthesis: answer the next `ssml` by closing with 1011, before any audio (once). */
  failNextSynthesis = false;
  /** Hold each upgrade this long before answering it (a slow reconnect). */
  upgradeDelayMs = 0;
  /** HTTP requests that reached the fake, counted before any delay. */
  requestsSeen = 0;
  /** Recognition: close each connection with 1007 on its WAV header (a refused session). */
  refuseSession = false;

  readonly #key: string;
  readonly #ttsSamples: number;
  readonly #chunk: number;
  #server: Deno.HttpServer<Deno.NetAddr> | undefined;
  readonly #closed = new Map<WebSocket, Promise<void>>();
  #held: (() => void)[] = [];

  /** Make a fake; nothing listens until {@link start}. */
  constructor(opts: AzureSpeechFakeOptions = {}) {
    this.#key = opts.key ?? "test-key";
    this.#ttsSamples = opts.ttsSamples ?? 4800;
    this.#chunk = opts.chunkSamples ?? 960;
  }

  /** Listen on 127.0.0.1 at an ephemeral port. */
  start(): void {
    this.#server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      async (req) => {
        this.requestsSeen++;
        if (this.upgradeDelayMs > 0) await new Promise((r) => setTimeout(r, this.upgradeDelayMs));
        return this.#accept(req);
      },
    );
  }

  /** The root to give as the provider `url`, e.g. `ws://127.0.0.1:4711`. */
  get url(): string {
    if (this.#server === undefined) throw new Error("fake not started");
    return `ws://127.0.0.1:${this.#server.addr.port}`;
  }

  /** The latest connection. */
  get current(): FakeSpeechConnection {
    const c = this.connections.at(-1);
    if (c === undefined) throw new Error("fake: no connection yet");
    return c;
  }

  /** Messages of one path across connections. */
  sent(path: string): FakeMessage[] {
    return this.connections.flatMap((c) => c.messages.filter((m) => m.path === path));
  }

  /** Recognition: push a `speech.hypothesis` for the open turn. */
  hypothesis(text: string): void {
    this.#reply("speech.hypothesis", { Text: text, Offset: 0, Duration: 1000000 });
  }

  /** Recognition: push a `speech.phrase` for the open turn. */
  phrase(text: string, status = "Success"): void {
    this.#reply("speech.phrase", {
      RecognitionStatus: status,
      DisplayText: text,
      Offset: 0,
      Duration: 1000000,
    });
  }

  /** Recognition: end the open turn from the service side. */
  turnEnd(): void {
    this.#reply("turn.end", {});
  }

  /** Synthesis: send the audio held back by {@link holdAudio}. */
  release(): void {
    const held = this.#held;
    this.#held = [];
    for (const go of held) go();
  }

  /** Close the latest connection from the server side. */
  async drop(code = 1011, reason = "Internal service error"): Promise<void> {
    const ws = this.current.socket;
    if (ws.readyState === WebSocket.OPEN) ws.close(code, reason);
    await this.#closed.get(ws);
  }

  /** Close every socket and stop listening. */
  async close(): Promise<void> {
    this.#held = [];
    for (const ws of this.#closed.keys()) {
      if (ws.readyState === WebSocket.OPEN) ws.close();
    }
    await Promise.all(this.#closed.values());
    await this.#server?.shutdown();
  }

  #accept(req: Request): Response {
    const url = new URL(req.url);
    const service = url.pathname === "/speech/recognition/conversation/cognitiveservices/v1"
      ? "stt"
      : url.pathname === "/tts/cognitiveservices/websocket/v1"
      ? "tts"
      : undefined;
    const refuse = (status: number) => {
      this.upgrades.push({ path: url.pathname, status });
      return new Response(null, { status });
    };
    if (service === undefined) return refuse(404);
    if (req.headers.get("ocp-apim-subscription-key") !== this.#key) return refuse(401);
    if (this.refuseWith !== undefined) return refuse(this.refuseWith);
    if (service === "stt" && !url.searchParams.get("language")) return refuse(400);
    this.upgrades.push({ path: url.pathname, status: 101 });
    const seen = Object.fromEntries(req.headers);
    const { socket, response } = Deno.upgradeWebSocket(req);
    socket.binaryType = "arraybuffer";
    const conn: FakeSpeechConnection = {
      socket,
      service,
      query: Object.fromEntries(url.searchParams),
      headers: seen,
      messages: [],
      audio: new Map(),
      loud: 0,
    };
    this.connections.push(conn);
    this.#closed.set(socket, new Promise((r) => socket.addEventListener("close", () => r())));
    socket.addEventListener("message", (ev) => this.#onMessage(conn, ev.data));
    return response;
  }

  #onMessage(conn: FakeSpeechConnection, data: unknown): void {
    const msg = parse(data);
    if (
      msg === undefined || !msg.path || !msg.headers["x-requestid"] || !msg.headers["x-timestamp"]
    ) {
      conn.socket.close(1007, "Invalid message: missing Path, X-RequestId or X-Timestamp");
      return;
    }
    conn.messages.push(msg);
    const id = msg.headers["x-requestid"];
    if (conn.service === "stt" && msg.path === "audio") {
      if (msg.headers["content-type"] === "audio/x-wav" && this.refuseSession) {
        conn.socket.close(1007, "Unsupported audio format");
        return;
      }
      if (msg.headers["content-type"] === "audio/x-wav") {
        conn.turn = id;
        conn.audio.set(id, 0);
        send(conn.socket, "turn.start", id, { context: { serviceTag: "fake" } });
      } else if (msg.binary === undefined) {
        send(conn.socket, "speech.endDetected", id, { Offset: 0 });
        send(conn.socket, "turn.end", id, {});
      } else {
        conn.audio.set(id, (conn.audio.get(id) ?? 0) + msg.binary.length);
        if (msg.binary.some((b) => b !== 0)) conn.loud += msg.binary.length;
      }
    }
    if (conn.service === "tts" && msg.path === "ssml") this.#synthesize(conn, id, msg);
  }

  #synthesize(conn: FakeSpeechConnection, id: string, ssml: FakeMessage): void {
    const context = conn.messages.findLast((m) => m.path === "synthesis.context");
    const format = context?.headers["x-requestid"] === id
      ? JSON.parse(context.text ?? "{}")?.synthesis?.audio?.outputFormat
      : undefined;
    const khz = /^raw-(\d+)khz-16bit-mono-pcm$/.exec(String(format))?.[1];
    if (khz === undefined || !ssml.text?.startsWith("<speak")) {
      conn.socket.close(1007, "Invalid synthesis request");
      return;
    }
    const ws = conn.socket;
    if (this.failNextSynthesis) {
      this.failNextSynthesis = false;
      ws.close(1011, "Internal service error");
      return;
    }
    const streamId = crypto.randomUUID().replaceAll("-", "");
    send(ws, "turn.start", id, { context: { serviceTag: "fake" } });
    send(ws, "response", id, {
      context: { serviceTag: "fake" },
      audio: { type: "inline", streamId },
    });
    const chunks: Uint8Array[] = [];
    for (let at = 0; at < this.#ttsSamples; at += this.#chunk) {
      const n = Math.min(this.#chunk, this.#ttsSamples - at);
      const pcm = new Int16Array(n);
      for (let i = 0; i < n; i++) pcm[i] = Math.round(8000 * Math.sin((at + i) / 8));
      chunks.push(new Uint8Array(pcm.buffer));
    }
    const audio = (body: Uint8Array) => {
      if (ws.readyState !== WebSocket.OPEN) return;
      const head = enc.encode(
        `Path: audio${CRLF}X-RequestId: ${id}${CRLF}X-StreamId: ${streamId}${CRLF}` +
          `X-Timestamp: ${new Date().toISOString()}${CRLF}Content-Type: audio/x-wav${CRLF}`,
      );
      const out = new Uint8Array(2 + head.length + body.length);
      out[0] = head.length >> 8;
      out[1] = head.length & 0xff;
      out.set(head, 2);
      out.set(body, 2 + head.length);
      ws.send(out);
    };
    const rest = () => {
      for (const c of chunks.slice(1)) audio(c);
      if (ws.readyState === WebSocket.OPEN) send(ws, "turn.end", id, {});
    };
    audio(chunks[0]);
    if (this.dropMidAudio) ws.close(1011, "Internal service error");
    else if (this.holdAudio) this.#held.push(rest);
    else rest();
  }

  #reply(path: string, body: unknown): void {
    const conn = this.connections.findLast((c) => c.service === "stt");
    if (conn?.turn === undefined) throw new Error("fake: no recognition turn open");
    send(conn.socket, path, conn.turn, body);
  }
}

function send(ws: WebSocket, path: string, id: string, body: unknown): void {
  if (ws.readyState !== WebSocket.OPEN) return;
  ws.send(
    `X-RequestId: ${id}${CRLF}Content-Type: application/json; charset=utf-8${CRLF}` +
      `Path: ${path}${CRLF}${CRLF}${JSON.stringify(body)}`,
  );
}

function headers(block: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of block.split(CRLF)) {
    const i = line.indexOf(":");
    if (i > 0) out[line.slice(0, i).toLowerCase()] = line.slice(i + 1).trim();
  }
  return out;
}

function parse(data: unknown): FakeMessage | undefined {
  if (typeof data === "string") {
    const i = data.indexOf(CRLF + CRLF);
    if (i < 0) return undefined;
    const h = headers(data.slice(0, i));
    return { path: h.path ?? "", headers: h, text: data.slice(i + 4) };
  }
  if (!(data instanceof ArrayBuffer) || data.byteLength < 2) return undefined;
  const bytes = new Uint8Array(data);
  const n = (bytes[0] << 8) | bytes[1];
  if (bytes.length < 2 + n) return undefined;
  const h = headers(dec.decode(bytes.subarray(2, 2 + n)));
  const body = bytes.subarray(2 + n);
  return { path: h.path ?? "", headers: h, ...(body.length > 0 ? { binary: body.slice() } : {}) };
}
