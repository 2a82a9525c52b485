/**
 * A local Neuphonic SSE text-to-speech server for tests, speaking the real wire protocol:
 * `POST /sse/speak/<lang>` with `X-API-KEY` (401 otherwise) and a JSON body, answered with an
 * event stream of `data: {status_code, data: {audio, text, sampling_rate}}` lines, or an
 * `errors` event. It can answer with an HTTP status first (429, 500), stall, or cut the stream.
 * @module
 */

/** How the fake answers the next requests. */
export type NeuphonicFakeMode =
  /** An event per chunk of `audio`, then the end of the stream. */
  | "normal"
  /** The first event, then the stream stays open until the client leaves. */
  | "stall"
  /** The first event, then the connection is cut. */
  | "drop";

/** One request the fake received. */
export interface NeuphonicRequest {
  path: string;
  headers: Headers;
  body: Record<string, unknown>;
}

/** The fake server; fields are public knobs a test may change. */
export class NeuphonicFake {
  /** The key the fake accepts. */
  readonly key: string;
  /** Raw PCM bytes, one event each. */
  audio: Uint8Array[];
  mode: NeuphonicFakeMode = "normal";
  /** HTTP statuses to answer the next requests with, one each, before any audio. */
  readonly failures: number[] = [];
  /** An `errors` event instead of audio (a 200 stream that reports a failure). */
  streamError: string | undefined;
  readonly requests: NeuphonicRequest[] = [];
  readonly #server: Deno.HttpServer<Deno.NetAddr>;
  readonly #held = new Set<ReadableStreamDefaultController<Uint8Array>>();

  /** A fake, listening on 127.0.0.1. */
  constructor(opts: { key?: string; audio?: Uint8Array[] } = {}) {
    this.key = opts.key ?? "test-neuphonic-key";
    this.audio = opts.audio ?? [];
    this.#server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      (req) => this.#answer(req),
    );
  }

  /** `http://127.0.0.1:<port>`: pass as the client's `baseUrl`. */
  get url(): string {
    return `http://127.0.0.1:${this.#server.addr.port}`;
  }

  /** End held streams and stop listening. */
  async close(): Promise<void> {
    for (const c of this.#held) c.close();
    await this.#server.shutdown();
  }

  async #answer(req: Request): Promise<Response> {
    const path = new URL(req.url).pathname;
    if (req.method !== "POST" || !path.startsWith("/sse/speak/")) {
      return new Response("not found", { status: 404 });
    }
    if (req.headers.get("x-api-key") !== this.key) {
      return Response.json({ errors: ["Invalid API key"] }, { status: 401 });
    }
    const body = await req.json();
    this.requests.push({ path, headers: req.headers, body });
    const status = this.failures.shift();
    if (status) {
      return Response.json({ errors: [status === 429 ? "Too many requests" : "Internal error"] }, {
        status,
        headers: status === 429 ? { "retry-after": "0" } : {},
      });
    }
    const event = (payload: unknown) =>
      new TextEncoder().encode(`data: ${JSON.stringify(payload)}\n\n`);
    const rate = body.sampling_rate;
    const chunk = (bytes: Uint8Array) =>
      event({
        status_code: 200,
        data: { audio: bytes.toBase64(), text: "word ", sampling_rate: rate },
      });
    const mode = this.mode;
    const streamError = this.streamError;
    const held = this.#held;
    const stream = new ReadableStream<Uint8Array>({
      start: (ctl) => {
        if (streamError) {
          ctl.enqueue(event({ status_code: 400, errors: [streamError] }));
          return ctl.close();
        }
        const chunks = mode === "normal" ? this.audio : this.audio.slice(0, 1);
        for (const bytes of chunks) ctl.enqueue(chunk(bytes));
        if (mode === "normal") ctl.close();
        else if (mode === "drop") ctl.error(new Error("connection cut by the fake"));
        else held.add(ctl);
      },
      cancel: () => {
        for (const c of held) held.delete(c);
      },
    });
    return new Response(stream, { headers: { "content-type": "text/event-stream" } });
  }
}
