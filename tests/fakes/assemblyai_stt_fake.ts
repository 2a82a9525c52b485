/**
 * A local fake of AssemblyAI's Universal Streaming v3 WebSocket (`/v3/ws`) speaking its wire
 * (docs/providers/assemblyai.md): the upgrade must carry the key in `Authorization` (else HTTP
 * 401) and a valid `sample_rate`/`encoding` query (else 400); the session opens with `Begin`;
 * binary messages are audio, and one under 50 ms ends the session with close code 3007 as
 * AssemblyAI does; `ForceEndpoint` is recorded, `Terminate` is answered by `Termination` and a
 * close. A transcript is a partial `Turn`, then the unformatted and formatted ends of turn.
 * @module
 */

import { sameSecret, type WsFakeConn, WsSttFake } from "./_ws_stt_fake.ts";

/** The AssemblyAI streaming fake. */
export class AssemblyAiSttFake extends WsSttFake {
  readonly #key: string;
  #turn = 0;

  /** A fake accepting `key`. */
  constructor(key: string) {
    super();
    this.#key = key;
  }

  /** Refuse a wrong path, key or query as AssemblyAI does. */
  protected check(req: Request, url: URL): Response | undefined {
    if (url.pathname !== "/v3/ws") return new Response("not found", { status: 404 });
    if (!sameSecret(req.headers.get("authorization"), this.#key)) {
      return Response.json({ error: "Invalid API key" }, { status: 401 });
    }
    const q = url.searchParams;
    if (!["8000", "16000"].includes(q.get("sample_rate") ?? "")) {
      return Response.json({ error: "bad sample_rate" }, { status: 400 });
    }
    if (!["pcm_s16le", "pcm_mulaw"].includes(q.get("encoding") ?? "pcm_s16le")) {
      return Response.json({ error: "bad encoding" }, { status: 400 });
    }
    return undefined;
  }

  /** The session opens with `Begin`. */
  protected override onOpen(conn: WsFakeConn): void {
    conn.ready = true;
    conn.socket.binaryType = "arraybuffer";
    conn.socket.send(JSON.stringify({
      type: "Begin",
      id: crypto.randomUUID(),
      expires_at: Math.floor(Date.now() / 1000) + 3600,
    }));
    const rate = Number(conn.url.searchParams.get("sample_rate"));
    conn.socket.addEventListener("message", (ev) => {
      if (!(ev.data instanceof ArrayBuffer)) return;
      // AssemblyAI: "Input Duration Violation" for chunks outside 50-1000 ms.
      const ms = ev.data.byteLength / 2 / rate * 1000;
      if (ms < 50 || ms > 1000) conn.socket.close(3007, "Input duration violation");
    });
  }

  /** `Terminate` ends the session. */
  protected override onText(conn: WsFakeConn, msg: unknown): void {
    const type = (msg as { type?: string }).type;
    if (type === "Terminate") {
      conn.socket.send(JSON.stringify({
        type: "Termination",
        audio_duration_seconds: conn.audioBytes / 32000,
        session_duration_seconds: 1,
      }));
      conn.socket.close(1000);
    }
  }

  /** A partial Turn, the unformatted end of turn, then the formatted one. */
  transcript(text: string): unknown[] {
    const turn = this.#turn++;
    const words = text.split(/\s+/).map((w, i) => ({
      start: i * 200,
      end: i * 200 + 180,
      text: w,
      confidence: 0.97,
      word_is_final: true,
    }));
    const msg = (t: string, end: boolean, formatted: boolean) => ({
      type: "Turn",
      turn_order: turn,
      turn_is_formatted: formatted,
      end_of_turn: end,
      transcript: t,
      end_of_turn_confidence: end ? 0.9 : 0.1,
      words,
    });
    const plain = text.toLowerCase().replace(/[^\p{L}\p{N}' ]/gu, "");
    return [msg(plain.split(" ")[0], false, false), msg(plain, true, false), msg(text, true, true)];
  }
}
