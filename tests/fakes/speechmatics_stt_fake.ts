/**
 * A local fake of Speechmatics' realtime WebSocket (`/v2`) speaking its wire
 * (docs/providers/speechmatics.md): the upgrade must carry `Authorization: Bearer <key>` (else
 * HTTP 401); the first message must be `StartRecognition` with a raw `pcm_s16le` audio format,
 * answered by `RecognitionStarted` (else `Error {type: "invalid_message"}`); each binary
 * `AddAudio` is acknowledged by `AudioAdded {seq_no}`; `EndOfStream` is answered by
 * `EndOfTranscript`. A transcript is a partial, the final words and `EndOfUtterance`.
 * @module
 */

import { sameSecret, type WsFakeConn, WsSttFake } from "./_ws_stt_fake.ts";

/** The Speechmatics realtime fake. */
export class SpeechmaticsSttFake extends WsSttFake {
  readonly #key: string;
  #t = 0;

  /** A fake accepting `key`. */
  constructor(key: string) {
    super();
    this.#key = key;
  }

  /** Refuse a wrong path or key as Speechmatics does. */
  protected check(req: Request, url: URL): Response | undefined {
    if (!url.pathname.startsWith("/v2")) return new Response("not found", { status: 404 });
    if (!sameSecret(req.headers.get("authorization"), `Bearer ${this.#key}`)) {
      return Response.json({ error: "Unauthorized" }, { status: 401 });
    }
    return undefined;
  }

  /** The session starts with StartRecognition, not on open. */
  protected override onOpen(conn: WsFakeConn): void {
    let seq = 0;
    conn.socket.addEventListener("message", (ev) => {
      if (!(ev.data instanceof ArrayBuffer)) return;
      if (!conn.ready) {
        return this.#error(conn, "protocol_error", "AddAudio before StartRecognition");
      }
      conn.socket.send(JSON.stringify({ message: "AudioAdded", seq_no: ++seq }));
    });
  }

  /** StartRecognition, EndOfStream and ForceEndOfUtterance. */
  protected override onText(conn: WsFakeConn, msg: unknown): void {
    const m = msg as Record<string, unknown>;
    if (m.message === "StartRecognition") {
      const f = m.audio_format as Record<string, unknown> | undefined;
      const t = m.transcription_config as Record<string, unknown> | undefined;
      if (f?.type !== "raw" || f.encoding !== "pcm_s16le" || typeof f.sample_rate !== "number") {
        return this.#error(conn, "invalid_audio_type", "unsupported audio_format");
      }
      if (typeof t?.language !== "string") {
        return this.#error(conn, "invalid_message", "transcription_config.language required");
      }
      conn.ready = true;
      conn.socket.send(JSON.stringify({ message: "RecognitionStarted", id: crypto.randomUUID() }));
    } else if (m.message === "EndOfStream") {
      conn.socket.send(JSON.stringify({ message: "EndOfTranscript" }));
      conn.socket.close(1000);
    } else if (m.message !== "ForceEndOfUtterance") {
      this.#error(conn, "invalid_message", `unknown message ${String(m.message)}`);
    }
  }

  #error(conn: WsFakeConn, type: string, reason: string): void {
    conn.socket.send(JSON.stringify({ message: "Error", type, reason }));
    conn.socket.close(1003);
  }

  /** A partial, the final words, then EndOfUtterance. */
  transcript(text: string): unknown[] {
    const start = this.#t;
    this.#t += 1;
    const meta = (t: string) => ({ start_time: start, end_time: start + 0.8, transcript: t });
    const results = text.split(/\s+/).map((w, i) => ({
      type: "word",
      start_time: start + i * 0.2,
      end_time: start + i * 0.2 + 0.18,
      alternatives: [{ content: w, confidence: 0.96, language: "en" }],
    }));
    return [
      {
        message: "AddPartialTranscript",
        format: "2.9",
        metadata: meta(text.split(" ")[0]),
        results,
      },
      { message: "AddTranscript", format: "2.9", metadata: meta(text), results },
      { message: "EndOfUtterance", metadata: { start_time: start + 0.8, end_time: start + 0.8 } },
    ];
  }
}
