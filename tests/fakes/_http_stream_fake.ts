/**
 * The server half the streamed-HTTP text-to-speech fakes share (Neuphonic's server-sent events,
 * Hume's JSON lines): listens on 127.0.0.1, checks the key, records each request, answers queued
 * HTTP failures (429 with `retry-after: 0`, 5xx) one per request, and streams a vendor's records
 * of the audio whole, stalled after the first (until the client leaves), or cut after it.
 * @module
 */

/** How the fake answers the next requests. */
export type HttpStreamMode =
  /** A record per chunk of `audio`, then the end of the body. */
  | "normal"
  /** The first record, then the body stays open until the client leaves. */
  | "stall"
  /** The first record, then the connection is cut. */
  | "drop";

/** One request the fake received. */
export interface StreamRequest {
  path: string;
  headers: Headers;
  body: Record<string, unknown>;
}

/** A fake's vendor part: where it answers, how it checks the key, how it frames records. */
export interface StreamWire {
  /** Whether `path` is the synthesis endpoint. */
  accepts(path: string): boolean;
  /** Whether the request carries the key. */
  authorized(req: Request): boolean;
  /** The body's text for the audio chunks; `complete` when the answer ends normally. */
  records(req: StreamRequest, chunks: Uint8Array[], complete: boolean): string[];
}

/** A listening fake around a {@link StreamWire}; fields are public knobs a test may change. */
export class HttpStreamFake {
  /** The key the fake accepts. */
  readonly key: string;
  /** Raw PCM bytes, one record each. */
  audio: Uint8Array[];
  mode: HttpStreamMode = "normal";
  /** HTTP statuses to answer the next requests with, one each, before any audio. */
  readonly failures: number[] = [];
  readonly requests: StreamRequest[] = [];
  readonly #wire: StreamWire;
  readonly #server: Deno.HttpServer<Deno.NetAddr>;
  readonly #held = new Set<ReadableStreamDefaultController<Uint8Array>>();

  /** Listen now. */
  constructor(wire: StreamWire, key: string, audio: Uint8Array[]) {
    this.#wire = wire;
    this.key = key;
    this.audio = audio;
    this.#server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      (req) => this.#answer(req),
    );
  }

  /** `http://127.0.0.1:<port>`: pass as the client's `baseUrl`. */
  get url(): string {
    return `http://127.0.0.1:${this.#server.addr.port}`;
  }

  /** End held bodies and stop listening. */
  async close(): Promise<void> {
    for (const c of this.#held) c.close();
    await this.#server.shutdown();
  }

  async #answer(req: Request): Promise<Response> {
    const path = new URL(req.url).pathname;
    if (req.method !== "POST" || !this.#wire.accepts(path)) {
      return new Response("not found", { status: 404 });
    }
    if (!this.#wire.authorized(req)) {
      return Response.json({ message: "Invalid API key" }, { status: 401 });
    }
    const request: StreamRequest = { path, headers: req.headers, body: await req.json() };
    this.requests.push(request);
    const status = this.failures.shift();
    if (status) {
      return Response.json({ message: status === 429 ? "Too many requests" : "Internal error" }, {
        status,
        headers: status === 429 ? { "retry-after": "0" } : {},
      });
    }
    const mode = this.mode;
    const chunks = mode === "normal" ? this.audio : this.audio.slice(0, 1);
    const text = this.#wire.records(request, chunks, mode === "normal").join("");
    const held = this.#held;
    const body = new ReadableStream<Uint8Array>({
      start(ctl) {
        ctl.enqueue(new TextEncoder().encode(text));
        if (mode === "normal") ctl.close();
        else if (mode === "drop") ctl.error(new Error("connection cut by the fake"));
        else held.add(ctl);
      },
      cancel() {
        held.clear();
      },
    });
    return new Response(body);
  }
}
