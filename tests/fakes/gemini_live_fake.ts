/**
 * A local Gemini Live (BidiGenerateContent) server for tests: a WebSocket on 127.0.0.1 that
 * speaks the real wire protocol. It records every client message, answers `setup` with
 * `setupComplete` (optionally delayed, or never), lets the test push any server message (as a
 * text frame, JSON in a binary frame, or raw malformed text), drops connections, refuses new
 * ones or refuses resumption handles. Connections go through a TCP relay so a test can cut one
 * without a close frame ({@link GeminiLiveFake.dropAbruptly}); {@link GeminiLiveFake.model} keeps
 * each session's context and handles and streams scripted replies (gemini_live_model.ts).
 *
 * @example
 * ```ts
 * import { createGeminiLive } from "@flowcat/flowcat/realtime/gemini";
 * const fake = await new GeminiLiveFake().start();
 * const client = createGeminiLive({ apiKey: "k", url: fake.url });
 * await client.connect({ systemPrompt: "hi", tools: [] });
 * fake.send(serverAudio(new Int16Array(480)));
 * await fake.close();
 * ```
 * @module
 */

import { TcpProxy } from "./_tcp_proxy.ts";
import { FakeGeminiModel } from "./gemini_live_model.ts";

export { type ContextEntry, FakeGeminiModel, type ReplyOptions } from "./gemini_live_model.ts";

/** A client message the fake received. */
export interface ReceivedMessage {
  /** 1-based number of the WebSocket connection it came on. */
  connection: number;
  /** The message's single top-level key (`setup`, `realtimeInput`, ...). */
  kind: string;
  message: Record<string, unknown>;
  raw: string;
}

/** Options of {@link GeminiLiveFake}. */
export interface GeminiLiveFakeOptions {
  /** Delay before `setupComplete` (default 0). */
  setupCompleteDelayMs?: number;
  /** Answer `setup` with `setupComplete` at all (default true). */
  autoSetupComplete?: boolean;
  /** See {@link GeminiLiveFake.apiKey}. */
  apiKey?: string;
}

interface Waiter {
  check(): boolean;
  resolve(): void;
  reject(err: Error): void;
  timer: ReturnType<typeof setTimeout>;
}

/** The fake server. Every knob is a public field a test may change at any time. */
export class GeminiLiveFake {
  /** Delay before `setupComplete`. */
  setupCompleteDelayMs: number;
  /** Answer `setup` with `setupComplete`. */
  autoSetupComplete: boolean;
  /** Answer new WebSocket requests with HTTP 503 (a reconnect then fails). */
  refuseConnections = false;
  /**
   * The key the service accepts; a `setup` on a connection whose `?key=` differs is answered as
   * the service does, by closing with 1007 "API key not valid". Default: any key.
   */
  apiKey: string | undefined;
  /** Close (code 1007) a connection whose `setup` carries a resumption handle. */
  rejectResumption = false;
  /** Every client message, in arrival order. */
  readonly received: ReceivedMessage[] = [];
  /** Request URL of each connection (index 0 is connection 1); the key is in its query. */
  readonly requestUrls: URL[] = [];
  /**
   * Both directions in order, as `c<N> <kind` (client to fake) and `c<N> >kind` (fake to
   * client), for ordering assertions.
   */
  readonly timeline: string[] = [];
  /** Session contexts, handles, scripted replies, `goAway` deadlines. */
  readonly model: FakeGeminiModel;
  #server: Deno.HttpServer<Deno.NetAddr> | undefined;
  #proxy: TcpProxy | undefined;
  /** Upstream-side port of each connection's TCP relay (index 0 is connection 1). */
  readonly #relayPorts: number[] = [];
  readonly #sockets: WebSocket[] = [];
  readonly #closed: Promise<void>[] = [];
  readonly #timers = new Set<ReturnType<typeof setTimeout>>();
  readonly #waiters = new Set<Waiter>();

