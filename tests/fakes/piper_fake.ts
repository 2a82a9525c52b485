/**
 * A local fake of Piper's HTTP server (`python3 -m piper.http_server`) for tests.
 *
 * Wire facts it copies, per generation (from OHF-Voice/piper1-gpl src/piper/http_server.py
 * at tags v1.3.0 and v1.5.0, and rhasspy/piper src/python_run/piper/http_server.py):
 * - `synthesize` (piper-tts >= 1.5): `POST /synthesize` with JSON `{text, voice?, speaker?,
 *   speaker_id?, length_scale?, noise_scale?, noise_w_scale?}`; `GET /` is a web page;
 * - `root` (piper-tts 1.3 - 1.4): the same JSON posted to `/`;
 * - `legacy` (rhasspy/piper): `POST /` with the text as the raw body, or `GET /?text=`.
 * The answer is a whole WAV file (Python's `wave` module: 44-byte header, 16-bit mono at
 * the voice's rate); empty text raises in Flask, which answers 500 with an HTML page.
 *
 * The fake answers a tone at {@link PiperFake.sampleRate}, so tests can check decoding and
 * resampling. Listens on 127.0.0.1, ephemeral port.
 *
 * @example
 * ```ts
 * import { createPiperTts } from "@flowcat/flowcat/tts/piper";
 * const fake = new PiperFake({ api: "synthesize", sampleRate: 16000 });
 * await fake.start();
 * const tts = createPiperTts({ provider: "piper", baseUrl: fake.baseUrl });
 * await fake.close();
 * ```
 * @module
 */

import { encodeWav } from "../../core/audio/wav.ts";
import { sine } from "../../core/audio/pcm.ts";

/** Which Piper server generation the fake imitates. */
export type PiperFakeApi = "synthesize" | "root" | "legacy";

/** One request as received. */
export interface PiperRequestSeen {
  method: string;
  path: string;
  /** Request headers, names lower-case. */
  headers: Record<string, string>;
  /** Parsed JSON body, or the raw text. */
  body: Record<string, unknown> | string;
}

/** Options of the fake. */
export interface PiperFakeOptions {
  api?: PiperFakeApi;
  /** Rate of the voice (of the WAV answered); default 22050. */
  sampleRate?: number;
  /** Seconds of audio per answer; default 0.5. */
  seconds?: number;
}

const INTERNAL_ERROR_PAGE = "<!doctype html>\n<html lang=en>\n<title>500 Internal Server Error" +
  "</title>\n<h1>Internal Server Error</h1>\n<p>The server encountered an internal error and was " +
  "unable to complete your request.</p>\n";

/** The fake server. */
export class PiperFake {
  /** Every request, in order. */
  readonly requests: PiperRequestSeen[] = [];
  /** Rate of the WAV answered. */
  readonly sampleRate: number;
  /** Statuses to answer the next requests with instead of audio (consumed in order). */
  readonly failures: number[] = [];
  /** Hold each WAV body this long (ms) after the headers. */
  delayMs = 0;
  /**
   * Send the first half of the next WAV answers, then: hold the rest until the client leaves
   * ("stall") or cut the connection ("cut"). Undefined: the whole WAV.
   */
  partial: "stall" | "cut" | undefined;
  /** Raw bytes to answer instead of a WAV (a broken server). */
  rawAnswer: Uint8Array | undefined;
  /** How many held answers the client abandoned before they were sent. */
  clientsGone = 0;
  /** Samples of the last WAV answered. */
  lastPcm: Int16Array = new Int16Array(0);

  readonly #api: PiperFakeApi;
  readonly #seconds: number;
  #server: Deno.HttpServer<Deno.NetAddr> | undefined;
  readonly #timers = new Set<ReturnType<typeof setTimeout>>();

  /** Make the fake; call {@link start}. */
  constructor(opts: PiperFakeOptions = {}) {
    this.#api = opts.api ?? "synthesize";
    this.sampleRate = opts.sampleRate ?? 22050;
    this.#seconds = opts.seconds ?? 0.5;
  }

