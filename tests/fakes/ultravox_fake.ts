/**
 * A local fake of Ultravox for tests, speaking its real wire: `POST /api/calls` (key in
 * `X-API-Key`; a wrong one is answered 401) creates a call and answers its `joinUrl`; that
 * WebSocket takes binary 16-bit PCM from the client and JSON data messages
 * (`client_tool_result`, `user_text_message`), and the test sends the server's: binary model
 * audio, `transcript`, `state`, `client_tool_invocation`, `playback_clear_buffer` (it sends
 * `call_started` itself on join). Listens on
 * 127.0.0.1 at an ephemeral port, behind a TCP relay so a test can cut the socket abruptly.
 *
 * @example
 * ```ts
 * import { createUltravoxRealtime } from "@flowcat/flowcat/realtime/ultravox";
 * const fake = new UltravoxFake({ apiKey: "k" });
 * await fake.start();
 * const llm = createUltravoxRealtime({ apiKey: "k", url: fake.apiUrl });
 * await llm.connect({ systemPrompt: "hi", tools: [] });
 * fake.send({ type: "state", state: "listening" });
 * await llm.close();
 * await fake.close();
 * ```
 * @module
 */

import { TcpProxy } from "./_tcp_proxy.ts";

/** A JSON data message the client sent. */
export type UltravoxClientMessage = { type: string } & Record<string, unknown>;

/** Options of {@link UltravoxFake}. */
export interface UltravoxFakeOptions {
  /** The key `POST /api/calls` accepts. */
  apiKey: string;
}

/** The fake service; one call at a time is current. */
export class UltravoxFake {
  /** Bodies of the calls created, in order. */
  readonly calls: Record<string, unknown>[] = [];
  /** The `priorCallId` each call was created with (`undefined`: a first call). */
  readonly priorCallIds: (string | undefined)[] = [];
  /** Query of each join request (index 0 is the first call). */
  readonly joinQueries: Record<string, string>[] = [];
  /** JSON data messages from the client, across calls. */
  readonly received: UltravoxClientMessage[] = [];
  /** Caller audio received, in bytes. */
  audioBytes = 0;
  readonly #key: string;
  #server: Deno.HttpServer<Deno.NetAddr> | undefined;
  #proxy: TcpProxy | undefined;
  #socket: WebSocket | undefined;
  #relayPort = 0;
  readonly #closed: Promise<void>[] = [];

  /** A fake; nothing listens until {@link UltravoxFake.start}. */
  constructor(opts: UltravoxFakeOptions) {
    this.#key = opts.apiKey;
  }

  /** Listen on 127.0.0.1 at an ephemeral port. */
  start(): Promise<void> {
    this.#server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      (req, info) => this.#handle(req, info.remoteAddr.port),
    );
    this.#proxy = new TcpProxy(this.#server.addr.port);
    return Promise.resolve();
  }

  /** The API root to give the client as `url`. */
  get apiUrl(): string {
    if (this.#proxy === undefined) throw new Error("UltravoxFake: start() first");
    return `http://127.0.0.1:${this.#proxy.port}/api`;
  }

  /** True while a client is joined. */
  get joined(): boolean {
    return this.#socket?.readyState === WebSocket.OPEN;
  }

  /** Send a data message (JSON) to the joined client. */
  send(msg: Record<string, unknown>): void {
    this.#open().send(JSON.stringify(msg));
  }

  /** Send model audio (binary 16-bit little-endian PCM) to the joined client. */
  sendAudio(pcm: Int16Array): void {
    const bytes = new Uint8Array(pcm.length * 2);
    const view = new DataView(bytes.buffer);
    pcm.forEach((v, i) => view.setInt16(i * 2, v, true));
    this.#open().send(bytes);
  }

  /** Client messages of one type. */
  ofType(type: string): UltravoxClientMessage[] {
    return this.received.filter((m) => m.type === type);
  }

  /** Cut the joined client's TCP connection (no close frame) and wait until it is closed. */
  async dropAbruptly(): Promise<void> {
    this.#proxy!.cut(this.#relayPort);
    await this.#closed.at(-1);
  }

  /** Close every socket and stop. */
  async close(): Promise<void> {
    if (this.#socket?.readyState === WebSocket.OPEN) this.#socket.close();
    await this.#proxy?.close();
    await Promise.all(this.#closed);
    await this.#server?.shutdown();
    this.#server = undefined;
  }

  #open(): WebSocket {
    const ws = this.#socket;
    if (ws === undefined || ws.readyState !== WebSocket.OPEN) {
      throw new Error("UltravoxFake: no joined client");
    }
    return ws;
  }

  async #handle(req: Request, relayPort: number): Promise<Response> {
    const url = new URL(req.url);
    if (req.method === "POST" && url.pathname === "/api/calls") {
      if (req.headers.get("x-api-key") !== this.#key) {
        return Response.json({ detail: "Invalid API key." }, { status: 401 });
      }
      const body = await req.json() as Record<string, unknown>;
      this.calls.push(body);
      this.priorCallIds.push(url.searchParams.get("priorCallId") ?? undefined);
      const callId = `call-${this.calls.length}`;
      const joinUrl = `ws://127.0.0.1:${this.#proxy!.port}/calls/${callId}/server_web_socket`;
      return Response.json({ callId, joinUrl, ...body }, { status: 201 });
    }
    if (/^\/calls\/[^/]+\/server_web_socket$/.test(url.pathname)) {
      if (req.headers.get("upgrade")?.toLowerCase() !== "websocket") {
        return new Response("websocket only", { status: 400 });
      }
      this.joinQueries.push(Object.fromEntries(url.searchParams));
      const { socket, response } = Deno.upgradeWebSocket(req);
      socket.binaryType = "arraybuffer";
      this.#socket = socket;
      this.#relayPort = relayPort;
      this.#closed.push(new Promise((r) => socket.addEventListener("close", () => r())));
      socket.addEventListener("open", () => {
        socket.send(JSON.stringify({ type: "call_started", callId: url.pathname.split("/")[2] }));
      });
      socket.addEventListener("message", (ev) => {
        if (ev.data instanceof ArrayBuffer) this.audioBytes += ev.data.byteLength;
        else this.received.push(JSON.parse(ev.data as string));
      });
      return response;
    }
    return new Response("not found", { status: 404 });
  }
}