  /** A fake; call {@link GeminiLiveFake.start} to listen. */
  constructor(opts: GeminiLiveFakeOptions = {}) {
    this.setupCompleteDelayMs = opts.setupCompleteDelayMs ?? 0;
    this.autoSetupComplete = opts.autoSetupComplete ?? true;
    this.apiKey = opts.apiKey;
    this.model = new FakeGeminiModel({
      send: (msg, n) => this.send(msg, n),
      close: (n, code, reason) => this.#socket(n).close(code, reason),
      isOpen: (n) => this.#sockets[n - 1]?.readyState === WebSocket.OPEN,
    });
  }

  /** Listen on 127.0.0.1 on an ephemeral port. */
  start(): Promise<this> {
    this.#server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      (req, info) => this.#accept(req, info.remoteAddr.port),
    );
    this.#proxy = new TcpProxy(this.#server.addr.port);
    return Promise.resolve(this);
  }

  /** `ws://127.0.0.1:<port>/ws/...BidiGenerateContent` (pass as the client's `url`). */
  get url(): string {
    if (!this.#server) throw new Error("GeminiLiveFake: start() first");
    return `ws://127.0.0.1:${
      this.#proxy!.port
    }/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent`;
  }

  /** Connections accepted so far. */
  get connections(): number {
    return this.#sockets.length;
  }

  /** Client messages of one kind (e.g. `realtimeInput`), optionally of one connection. */
  messages(kind: string, connection?: number): ReceivedMessage[] {
    return this.received.filter((m) =>
      m.kind === kind && (connection === undefined || m.connection === connection)
    );
  }

  /** Send a JSON text frame on the newest open connection (or on `connection`). */
  send(msg: unknown, connection?: number): void {
    this.#sendOn(JSON.stringify(msg), connection, kindOf(msg));
  }

  /** Send JSON as a binary (UTF-8) frame, as the real service sometimes does. */
  sendBinaryJson(msg: unknown, connection?: number): void {
    this.#sendOn(new TextEncoder().encode(JSON.stringify(msg)), connection, kindOf(msg));
  }

  /** Send a text frame verbatim (malformed JSON, odd shapes). */
  sendRaw(text: string, connection?: number): void {
    this.#sendOn(text, connection, "raw");
  }

  /** Send `setupComplete` by hand (with `autoSetupComplete` off). */
  sendSetupComplete(connection?: number): void {
    this.send({ setupComplete: {} }, connection);
  }

  /** Close the newest open connection from the server side (code 1011), as a drop. */
  dropConnection(code = 1011, reason = "dropped by test"): void {
    this.#socket(undefined).close(code, reason);
  }

  /** Cut the newest open connection (or `connection`) as a network does: no close frame. */
  dropAbruptly(connection?: number): void {
    const socket = this.#socket(connection);
    this.#proxy!.cut(this.#relayPorts[this.#sockets.indexOf(socket)]);
  }

  /** Resolve with the first received message matching `pred` (already received or later). */
  async waitFor(
    pred: (m: ReceivedMessage) => boolean,
    timeoutMs = 3000,
  ): Promise<ReceivedMessage> {
    await this.waitUntil(() => this.received.some(pred), timeoutMs, "a matching client message");
    return this.received.find(pred)!;
  }

  /** Resolve once `cond()` holds (checked on every message and connection change). */
  waitUntil(cond: () => boolean, timeoutMs = 3000, what = "condition"): Promise<void> {
    if (cond()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        check: cond,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.#waiters.delete(waiter);
          reject(new Error(`GeminiLiveFake: timed out waiting for ${what}`));
        }, timeoutMs),
      };
      this.#waiters.add(waiter);
    });
  }

  /** Close every connection and stop listening. */
  async close(): Promise<void> {
    this.model.stop();
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    for (const w of this.#waiters) {
      clearTimeout(w.timer);
      w.reject(new Error("GeminiLiveFake: closed"));
    }
    this.#waiters.clear();
    for (const s of this.#sockets) {
      if (s.readyState === WebSocket.OPEN) s.close(1001, "fake closing");
    }
    await this.#proxy?.close();
    await Promise.allSettled(this.#closed);
    await this.#server?.shutdown();
  }

  #accept(req: Request, relayPort: number): Response {
    if (req.headers.get("upgrade")?.toLowerCase() !== "websocket") {
      return new Response("WebSocket only", { status: 400 });
    }
    if (this.refuseConnections) return new Response("unavailable", { status: 503 });
    const { socket, response } = Deno.upgradeWebSocket(req);
    socket.binaryType = "arraybuffer";
    const n = this.#sockets.push(socket);
    this.#relayPorts.push(relayPort);
    this.requestUrls.push(new URL(req.url));
    this.#closed.push(new Promise((r) => socket.addEventListener("close", () => r())));
    socket.addEventListener("open", () => this.#notify());
    socket.addEventListener("close", () => this.#notify());
    socket.addEventListener("message", (e) => this.#onMessage(n, socket, e.data));
    return response;
  }

  #onMessage(n: number, socket: WebSocket, data: unknown): void {
    const raw = typeof data === "string" ? data : new TextDecoder().decode(data as ArrayBuffer);
    let message: Record<string, unknown>;
    try {
      message = JSON.parse(raw);
    } catch {
      message = {};
    }
    const kind = Object.keys(message)[0] ?? "invalid";
    this.received.push({ connection: n, kind, message, raw });
    this.timeline.push(`c${n} <${kind}`);
    if (kind === "setup") this.#onSetup(n, socket, message.setup as Record<string, unknown>);
    else this.model.consume(n, message);
    this.#notify();
  }

  #onSetup(n: number, socket: WebSocket, setup: Record<string, unknown>): void {
    if (
      this.apiKey !== undefined && this.requestUrls[n - 1].searchParams.get("key") !== this.apiKey
    ) {
      socket.close(1007, "API key not valid. Please pass a valid API key.");
      return;
    }
    const resumption = setup?.sessionResumption as { handle?: unknown } | undefined;
    if (this.rejectResumption && typeof resumption?.handle === "string") {
      socket.close(1007, "session not found");
      return;
    }
    this.model.setup(
      n,
      typeof resumption?.handle === "string" ? resumption.handle : undefined,
    );
    if (!this.autoSetupComplete) return;
    const t = setTimeout(() => {
      this.#timers.delete(t);
      if (socket.readyState === WebSocket.OPEN) this.sendSetupComplete(n);
    }, this.setupCompleteDelayMs);
    this.#timers.add(t);
  }

  #socket(connection: number | undefined): WebSocket {
    if (connection !== undefined) {
      const s = this.#sockets[connection - 1];
      if (!s) throw new Error(`GeminiLiveFake: no connection ${connection}`);
      return s;
    }
    for (let i = this.#sockets.length - 1; i >= 0; i--) {
      if (this.#sockets[i].readyState === WebSocket.OPEN) return this.#sockets[i];
    }
    throw new Error("GeminiLiveFake: no open connection");
  }

  #sendOn(data: string | Uint8Array, connection: number | undefined, kind: string): void {
    const socket = this.#socket(connection);
    const n = this.#sockets.indexOf(socket) + 1;
    socket.send(data);
    this.timeline.push(`c${n} >${kind}`);
  }

  #notify(): void {
    for (const w of this.#waiters) {
      if (!w.check()) continue;
      clearTimeout(w.timer);
      this.#waiters.delete(w);
      w.resolve();
    }
  }
}

function kindOf(msg: unknown): string {
  return typeof msg === "object" && msg !== null ? Object.keys(msg).join("+") : "raw";
}

/** A `serverContent.modelTurn` audio message: 16-bit PCM as base64 at `rate` (default 24 kHz). */
export function serverAudio(pcm: Int16Array, rate = 24000): Record<string, unknown> {
  const bytes = new Uint8Array(pcm.buffer, pcm.byteOffset, pcm.byteLength);
  return {
    serverContent: {
      modelTurn: {
        parts: [{ inlineData: { mimeType: `audio/pcm;rate=${rate}`, data: bytes.toBase64() } }],
      },
    },
  };
}

/** PCM samples of a client `realtimeInput.audio` message. */
export function clientAudioPcm(m: ReceivedMessage): Int16Array {
  const audio = (m.message.realtimeInput as { audio: { data: string } }).audio;
  const bytes = Uint8Array.fromBase64(audio.data);
  return new Int16Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 2);
}