  /** Start listening. */
  start(): Promise<void> {
    this.#server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      (req) => this.#handle(req),
    );
    return Promise.resolve();
  }

  /** Root to give the client as `baseUrl`. */
  get baseUrl(): string {
    if (!this.#server) throw new Error("fake not started");
    return `http://127.0.0.1:${this.#server.addr.port}`;
  }

  /** Stop the server and pending timers. */
  async close(): Promise<void> {
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    await this.#server?.shutdown();
  }

  async #handle(req: Request): Promise<Response> {
    const url = new URL(req.url);
    const headers: Record<string, string> = {};
    req.headers.forEach((v, k) => (headers[k] = v));
    const raw = req.method === "POST" ? await req.text() : "";
    let body: Record<string, unknown> | string = raw;
    try {
      body = JSON.parse(raw);
    } catch { /* recorded raw */ }
    this.requests.push({ method: req.method, path: url.pathname, headers, body });
    const text = this.#textOf(req.method, url, body);
    if (text === undefined) return new Response("<h1>Not Found</h1>", { status: 404 });
    const failure = this.failures.shift();
    if (failure !== undefined || text.trim() === "") {
      return new Response(INTERNAL_ERROR_PAGE, {
        status: failure ?? 500,
        headers: { "content-type": "text/html; charset=utf-8" },
      });
    }
    if (this.rawAnswer) return new Response(this.rawAnswer.slice().buffer);
    this.lastPcm = sine({
      freq: 440,
      sampleRate: this.sampleRate,
      samples: Math.round(this.sampleRate * this.#seconds),
      amplitude: 8000,
    });
    const wav = encodeWav(this.lastPcm, this.sampleRate);
    const answer = this.partial
      ? this.#partial(wav, this.partial)
      : this.delayMs > 0
      ? this.#held(wav)
      : wav.buffer as ArrayBuffer;
    return new Response(answer, { headers: { "content-type": "audio/wav" } });
  }

  /** The text to speak if the request matches this generation's route, else undefined. */
  #textOf(method: string, url: URL, body: Record<string, unknown> | string): string | undefined {
    const json = typeof body === "object" && body !== null ? body : undefined;
    switch (this.#api) {
      case "synthesize":
        if (method !== "POST" || url.pathname !== "/synthesize") return undefined;
        return String(json?.text ?? "");
      case "root":
        if (method !== "POST" || url.pathname !== "/") return undefined;
        return String(json?.text ?? "");
      case "legacy":
        if (url.pathname !== "/") return undefined;
        if (method === "GET") return url.searchParams.get("text") ?? "";
        return method === "POST"
          ? (typeof body === "string" ? body : JSON.stringify(body))
          : undefined;
    }
  }

  /**
   * The WAV sent {@link delayMs} after the headers. (Piper really holds the headers until
   * synthesis is done, but seeing a client leave before answering needs `request.signal`,
   * which Deno.serve flags with a legacy-behaviour warning; a held body shows the same
   * cancellation through the stream's `cancel`.)
   */
  #held(wav: Uint8Array): ReadableStream<Uint8Array> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    return new ReadableStream<Uint8Array>({
      start: (ctl) => {
        timer = setTimeout(() => {
          this.#timers.delete(timer!);
          ctl.enqueue(wav);
          ctl.close();
        }, this.delayMs);
        this.#timers.add(timer);
      },
      cancel: () => {
        clearTimeout(timer);
        this.#timers.delete(timer!);
        this.clientsGone++;
      },
    });
  }

  /** The first half of `wav`, then a hold until the client leaves, or a cut connection. */
  #partial(wav: Uint8Array, how: "stall" | "cut"): ReadableStream<Uint8Array> {
    return new ReadableStream<Uint8Array>({
      start: (ctl) => {
        ctl.enqueue(wav.slice(0, wav.length >> 1));
        if (how === "cut") ctl.error(new Error("connection cut by the fake"));
      },
      cancel: () => void this.clientsGone++,
    });
  }
}
