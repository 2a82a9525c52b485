/**
 * A local fake of Soniox's realtime WebSocket (`/transcribe-websocket`) speaking its wire
 * (docs/providers/soniox.md): the first message must be the JSON configuration with the key
 * (a wrong one is answered `{error_code: 401}` and a close, as Soniox does) and a raw audio
 * format; binary messages are audio; `keepalive` is recorded, `finalize` is answered by the
 * `<fin>` token, an empty message by `finished` and a close. A transcript is a response with
 * non-final tokens, then one with the final tokens and the `<end>` endpoint token.
 * @module
 */

import { sameSecret, type WsFakeConn, WsSttFake } from "./_ws_stt_fake.ts";

/** The Soniox realtime fake. */
export class SonioxSttFake extends WsSttFake {
  readonly #key: string;

  /** A fake accepting `key`. */
  constructor(key: string) {
    super();
    this.#key = key;
  }

  /** Only the path is checked at the upgrade: the key comes in the first message. */
  protected check(_req: Request, url: URL): Response | undefined {
    return url.pathname === "/transcribe-websocket"
      ? undefined
      : new Response("not found", { status: 404 });
  }

  /** The session starts with the configuration message. */
  protected override onOpen(_conn: WsFakeConn): void {}

  /** Configuration, controls and the end of audio. */
  protected override onText(conn: WsFakeConn, msg: unknown): void {
    const send = (m: unknown) => conn.socket.send(JSON.stringify(m));
    if (!conn.ready) {
      const c = msg as Record<string, unknown>;
      if (typeof c !== "object" || !sameSecret(c.api_key as string, this.#key)) {
        send({ tokens: [], error_code: 401, error_message: "Invalid API key." });
        return void conn.socket.close(1000);
      }
      if (
        c.audio_format !== "pcm_s16le" || typeof c.sample_rate !== "number" ||
        c.num_channels !== 1 || typeof c.model !== "string"
      ) {
        send({ tokens: [], error_code: 400, error_message: "Invalid audio format." });
        return void conn.socket.close(1000);
      }
      conn.ready = true;
      return;
    }
    const type = (msg as { type?: string }).type;
    if (msg === "") {
      send({ tokens: [], finished: true });
      conn.socket.close(1000);
    } else if (type === "finalize") {
      send({ tokens: [{ text: "<fin>", is_final: true }] });
    } else if (type !== "keepalive") {
      send({ tokens: [], error_code: 400, error_message: "Unknown control message." });
    }
  }

  /** Non-final tokens, then the final ones and `<end>`. */
  transcript(text: string): unknown[] {
    const words = text.split(" ").map((w, i) => ({
      text: i === 0 ? w : ` ${w}`,
      start_ms: i * 200,
      end_ms: i * 200 + 180,
      confidence: 0.97,
    }));
    return [
      { tokens: words.map((w) => ({ ...w, is_final: false })), total_audio_proc_ms: 500 },
      {
        tokens: [...words.map((w) => ({ ...w, is_final: true })), {
          text: "<end>",
          is_final: true,
        }],
        final_audio_proc_ms: 1000,
        total_audio_proc_ms: 1000,
      },
    ];
  }
}
