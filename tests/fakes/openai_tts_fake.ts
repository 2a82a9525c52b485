/**
 * A local fake of the OpenAI speech endpoint, `POST /v1/audio/speech`, for tests.
 *
 * Wire facts it copies (OpenAI API reference, "Create speech", and the openai-python client):
 * a JSON body `{model, input, voice, response_format, speed?, instructions?}`, auth as
 * `Authorization: Bearer <key>`, audio answered as a chunked byte stream (`pcm` is raw 24 kHz
 * 16-bit LE mono), errors as `{"error": {"message", "type", "param", "code"}}` with the key
 * masked in a 401's message ("Incorrect API key provided: sk-ab****wxyz").
 *
 * Replies are scripted per request (a queue; then {@link OpenAITtsFake.defaultReply}). A
 * streamed reply sends its chunks exactly as given (odd byte counts included), `delayMs`
 * apart, so tests can see the client's framing and cancel it mid-stream; the fake notes
 * when the client goes away. Listens on 127.0.0.1, ephemeral port.
 *
 * @example
 * ```ts
 * import { createOpenAITts } from "@flowcat/flowcat/tts/openai";
 * const fake = new OpenAITtsFake();
 * await fake.start();
 * fake.replies.push({ chunks: [new Uint8Array(481)] });
 * const tts = createOpenAITts({ provider: "openai", apiKey: "k", baseUrl: fake.baseUrl });
 * await fake.close();
 * ```
 * @module
 */

/** One request as received. */
export interface SpeechRequestSeen {
  method: string;
  /** URL path, e.g. `/v1/audio/speech`. */
  path: string;
  /** Request headers, names lower-case. */
  headers: Record<string, string>;
  /** Parsed JSON body (or the raw text when it was not JSON). */
  body: Record<string, unknown> | string;
}

/** A scripted answer. */
export type SpeechReply =
  /** An error answer with an OpenAI-style error body. */
  | { status: number; message?: string; headers?: Record<string, string> }
  /** Audio streamed in exactly these chunks, `delayMs` apart (default 0); `cut`: the connection
   * is then cut instead of the body ending. */
  | { chunks: Uint8Array[]; delayMs?: number; contentType?: string; cut?: boolean };

/** The fake server. */
export class OpenAITtsFake {
  /** Every request, in order. */
  readonly requests: SpeechRequestSeen[] = [];
  /** Replies for the next requests, consumed in order. */
  readonly replies: SpeechReply[] = [];
  /** Reply once {@link replies} is empty. */
  defaultReply: SpeechReply = { chunks: [new Uint8Array(480)] };
  /** Key the fake accepts; a request with another Bearer token gets 401. Unset: no check. */
  apiKey: string | undefined;
  /** Audio chunks written so far (all requests). */
  chunksSent = 0;
  /** How many streamed replies the client abandoned before their end. */
  clientsGone = 0;

  #server: Deno.HttpServer<Deno.NetAddr> | undefined;
  readonly #timers = new Set<ReturnType<typeof setTimeout>>();
  #goneWaiters: (() => void)[] = [];

  /** Start listening. */
  start(): Promise<void> {
    this.#server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      (req) => this.#handle(req),
    );
    return Promise.resolve();
  }

  /** Root to give the client as `baseUrl` (…/v1). */
  get baseUrl(): string {
    if (!this.#server) throw new Error("fake not started");
    return `http://127.0.0.1:${this.#server.addr.port}/v1`;
  }

  /** Resolves once a streamed reply has been abandoned by the client. */
  clientGone(): Promise<void> {
    if (this.clientsGone > 0) return Promise.resolve();
    return new Promise((resolve) => this.#goneWaiters.push(resolve));
  }

  /** Stop the server and any pending stream timers. */
  async close(): Promise<void> {
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    await this.#server?.shutdown();
  }

  async #handle(req: Request): Promise<Response> {
    const url = new URL(req.url);
    const headers: Record<string, string> = {};
    req.headers.forEach((v, k) => (headers[k] = v));
    const text = await req.text();
    let body: Record<string, unknown> | string = text;
    try {
      body = JSON.parse(text);
    } catch { /* recorded raw */ }
    this.requests.push({ method: req.method, path: url.pathname, headers, body });
    if (req.method !== "POST" || url.pathname !== "/v1/audio/speech") {
      return errorResponse(
        404,
        `Invalid URL (${req.method} ${url.pathname})`,
        "invalid_request_error",
      );
    }
    if (this.apiKey !== undefined) {
      const given = (headers.authorization ?? "").replace(/^Bearer /, "");
      if (given !== this.apiKey) {
        return errorResponse(401, `Incorrect API key provided: ${mask(given)}.`, "invalid_api_key");
      }
    }
    const reply = this.replies.shift() ?? this.defaultReply;
    if ("status" in reply) {
      return errorResponse(
        reply.status,
        reply.message ?? "scripted failure",
        "server_error",
        reply.headers,
      );
    }
    return new Response(this.#stream(reply.chunks, reply.delayMs ?? 0, reply.cut === true), {
      headers: { "content-type": reply.contentType ?? "audio/pcm" },
    });
  }

  /** The chunks as a body stream, paced by `delayMs`; notes a client that cancels early. */
  #stream(chunks: Uint8Array[], delayMs: number, cut: boolean): ReadableStream<Uint8Array> {
    let next = 0;
    let timer: ReturnType<typeof setTimeout> | undefined;
    return new ReadableStream<Uint8Array>({
      pull: async (ctl) => {
        if (next > 0 && delayMs > 0) {
          await new Promise<void>((resolve) => {
            timer = setTimeout(() => {
              this.#timers.delete(timer!);
              resolve();
            }, delayMs);
            this.#timers.add(timer!);
          });
        }
        if (next >= chunks.length) {
          if (cut) ctl.error(new Error("connection cut by the fake"));
          else ctl.close();
          return;
        }
        ctl.enqueue(chunks[next++]);
        this.chunksSent++;
      },
      cancel: () => {
        if (timer !== undefined) {
          clearTimeout(timer);
          this.#timers.delete(timer);
        }
        this.clientsGone++;
        for (const w of this.#goneWaiters.splice(0)) w();
      },
    }, { highWaterMark: 0 });
  }
}

/** OpenAI's 401 message shows only the ends of the key. */
function mask(key: string): string {
  return key.length <= 8 ? "****" : `${key.slice(0, 3)}****${key.slice(-4)}`;
}

function errorResponse(
  status: number,
  message: string,
  code: string,
  headers: Record<string, string> = {},
): Response {
  const type = status === 401 ? "invalid_request_error" : "server_error";
  return new Response(JSON.stringify({ error: { message, type, param: null, code } }), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}
