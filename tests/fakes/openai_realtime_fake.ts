// Over 400 lines: the fake server and the server-event builders its tests share.
/**
 * A local fake of the OpenAI Realtime WebSocket server for tests. It speaks the real protocol:
 * `session.created` on connect, `session.updated` (echoing the merged session) for every
 * `session.update`; it records what the client sent (messages, request headers, URL query) and
 * lets the test push server events or drop the connection. Listens on 127.0.0.1, ephemeral port.
 *
 * @example
 * ```ts
 * import { createOpenAIRealtime } from "@flowcat/flowcat/realtime/openai";
 * declare const pcm24k: Int16Array;
 * const fake = new OpenAIRealtimeFake();
 * await fake.start();
 * const llm = createOpenAIRealtime({ apiKey: "k", url: fake.url });
 * await llm.connect({ systemPrompt: "hi", tools: [] });
 * fake.send(audioDeltaEvent(pcm24k, "item_1"));
 * await llm.close();
 * await fake.close();
 * ```
 * @module
 */

import { TcpProxy } from "./_tcp_proxy.ts";

/** A client message as received (parsed JSON with a `type`). */
export type ClientMessage = { type: string } & Record<string, unknown>;

/** Behaviour switches of the fake. */
export interface OpenAIRealtimeFakeOptions {
  /** Send `session.created` when a client connects (default true). */
  sendSessionCreated?: boolean;
  /**
   * Whose server this is (default `openai`). `xai`: the first event is `conversation.created`
   * instead of `session.created`, and an event xAI does not define
   * (`conversation.item.truncate`) is answered with an `error` event.
   */
  dialect?: "openai" | "xai";
  /** Answer `session.update` with `session.updated` (default true). */
  answerSessionUpdate?: boolean;
  /** Answer `session.update` with this `error` instead. */
  rejectSessionUpdate?: { code: string; message: string };
  /** Refuse the WebSocket upgrade with HTTP 401 unless the request carries this key (as
   * `Authorization: Bearer <key>` or an `api-key` header). Default: any key. */
  apiKey?: string;
  /** Refuse upgrades (HTTP 401) whose header `name` is not `value` (lower-case name). */
  requireHeader?: { name: string; value: string };
}

/** Client events of OpenAI's protocol that xAI's server does not define. */
const XAI_UNKNOWN_EVENTS = new Set(["conversation.item.truncate"]);

interface Waiter {
  pred: (m: ClientMessage) => boolean;
  resolve: (m: ClientMessage) => void;
}

/** The fake server. One client at a time is "current"; earlier ones stay recorded. */
export class OpenAIRealtimeFake {
  /** Every parsed client message, in order, across connections. */
  readonly received: ClientMessage[] = [];
  /** Client messages that were not JSON objects with a `type` (raw text). */
  readonly malformed: string[] = [];
  /** Request headers of the latest connection, names lower-case. */
  headers: Record<string, string> = {};
  /** URL query of the latest connection. */
  query: Record<string, string> = {};
  /** URL path of the latest connection. */
  path = "";
  /** How many WebSocket connections were accepted. */
  connections = 0;
  /** The session as the client configured it (merged `session.update`s of this connection). */
  session: Record<string, unknown> = {};
  /** The connection (1-based) each message of {@link OpenAIRealtimeFake.received} came on. */
  readonly receivedOn: number[] = [];
  /** Answer new WebSocket requests with HTTP 503. */
  refuseConnections = false;
  /** Delay before `session.created` on connections after the first, ms (a slow new session). */
  reconnectDelayMs = 0;

  readonly #opts: OpenAIRealtimeFakeOptions;
  #server: Deno.HttpServer<Deno.NetAddr> | undefined;
  #proxy: TcpProxy | undefined;
  readonly #relayPorts = new Map<WebSocket, number>();
  readonly #numbers = new Map<WebSocket, number>();
  #socket: WebSocket | undefined;
  readonly #closed = new Map<WebSocket, Promise<void>>();
  #waiters: Waiter[] = [];
  #eventId = 0;

  /** Make a fake; nothing listens until {@link OpenAIRealtimeFake.start}. */
  constructor(opts: OpenAIRealtimeFakeOptions = {}) {
    this.#opts = opts;
  }

