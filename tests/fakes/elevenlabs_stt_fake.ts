/**
 * A local fake of ElevenLabs' Scribe realtime WebSocket (`/v1/speech-to-text/realtime`)
 * speaking its wire (docs/providers/elevenlabs.md, "Speech to text"): the upgrade must carry
 * `xi-api-key` (else HTTP 401) and a query with `model_id` and a `pcm_<rate>` audio format
 * (else 400); the session opens with `session_started`; `input_audio_chunk` messages carry
 * base64 PCM (a chunk with a wrong `sample_rate` is an `input_error`); a commit in manual mode
 * is recorded. A transcript is a `partial_transcript` and a `committed_transcript`.
 * @module
 */

import { sameSecret, type WsFakeConn, WsSttFake } from "./_ws_stt_fake.ts";

/** The ElevenLabs Scribe realtime fake. */
export class ElevenLabsSttFake extends WsSttFake {
  readonly #key: string;

  /** A fake accepting `key`. */
  constructor(key: string) {
    super();
    this.#key = key;
  }

  /** Refuse a wrong path, key or query as ElevenLabs does. */
  protected check(req: Request, url: URL): Response | undefined {
    if (url.pathname !== "/v1/speech-to-text/realtime") {
      return new Response("not found", { status: 404 });
    }
    if (!sameSecret(req.headers.get("xi-api-key"), this.#key)) {
      return Response.json({ detail: { status: "invalid_api_key" } }, { status: 401 });
    }
    const q = url.searchParams;
    if (!q.get("model_id") || !/^pcm_\d+$/.test(q.get("audio_format") ?? "")) {
      return Response.json({ detail: { status: "invalid_request" } }, { status: 400 });
    }
    return undefined;
  }

  /** The session opens with `session_started`. */
  protected override onOpen(conn: WsFakeConn): void {
    conn.ready = true;
    const q = conn.url.searchParams;
    conn.socket.send(JSON.stringify({
      message_type: "session_started",
      session_id: crypto.randomUUID(),
      config: {
        model_id: q.get("model_id"),
        audio_format: q.get("audio_format"),
        commit_strategy: q.get("commit_strategy"),
      },
    }));
  }

  /** Audio chunks (and commits). */
  protected override onText(conn: WsFakeConn, msg: unknown): void {
    const m = msg as Record<string, unknown>;
    const rate = Number(conn.url.searchParams.get("audio_format")!.slice(4));
    if (m.message_type !== "input_audio_chunk" || typeof m.audio_base_64 !== "string") {
      return this.#error(conn, "input_error", "unknown message");
    }
    if (m.sample_rate !== rate) return this.#error(conn, "input_error", "sample_rate mismatch");
    conn.audioBytes += Uint8Array.fromBase64(m.audio_base_64).length;
  }

  #error(conn: WsFakeConn, type: string, error: string): void {
    conn.socket.send(JSON.stringify({ message_type: type, error }));
  }

  /** A partial, then the committed transcript. */
  transcript(text: string): unknown[] {
    return [
      { message_type: "partial_transcript", text: text.split(" ")[0] },
      { message_type: "committed_transcript", text },
    ];
  }
}
