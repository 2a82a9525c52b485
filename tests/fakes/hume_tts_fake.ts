/**
 * A local Hume Octave TTS server for tests, speaking the real wire protocol:
 * `POST /v0/tts/stream/json` with `X-Hume-Api-Key` (401 otherwise) and a JSON body, answered
 * with newline-delimited JSON records (`type: "audio"` with base64 PCM, and a `timestamp`
 * record). It can answer with an HTTP status first (429, 500), stall, or cut the stream.
 * @module
 */

/** How the fake answers the next requests. */
export type HumeFakeMode =
  /** A record per chunk of `audio`, then the end of the body. */
  | "normal"
  /** The first record, then the body stays open until the client leaves. */
  | "stall"
  /** The first record, then the connection is cut. */
  | "drop";

/** One request the fake received. */
export interface HumeRequest {
  headers: Headers;
  body: Record<string, unknown>;
}

/** The fake server; fields are public knobs a test may change. */
export class HumeFake {
  /** The key the fake accepts. */
  readonly key: string;
  /** Raw PCM bytes, one record each. */
  audio: Uint8Array[];
  mode: HumeFakeMode = "normal";
  /** HTTP statuses to answer the next requests with, one each, before any audio. */
  readonly failures: number[] = [];
  readonly requests: HumeRequest[] = [];
  readonly #server: Deno.HttpServer<Deno.NetAddr>;
  readonly #held = new Set<ReadableStreamDefaultController<Uint8Array>>();

  /** A fake, listening on 127.0.0.1. */
  constructor(opts: { key?: string; audio?: Uint8Array[] } = {}) {
    this.key = opts.key ?? "test-hume-key";
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
    if (req.method !== "POST" || new URL(req.url).pathname !== "/v0/tts/stream/json") {
      return new Response("not found", { status: 404 });
    }
    if (req.headers.get("x-hume-api-key") !== this.key) {
      return Response.json({ message: "Invalid ApiKey" }, { status: 401 });
    }
    const body = await req.json();
    this.requests.push({ headers: req.headers, body });
    const status = this.failures.shift();
    if (status) {
      return Response.json({ message: status === 429 ? "Too Many Requests" : "Internal Error" }, {
        status,
        headers: status === 429 ? { "retry-after": "0" } : {},
      });
    }
    const line = (record: unknown) => new TextEncoder().encode(`${JSON.stringify(record)}\n`);
    const generation = crypto.randomUUID();
    const chunks = this.mode === "normal" ? this.audio : this.audio.slice(0, 1);
    const mode = this.mode;
    const held = this.#held;
    const stream = new ReadableStream<Uint8Array>({
      start(ctl) {
        chunks.forEach((bytes, i) =>
          ctl.enqueue(line({
            type: "audio",
            audio: bytes.toBase64(),
            audio_format: "pcm",
            chunk_index: i,
            generation_id: generation,
            is_last_chunk: mode === "normal" && i === chunks.length - 1,
            request_id: "req-1",
            snippet_id: "snip-1",
            text: "",
          }))
        );
        if (mode === "normal") {
          ctl.enqueue(line({ type: "timestamp", generation_id: generation }));
          ctl.close();
        } else if (mode === "drop") ctl.error(new Error("connection cut by the fake"));
        else held.add(ctl);
      },
      cancel() {
        held.clear();
      },
    });
    return new Response(stream, { headers: { "content-type": "application/json" } });
  }
}