  /** Start listening on 127.0.0.1 at an ephemeral port. */
  start(): Promise<void> {
    this.#server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      (req, info) => this.#accept(req, info.remoteAddr.port),
    );
    // Clients dial through a TCP relay so a test can cut a connection without a close frame.
    this.#proxy = new TcpProxy(this.#server.addr.port);
    return Promise.resolve();
  }

  /** Base URL of the realtime endpoint (no `?model=`), e.g. `ws://127.0.0.1:4711/v1/realtime`. */
  get url(): string {
    if (this.#server === undefined) throw new Error("fake not started");
    return `ws://127.0.0.1:${this.#proxy!.port}/v1/realtime`;
  }

  /** Client messages of one type. */
  ofType(type: string): ClientMessage[] {
    return this.received.filter((m) => m.type === type);
  }

  /** Send a server event (an object is sent as JSON, a string as is) to the current client. */
  send(ev: Record<string, unknown> | string): void {
    const ws = this.#socket;
    if (ws === undefined || ws.readyState !== WebSocket.OPEN) throw new Error("no client");
    ws.send(typeof ev === "string" ? ev : JSON.stringify({ event_id: this.#nextId(), ...ev }));
  }

  /** The first received message (past or future) matching `pred`; rejects after `ms`. */
  waitFor(pred: (m: ClientMessage) => boolean, ms = 3000): Promise<ClientMessage> {
    const seen = this.received.find(pred);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        pred,
        resolve: (m) => {
          clearTimeout(timer);
          resolve(m);
        },
      };
      const timer = setTimeout(() => {
        this.#waiters = this.#waiters.filter((w) => w !== waiter);
        const types = this.received.map((m) => m.type).join(", ");
        reject(new Error(`fake: no matching client message within ${ms} ms (got: ${types})`));
      }, ms);
      this.#waiters.push(waiter);
    });
  }

  /** Resolve once `n` connections have been accepted. */
  async waitForConnections(n = 1, ms = 3000): Promise<void> {
    const end = Date.now() + ms;
    while (this.connections < n) {
      if (Date.now() > end) throw new Error(`fake: fewer than ${n} connections`);
      await new Promise<void>((r) => setTimeout(r, 5));
    }
  }

  /** Close the current client's socket from the server side and wait until it is closed. */
  async dropConnection(code = 1011, reason = "fake dropped the connection"): Promise<void> {
    const ws = this.#socket;
    if (ws === undefined) return;
    if (ws.readyState === WebSocket.OPEN) ws.close(code, reason);
    await this.#closed.get(ws);
  }

  /** Client messages of one type that came on connection `n`. */
  ofTypeOn(type: string, n: number): ClientMessage[] {
    return this.received.filter((m, i) => m.type === type && this.receivedOn[i] === n);
  }

  /** Cut the current client's TCP connection (no close frame) and wait until it is closed. */
  async dropAbruptly(): Promise<void> {
    const ws = this.#socket;
    if (ws === undefined) return;
    this.#proxy!.cut(this.#relayPorts.get(ws)!);
    await this.#closed.get(ws);
  }

  /** Close every socket and stop the server. */
  async close(): Promise<void> {
    for (const ws of this.#closed.keys()) {
      if (ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING) ws.close();
    }
    await this.#proxy?.close();
    await Promise.all(this.#closed.values());
    await this.#server?.shutdown();
    this.#server = undefined;
  }

  #nextId(): string {
    return `ev_fake_${++this.#eventId}`;
  }

  #accept(req: Request, relayPort: number): Response {
    if (req.headers.get("upgrade")?.toLowerCase() !== "websocket") {
      return new Response("websocket only", { status: 400 });
    }
    if (this.refuseConnections) return new Response("unavailable", { status: 503 });
    const key = this.#opts.apiKey;
    if (
      key !== undefined && req.headers.get("authorization") !== `Bearer ${key}` &&
      req.headers.get("api-key") !== key
    ) {
      return Response.json({
        error: { type: "invalid_request_error", code: "invalid_api_key", message: "bad key" },
      }, { status: 401 });
    }
    const need = this.#opts.requireHeader;
    if (need !== undefined && req.headers.get(need.name) !== need.value) {
      return Response.json({ error: { code: "401", message: "Access denied" } }, { status: 401 });
    }
    const url = new URL(req.url);
    this.headers = Object.fromEntries(req.headers);
    this.query = Object.fromEntries(url.searchParams);
    this.path = url.pathname;
    const { socket, response } = Deno.upgradeWebSocket(req);
    this.#relayPorts.set(socket, relayPort);
    this.#closed.set(socket, new Promise((r) => socket.addEventListener("close", () => r())));
    socket.addEventListener("open", () => {
      this.#socket = socket;
      this.session = {};
      this.#numbers.set(socket, ++this.connections);
      if (this.#opts.sendSessionCreated === false) return;
      const n = this.connections;
      const created = () => {
        if (socket.readyState !== WebSocket.OPEN) return;
        this.send(
          this.#opts.dialect === "xai"
            ? {
              type: "conversation.created",
              conversation: { id: `conv_fake_${n}`, object: "realtime.conversation" },
            }
            : {
              type: "session.created",
              session: { id: `sess_fake_${n}`, model: this.query.model ?? null },
            },
        );
      };
      if (n > 1 && this.reconnectDelayMs > 0) setTimeout(created, this.reconnectDelayMs);
      else created();
    });
    socket.addEventListener("message", (ev) => this.#onMessage(socket, ev.data));
    return response;
  }

  #onMessage(socket: WebSocket, data: unknown): void {
    const text = typeof data === "string" ? data : new TextDecoder().decode(data as ArrayBuffer);
    let msg: unknown;
    try {
      msg = JSON.parse(text);
    } catch {
      msg = undefined;
    }
    if (
      typeof msg !== "object" || msg === null ||
      typeof (msg as Record<string, unknown>).type !== "string"
    ) {
      this.malformed.push(text);
      return;
    }
    const m = msg as ClientMessage;
    this.received.push(m);
    this.receivedOn.push(this.#numbers.get(socket) ?? 0);
    if (m.type === "session.update" && socket === this.#socket) this.#onSessionUpdate(m);
    if (this.#opts.dialect === "xai" && XAI_UNKNOWN_EVENTS.has(m.type)) {
      this.send(errorEvent("invalid_event", `Unknown event type: ${m.type}`));
    }
    for (const w of this.#waiters.filter((w) => w.pred(m))) {
      this.#waiters = this.#waiters.filter((x) => x !== w);
      w.resolve(m);
    }
  }

  #onSessionUpdate(m: ClientMessage): void {
    const reject = this.#opts.rejectSessionUpdate;
    if (reject !== undefined) {
      this.send({
        type: "error",
        error: { type: "invalid_request_error", ...reject, param: null, event_id: null },
      });
      return;
    }
    const update = typeof m.session === "object" && m.session !== null ? m.session : {};
    this.session = { ...this.session, ...update };
    if (this.#opts.answerSessionUpdate !== false) {
      this.send({ type: "session.updated", session: this.session });
    }
  }
}

// ------------------------------------------------------------------ server event builders

/** Base64 of little-endian PCM16 (the fake's own encoder, independent of the client's). */
export function base64Pcm16(pcm: Int16Array): string {
  const bytes = new Uint8Array(pcm.length * 2);
  const view = new DataView(bytes.buffer);
  pcm.forEach((v, i) => view.setInt16(i * 2, v, true));
  return bytes.toBase64();
}

/** PCM16 from base64 little-endian bytes. */
export function pcm16FromBase64LE(b64: string): Int16Array {
  const bytes = Uint8Array.fromBase64(b64);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Int16Array(bytes.length >> 1);
  for (let i = 0; i < out.length; i++) out[i] = view.getInt16(i * 2, true);
  return out;
}

/**
 * An assistant audio chunk of item `itemId`: 24 kHz PCM16, or mu-law bytes as they are (a
 * session in `g711_ulaw` / `audio/pcmu`).
 */
export function audioDeltaEvent(
  pcm24k: Int16Array | Uint8Array,
  itemId: string,
  protocol: "ga" | "beta" = "ga",
): Record<string, unknown> {
  return {
    type: protocol === "ga" ? "response.output_audio.delta" : "response.audio.delta",
    response_id: "resp_fake",
    item_id: itemId,
    output_index: 0,
    content_index: 0,
    delta: pcm24k instanceof Uint8Array ? pcm24k.toBase64() : base64Pcm16(pcm24k),
  };
}

/** Assistant transcript delta or done. */
export function botTranscriptEvent(
  text: string,
  done: boolean,
  protocol: "ga" | "beta" = "ga",
): Record<string, unknown> {
  const base = protocol === "ga" ? "response.output_audio_transcript" : "response.audio_transcript";
  return done
    ? { type: `${base}.done`, item_id: "item_bot", content_index: 0, transcript: text }
    : { type: `${base}.delta`, item_id: "item_bot", content_index: 0, delta: text };
}

/** User transcript delta or completed. */
export function userTranscriptEvent(text: string, done: boolean): Record<string, unknown> {
  const type = `conversation.item.input_audio_transcription.${done ? "completed" : "delta"}`;
  return done
    ? { type, item_id: "item_user", content_index: 0, transcript: text }
    : { type, item_id: "item_user", content_index: 0, delta: text };
}

/** Server VAD heard the caller start talking. */
export function speechStartedEvent(audioStartMs = 0): Record<string, unknown> {
  return {
    type: "input_audio_buffer.speech_started",
    audio_start_ms: audioStartMs,
    item_id: "item_user",
  };
}

/** The arguments of a function call are complete. `args` is sent as is when a string. */
export function functionCallDoneEvent(
  callId: string,
  name: string,
  args: Record<string, unknown> | string,
): Record<string, unknown> {
  return {
    type: "response.function_call_arguments.done",
    response_id: "resp_fake",
    item_id: "item_fc",
    output_index: 0,
    call_id: callId,
    name,
    arguments: typeof args === "string" ? args : JSON.stringify(args),
  };
}

/** `response.created`. */
export function responseCreatedEvent(id = "resp_fake"): Record<string, unknown> {
  return { type: "response.created", response: { id, object: "realtime.response" } };
}

/** `response.done` with usage. */
export function responseDoneEvent(
  usage = { input: 250, output: 80, cached: 10 },
  status = "completed",
): Record<string, unknown> {
  return {
    type: "response.done",
    response: {
      id: "resp_fake",
      object: "realtime.response",
      status,
      output: [],
      usage: {
        total_tokens: usage.input + usage.output,
        input_tokens: usage.input,
        output_tokens: usage.output,
        input_token_details: { cached_tokens: usage.cached, text_tokens: 0, audio_tokens: 0 },
        output_token_details: { text_tokens: 0, audio_tokens: usage.output },
      },
    },
  };
}

/** An `error` event. */
export function errorEvent(code: string, message: string): Record<string, unknown> {
  return {
    type: "error",
    error: { type: "invalid_request_error", code, message, param: null, event_id: null },
  };
}
