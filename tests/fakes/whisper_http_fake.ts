/**
 * A local fake of Whisper-style transcription servers for tests, speaking both dialects:
 *
 * - OpenAI `POST /v1/audio/transcriptions` (multipart `file`, `model`, `language`,
 *   `response_format`; bearer key; `{"text": ...}`; errors as `{"error": {message, type,
 *   code}}` with 4xx/5xx, per the OpenAI API reference). Any path ending in
 *   `/audio/transcriptions` is accepted, so `/openai/v1/...` (Groq) works too.
 * - whisper.cpp `POST /inference` (multipart `file`, `response_format`, `temperature`,
 *   `language`; `{"text": ...}`; failures as HTTP 200 with `{"error": "..."}`, as
 *   examples/server/server.cpp does; it only reads 16 kHz WAV).
 *
 * Every request is recorded with its parsed multipart body: field names and values, the file's
 * name and content type, the decoded WAV header (rate, channels, bits, samples) and the
 * Authorization header. Listens on 127.0.0.1, ephemeral port.
 *
 * @example
 * ```ts
 * const fake = new WhisperHttpFake({ apiKey: "k" });
 * await fake.start();
 * fake.reply({ body: { text: "hello" } });
 * // ... client POSTs to `${fake.url}/v1/audio/transcriptions`
 * await fake.close();
 * ```
 * @module
 */

import { decodeWav } from "../../core/audio/wav.ts";

/** One request as the fake saw it. */
export interface WhisperRequest {
  path: string;
  /** Authorization header, or undefined when absent. */
  authorization: string | undefined;
  /** Multipart text fields by name (the file excluded). */
  fields: Record<string, string>;
  /** Every multipart field name, in order, the file included. */
  fieldNames: string[];
  fileName: string | undefined;
  fileType: string | undefined;
  /** Decoded WAV header of `file`; undefined when the file is not a 16-bit PCM WAV. */
  wav:
    | { sampleRate: number; numChannels: number; bitsPerSample: number; samples: number }
    | undefined;
}

/** A scripted answer: a status and a JSON body. */
export interface WhisperReply {
  status?: number;
  body: unknown;
}

/** Options of the fake. */
export interface WhisperHttpFakeOptions {
  /** Key the OpenAI dialect requires (`Authorization: Bearer <key>`); no check when absent. */
  apiKey?: string;
}

/** The fake server. */
export class WhisperHttpFake {
  /** Every request, in order. */
  readonly requests: WhisperRequest[] = [];
  readonly #opts: WhisperHttpFakeOptions;
  readonly #replies: WhisperReply[] = [];
  #server: Deno.HttpServer<Deno.NetAddr> | undefined;
  /** Text answered when no reply is scripted. */
  defaultText = "hello world";

  /** Make a fake (call {@link start} to listen). */
  constructor(opts: WhisperHttpFakeOptions = {}) {
    this.#opts = opts;
  }

  /** Start listening on 127.0.0.1 (ephemeral port). */
  start(): Promise<void> {
    this.#server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      (req) => this.#handle(req),
    );
    return Promise.resolve();
  }

  /** `http://127.0.0.1:<port>` (no trailing slash). */
  get url(): string {
    if (!this.#server) throw new Error("fake not started");
    return `http://127.0.0.1:${this.#server.addr.port}`;
  }

  /** Queue answers, used one per request before the default. */
  reply(...replies: WhisperReply[]): void {
    this.#replies.push(...replies);
  }

  /** Stop listening. */
  async close(): Promise<void> {
    await this.#server?.shutdown();
    this.#server = undefined;
  }

  async #handle(req: Request): Promise<Response> {
    const path = new URL(req.url).pathname;
    const openai = path.endsWith("/audio/transcriptions");
    if (req.method !== "POST" || (!openai && path !== "/inference")) {
      await req.body?.cancel();
      return json(404, { error: { message: `no route ${req.method} ${path}` } });
    }
    const rec = await parse(req, path);
    this.requests.push(rec);
    if (openai && this.#opts.apiKey !== undefined) {
      if (rec.authorization !== `Bearer ${this.#opts.apiKey}`) {
        // OpenAI echoes only a redacted form of a wrong key.
        return json(401, {
          error: {
            message: "Incorrect API key provided: sk-***. You can find your API key at " +
              "https://platform.openai.com/account/api-keys.",
            type: "invalid_request_error",
            param: null,
            code: "invalid_api_key",
          },
        });
      }
    }
    const scripted = this.#replies.shift();
    if (scripted) return json(scripted.status ?? 200, scripted.body);
    if (!rec.fieldNames.includes("file")) {
      return openai
        ? json(400, { error: { message: "file is required", type: "invalid_request_error" } })
        : json(200, { error: "no 'file' field in the request" });
    }
    if (!openai && rec.wav?.sampleRate !== 16000) {
      return json(200, { error: "failed to read WAV file" });
    }
    // whisper.cpp joins segment texts that start with a space.
    return json(200, { text: openai ? this.defaultText : ` ${this.defaultText}\n` });
  }
}

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json" },
  });
}

async function parse(req: Request, path: string): Promise<WhisperRequest> {
  const rec: WhisperRequest = {
    path,
    authorization: req.headers.get("authorization") ?? undefined,
    fields: {},
    fieldNames: [],
    fileName: undefined,
    fileType: undefined,
    wav: undefined,
  };
  const form = await req.formData();
  for (const [name, value] of form.entries()) {
    rec.fieldNames.push(name);
    if (typeof value === "string") {
      rec.fields[name] = value;
      continue;
    }
    if (name !== "file") continue;
    rec.fileName = value.name;
    rec.fileType = value.type;
    const bytes = new Uint8Array(await value.arrayBuffer());
    try {
      const audio = decodeWav(bytes); // throws unless 16-bit PCM
      rec.wav = {
        sampleRate: audio.sampleRate,
        numChannels: audio.numChannels,
        bitsPerSample: 16,
        samples: audio.pcm.length / audio.numChannels,
      };
    } catch {
      rec.wav = undefined;
    }
  }
  return rec;
}
