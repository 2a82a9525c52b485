/**
 * A local fake of Cartesia's ink speech-to-text WebSocket (`/stt/websocket`) speaking its wire
 * (docs/providers/cartesia.md, "Speech to text"): the upgrade must carry `X-API-Key` (else HTTP
 * 401) and a query with `model`, `encoding=pcm_s16le`, `sample_rate` and a version (else 400);
 * binary messages are audio; the text `finalize` is answered by `flush_done`, `done` by `done`
 * and a close. A transcript is a partial and a final `transcript` message.
 * @module
 */

import { sameSecret, type WsFakeConn, WsSttFake } from "./_ws_stt_fake.ts";

/** The Cartesia ink fake. */
export class CartesiaSttFake extends WsSttFake {
  readonly #key: string;

  /** A fake accepting `key`. */
  constructor(key: string) {
    super();
    this.#key = key;
  }

  /** Refuse a wrong path, key or query as Cartesia does. */
  protected check(req: Request, url: URL): Response | undefined {
    if (url.pathname !== "/stt/websocket") return new Response("not found", { status: 404 });
    if (!sameSecret(req.headers.get("x-api-key"), this.#key)) {
      return Response.json({ error: "Invalid API key" }, { status: 401 });
    }
    const q = url.searchParams;
    if (
      !q.get("model") || q.get("encoding") !== "pcm_s16le" ||
      !/^\d+$/.test(q.get("sample_rate") ?? "") ||
      !(q.get("cartesia_version") ?? req.headers.get("cartesia-version"))
    ) {
      return Response.json({ error: "invalid query" }, { status: 400 });
    }
    return undefined;
  }

  /** `finalize` and `done`. */
  protected override onText(conn: WsFakeConn, msg: unknown): void {
    if (msg === "finalize") {
      conn.socket.send(JSON.stringify({ type: "flush_done", request_id: "r" }));
    } else if (msg === "done") {
      conn.socket.send(JSON.stringify({ type: "done", request_id: "r" }));
      conn.socket.close(1000);
    } else {
      conn.socket.send(JSON.stringify({ type: "error", message: "unknown command" }));
    }
  }

  /** A partial, then the final transcript. */
  transcript(text: string): unknown[] {
    const msg = (t: string, isFinal: boolean) => ({
      type: "transcript",
      request_id: "r",
      text: t,
      is_final: isFinal,
      duration: 0.8,
      language: "en",
    });
    return [msg(text.split(" ")[0], false), msg(text, true)];
  }
}
