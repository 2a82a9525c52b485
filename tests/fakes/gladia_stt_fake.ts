/**
 * A local fake of Gladia's live API (v2) speaking its wire (docs/providers/gladia.md):
 * `POST /v2/live` must carry `X-Gladia-Key` (else 401) and a valid configuration (else 400),
 * and is answered 201 by `{id, url}`, the URL holding the session's token; the WebSocket upgrade
 * to an unknown token is refused (401). `audio_chunk` messages carry base64 PCM and are
 * acknowledged with their byte range; `stop_recording` ends the session. A transcript is a
 * partial and a final `transcript` message.
 * @module
 */

import { sameSecret, type WsFakeConn, WsSttFake } from "./_ws_stt_fake.ts";

/** The Gladia live fake. */
export class GladiaSttFake extends WsSttFake {
  /** Every session configuration POSTed, in order. */
  readonly setups: Record<string, unknown>[] = [];
  readonly #key: string;
  readonly #tokens = new Set<string>();

  /** A fake accepting `key`. */
  constructor(key: string) {
    super();
    this.#key = key;
  }

  /** Clients are given the HTTP root: they set sessions up there first. */
  override get baseUrl(): string {
    return this.httpUrl;
  }

  /** `POST /v2/live` sets a session up; anything else is the WebSocket. */
  protected override async handle(req: Request): Promise<Response> {
    const url = new URL(req.url);
    if (req.method !== "POST") return super.handle(req);
    if (url.pathname !== "/v2/live") return new Response("not found", { status: 404 });
    if (!sameSecret(req.headers.get("x-gladia-key"), this.#key)) {
      return Response.json({ statusCode: 401, message: "Invalid API key" }, { status: 401 });
    }
    const body = await req.json().catch(() => undefined) as Record<string, unknown> | undefined;
    if (
      body?.encoding !== "wav/pcm" || body.bit_depth !== 16 || body.channels !== 1 ||
      ![8000, 16000, 32000, 44100, 48000].includes(body.sample_rate as number)
    ) {
      return Response.json({ statusCode: 400, message: "invalid configuration" }, { status: 400 });
    }
    this.setups.push(body);
    const id = crypto.randomUUID();
    this.#tokens.add(id);
    return Response.json({ id, url: `${this.url}/v2/live?token=${id}` }, { status: 201 });
  }

  /** The upgrade must name a session this fake set up. */
  protected check(_req: Request, url: URL): Response | undefined {
    if (url.pathname !== "/v2/live") return new Response("not found", { status: 404 });
    if (!this.#tokens.has(url.searchParams.get("token") ?? "")) {
      return new Response("unknown session", { status: 401 });
    }
    return undefined;
  }

  /** Audio chunks and stop_recording. */
  protected override onText(conn: WsFakeConn, msg: unknown): void {
    const m = msg as { type?: string; data?: { chunk?: string } };
    if (m.type === "audio_chunk" && typeof m.data?.chunk === "string") {
      const from = conn.audioBytes;
      conn.audioBytes += Uint8Array.fromBase64(m.data.chunk).length;
      conn.socket.send(JSON.stringify({
        type: "audio_chunk",
        acknowledged: true,
        data: { byte_range: [from, conn.audioBytes], time_range: [0, 0] },
      }));
    } else if (m.type === "stop_recording") {
      conn.socket.close(1000);
    }
  }

  /** A partial, then the final utterance. */
  transcript(text: string): unknown[] {
    const msg = (t: string, isFinal: boolean) => ({
      type: "transcript",
      session_id: "s",
      created_at: new Date().toISOString(),
      data: {
        id: "u1",
        is_final: isFinal,
        utterance: { text: t, language: "en", start: 0, end: 1, confidence: 0.95, channel: 0 },
      },
    });
    return [msg(text.split(" ")[0], false), msg(text, true)];
  }
}
