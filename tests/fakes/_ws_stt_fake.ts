/**
 * What the local fakes of streaming speech-to-text WebSockets share: a server on 127.0.0.1 at
 * an ephemeral port that records every upgrade and connection, counts the audio each connection
 * carried, sends the test's messages to the latest session, and drops it on demand. A vendor
 * fake subclasses {@link WsSttFake} with its upgrade check (path, key) and its message handling
 * (configuration, audio, control), and says what a transcript looks like on its wire.
 * @module
 */

import type { SttRig } from "../_stt_conformance.ts";
import { timingSafeEqual } from "../../core/secrets.ts";

/** Constant-time key check (a fake checks keys the way a server should). */
export function sameSecret(got: string | null | undefined, want: string): boolean {
  return timingSafeEqual(got ?? "", want);
}

/** One accepted connection. */
export interface WsFakeConn {
  /** The server side of the socket. */
  socket: WebSocket;
  /** Upgrade request URL (path and query). */
  url: URL;
  /** Upgrade request headers. */
  headers: Headers;
  /** True once the session may carry audio (the key was accepted). */
  ready: boolean;
  /** Audio bytes received. */
  audioBytes: number;
  /** Parsed JSON text messages from the client, in order (raw text as a string). */
  messages: unknown[];
}

/** Base of a vendor fake; the latest ready connection is "current". */
export abstract class WsSttFake {
  /** Every accepted connection, in order. */
  readonly connections: WsFakeConn[] = [];
  /** Every upgrade answered with an error status. */
  readonly refused: number[] = [];
  #server: Deno.HttpServer<Deno.NetAddr> | undefined;
  readonly #closed = new Map<WebSocket, Promise<void>>();

  /** An HTTP error response refusing the upgrade, or `undefined` to accept it. */
  protected abstract check(req: Request, url: URL): Response | undefined;

  /** The vendor's messages carrying `text` as the final transcript of one utterance. */
  abstract transcript(text: string): unknown[];

  /** A text message from the client (JSON parsed when it parses). Default: recorded only. */
  protected onText(_conn: WsFakeConn, _msg: unknown): void {}

  /** Called when a connection opens; sessions keyed in the upgrade are ready at once. */
  protected onOpen(conn: WsFakeConn): void {
    conn.ready = true;
  }

  /** Listen on 127.0.0.1 at an ephemeral port. */
  start(): this {
    this.#server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      (req) => this.handle(req),
    );
    return this;
  }

  /** `ws://127.0.0.1:<port>` of the listening fake. */
  get url(): string {
    if (this.#server === undefined) throw new Error("fake not started");
    return `ws://127.0.0.1:${this.#server.addr.port}`;
  }

  /** The `baseUrl` a client of this fake is given (the WebSocket root unless overridden). */
  get baseUrl(): string {
    return this.url;
  }

  /** `http://127.0.0.1:<port>` of the listening fake. */
  get httpUrl(): string {
    return this.url.replace(/^ws/, "http");
  }

  /** Answer one HTTP request (the upgrade; vendors with an HTTP step extend this). */
  protected handle(req: Request): Response | Promise<Response> {
    const url = new URL(req.url);
    const refusal = this.check(req, url);
    if (refusal) {
      this.refused.push(refusal.status);
      return refusal;
    }
    if (req.headers.get("upgrade")?.toLowerCase() !== "websocket") {
      return new Response("websocket upgrade expected", { status: 400 });
    }
    const headers = new Headers(req.headers); // the request is gone once upgraded
    const { socket, response } = Deno.upgradeWebSocket(req);
    socket.binaryType = "arraybuffer";
    const conn: WsFakeConn = {
      socket,
      url,
      headers,
      ready: false,
      audioBytes: 0,
      messages: [],
    };
    this.#closed.set(socket, new Promise((r) => socket.addEventListener("close", () => r())));
    this.connections.push(conn);
    socket.addEventListener("open", () => this.onOpen(conn));
    socket.addEventListener("message", (ev) => {
      if (ev.data instanceof ArrayBuffer) return void (conn.audioBytes += ev.data.byteLength);
      let msg: unknown = String(ev.data);
      try {
        msg = JSON.parse(String(ev.data));
      } catch { /* raw text */ }
      conn.messages.push(msg);
      this.onText(conn, msg);
    });
    return response;
  }

  /** Ready connections, in order. */
  get sessions(): WsFakeConn[] {
    return this.connections.filter((c) => c.ready);
  }

  /** The latest ready connection. */
  get current(): WsFakeConn {
    const c = this.sessions.at(-1);
    if (c === undefined) throw new Error("fake: no session yet");
    return c;
  }

  /** Resolve once the `n`th session is ready and open; reject after `ms`. */
  async waitForSession(n = 1, ms = 3000): Promise<WsFakeConn> {
    const end = Date.now() + ms;
    for (;;) {
      const c = this.sessions[n - 1];
      if (c?.socket.readyState === WebSocket.OPEN) return c;
      if (Date.now() > end) throw new Error(`fake: session ${n} not ready within ${ms} ms`);
      await new Promise<void>((r) => setTimeout(r, 5));
    }
  }

  /** Resolve once `conn` has carried audio; reject after `ms`. */
  async waitForAudio(conn: WsFakeConn, ms = 5000): Promise<WsFakeConn> {
    const end = Date.now() + ms;
    while (conn.audioBytes === 0) {
      if (Date.now() > end) throw new Error(`fake: no audio within ${ms} ms`);
      await new Promise<void>((r) => setTimeout(r, 5));
    }
    return conn;
  }

  /** Audio bytes across every connection. */
  audioBytes(): number {
    return this.connections.reduce((n, c) => n + c.audioBytes, 0);
  }

  /** Send JSON messages to a connection (the current session by default). */
  send(msgs: unknown[], conn: WsFakeConn = this.current): void {
    for (const m of msgs) {
      if (conn.socket.readyState === WebSocket.OPEN) {
        conn.socket.send(typeof m === "string" ? m : JSON.stringify(m));
      }
    }
  }

  /** Close a session (the current one by default) from the server side. */
  async drop(
    conn: WsFakeConn = this.current,
    code = 1011,
    reason = "internal error",
  ): Promise<void> {
    const ws = conn.socket;
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
}

/**
 * The conformance suite's rig around a started fake: a transcript goes to the session the client
 * has after any drop the test caused, once that session has carried audio.
 */
export function wsSttRig(
  fake: WsSttFake,
  options: SttRig["options"],
  wrongKey: string,
): SttRig {
  let session = 1;
  return {
    options,
    wrongKey,
    say(text) {
      // The transcript answers audio: it goes once the session has carried some.
      fake.waitForSession(session).then((c) => fake.waitForAudio(c)).then(
        (c) => fake.send(fake.transcript(text), c),
        () => {}, // refused (wrong key): nothing to say
      );
    },
    fail() {
      // Sessions keyed in a first message may not be ready yet: drop it once it is.
      const n = session++;
      fake.waitForSession(n).then((c) => fake.drop(c), () => {});
    },
    audioBytes: () => fake.audioBytes(),
    close: () => fake.close(),
  };
}
