/**
 * A local Cloud Text-to-Speech `v1/text:synthesize` server for tests
 * (cloud.google.com/text-to-speech/docs/reference/rest/v1/text/synthesize): it checks the OAuth
 * bearer (401 UNAUTHENTICATED otherwise), the body shape (`input.text` or `input.ssml`,
 * `voice.languageCode`, `audioConfig.audioEncoding` LINEAR16 and a rate Google offers) and
 * answers `{audioContent}`: base64 of a WAV file, header included, as Google sends LINEAR16.
 * @module
 */

import { encodeWav } from "../../core/audio/wav.ts";
import { googleError } from "./gemini_generate_fake.ts";

/** A scripted answer: an error status, or a slow one (the client may give up first). */
export type TtsFakeReply = { status: number; body: unknown } | { delayMs: number };

/** The fake server. */
export class GoogleTtsFake {
  /** Every request body, in order. */
  readonly bodies: Record<string, unknown>[] = [];
  /** Answers for the next requests; with none queued, 250 ms of audio at once. */
  readonly replies: TtsFakeReply[] = [];
  /** Requests whose client went away before the answer. */
  aborted = 0;
  readonly #accept: (token: string) => boolean;
  readonly #abort = new AbortController();
  #server: Deno.HttpServer<Deno.NetAddr> | undefined;

  /** A fake accepting the bearer tokens `accept` approves. */
  constructor(accept: (token: string) => boolean) {
    this.#accept = accept;
  }

  /** Listen on an ephemeral 127.0.0.1 port. */
  start(): Promise<this> {
    this.#server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, signal: this.#abort.signal, onListen() {} },
      (req) => this.#handle(req),
    );
    return Promise.resolve(this);
  }

  /** Base URL to give the client. */
  get url(): string {
    return `http://127.0.0.1:${this.#server!.addr.port}`;
  }

  /** Stop the server. */
  async close(): Promise<void> {
    this.#abort.abort();
    await this.#server?.finished;
  }

  async #handle(req: Request): Promise<Response> {
    if (req.method !== "POST" || new URL(req.url).pathname !== "/v1/text:synthesize") {
      return json(404, googleError(404, "NOT_FOUND", "Not found"));
    }
    const bearer = /^Bearer (.+)$/.exec(req.headers.get("authorization") ?? "")?.[1];
    if (!bearer || !this.#accept(bearer)) {
      return json(401, googleError(401, "UNAUTHENTICATED", "Request had invalid credentials."));
    }
    const body = await req.json().catch(() => undefined) as Record<string, unknown> | undefined;
    const invalid = validate(body);
    if (invalid || !body) return json(400, googleError(400, "INVALID_ARGUMENT", invalid ?? ""));
    this.bodies.push(body);
    const reply = this.replies.shift();
    if (reply && "status" in reply) return json(reply.status, reply.body);
    if (reply) {
      const gone = await new Promise<boolean>((resolve) => {
        const t = setTimeout(() => resolve(false), reply.delayMs);
        req.signal.addEventListener("abort", () => {
          clearTimeout(t);
          resolve(true);
        });
      });
      if (gone) {
        this.aborted++;
        return new Response(null, { status: 499 });
      }
    }
    const rate = (body.audioConfig as { sampleRateHertz: number }).sampleRateHertz;
    const pcm = new Int16Array(rate / 4);
    for (let i = 0; i < pcm.length; i++) pcm[i] = Math.round(8000 * Math.sin(i / 5));
    const wav = encodeWav(pcm, rate);
    return json(200, { audioContent: btoa(String.fromCharCode(...wav)) });
  }
}

function validate(body: Record<string, unknown> | undefined): string | undefined {
  if (!body) return "Invalid JSON payload";
  const input = body.input as { text?: unknown; ssml?: unknown } | undefined;
  if (typeof input?.text !== "string" && typeof input?.ssml !== "string") {
    return "input.text or input.ssml is required";
  }
  if (typeof input.ssml === "string" && !/^<speak[\s>].*<\/speak>$/s.test(input.ssml)) {
    return "Invalid SSML";
  }
  const voice = body.voice as { languageCode?: unknown } | undefined;
  if (typeof voice?.languageCode !== "string") return "voice.languageCode is required";
  const audio = body.audioConfig as { audioEncoding?: unknown; sampleRateHertz?: unknown };
  if (audio?.audioEncoding !== "LINEAR16") return "this fake serves LINEAR16 only";
  if (![8000, 16000, 24000].includes(audio.sampleRateHertz as number)) {
    return "sampleRateHertz not offered by this voice";
  }
  return undefined;
}

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json; charset=UTF-8" },
  });
}
