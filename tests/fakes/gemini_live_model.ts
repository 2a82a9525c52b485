/**
 * The session side of the Gemini Live fake, as Google documents it: each connection has a
 * conversation context (caller audio and turns it consumed, the model's words); a resumption
 * handle is a snapshot of that context, sent with `resumable: true` only while the model is not
 * generating (`resumable: false` and no handle while it is); `setup` with a handle starts from
 * that snapshot; `goAway` announces `timeLeft` and the connection is ended at the deadline.
 * Replies are streamed word by word (one audio chunk and one transcript fragment per word), at
 * a pace, so a handover can cut one.
 * @module
 */

import { concatInt16 } from "../../core/audio/pcm.ts";

/** One thing a session's context holds. */
export type ContextEntry =
  | { kind: "audio"; pcm: Int16Array }
  | { kind: "turn"; role: string; text: string }
  | { kind: "model"; word: string };

/** What the model needs of the fake's wire. */
export interface ModelWire {
  send(msg: unknown, connection: number): void;
  /** Close with a close frame. */
  close(connection: number, code: number, reason: string): void;
  isOpen(connection: number): boolean;
}

/** Options of {@link FakeGeminiModel.reply}. */
export interface ReplyOptions {
  /** Audio per word, ms (default 100). */
  wordMs?: number;
  /** Time between words, ms (default `wordMs`). */
  paceMs?: number;
  /** Delay of the fresh handle after `turnComplete` (default 20 ms). */
  handleAfterMs?: number;
  /** Number of the first word's audio samples (default 1): sample value = word number. */
  firstWord?: number;
}

/** Per-connection session state and scripted replies. */
export class FakeGeminiModel {
  readonly #ctx = new Map<number, ContextEntry[]>();
  readonly #generating = new Set<number>();
  readonly #snapshots = new Map<string, ContextEntry[]>();
  readonly #timers = new Set<ReturnType<typeof setTimeout>>();
  /** Handle each connection's setup resumed from (undefined: fresh). */
  readonly resumedFrom = new Map<number, string | undefined>();
  #handles = 0;
  /**
   * Called with each `clientContent` a connection receives, after it joined the context;
   * `answerNow` is its `turnComplete` (the model is asked to reply).
   */
  onClientContent: (
    connection: number,
    turns: { role: string; text: string }[],
    answerNow: boolean,
  ) => void = () => {};

  /** The model on top of a fake's wire. */
  constructor(readonly wire: ModelWire) {}

  /** A `setup` arrived: start from the handle's snapshot (unknown handles start empty). */
  setup(connection: number, handle: string | undefined): void {
    this.resumedFrom.set(connection, handle);
    const snap = handle === undefined ? undefined : this.#snapshots.get(handle);
    this.#ctx.set(connection, snap ? [...snap] : []);
  }

  /** A client message (other than `setup`) arrived on `connection`. */
  consume(connection: number, message: Record<string, unknown>): void {
    const ctx = this.#ctx.get(connection);
    if (!ctx) return;
    const audio = (message.realtimeInput as { audio?: { data?: string } } | undefined)?.audio;
    if (typeof audio?.data === "string") {
      const bytes = Uint8Array.fromBase64(audio.data);
      ctx.push({ kind: "audio", pcm: new Int16Array(bytes.buffer, 0, bytes.byteLength / 2) });
    }
    const content = message.clientContent as
      | { turns?: { role: string; parts: { text?: string }[] }[]; turnComplete?: boolean }
      | undefined;
    if (content?.turns) {
      const turns = content.turns.map((t) => ({
        role: t.role,
        text: t.parts.map((p) => p.text ?? "").join(""),
      }));
      for (const t of turns) ctx.push({ kind: "turn", ...t });
      this.onClientContent(connection, turns, content.turnComplete === true);
    }
  }

  /** The context of a connection. */
  context(connection: number): readonly ContextEntry[] {
    return this.#ctx.get(connection) ?? [];
  }

  /** Caller audio in a connection's context, joined. */
  contextAudio(connection: number): Int16Array {
    return concatInt16(this.context(connection).flatMap((e) => e.kind === "audio" ? [e.pcm] : []));
  }

  /** Send a `sessionResumptionUpdate`: a new handle unless the model is generating. */
  issueHandle(connection: number): string | undefined {
    if (!this.wire.isOpen(connection)) return undefined;
    if (this.#generating.has(connection)) {
      this.wire.send({ sessionResumptionUpdate: { newHandle: "", resumable: false } }, connection);
      return undefined;
    }
    const handle = `h-${++this.#handles}`;
    this.#snapshots.set(handle, [...(this.#ctx.get(connection) ?? [])]);
    this.wire.send({ sessionResumptionUpdate: { newHandle: handle, resumable: true } }, connection);
    return handle;
  }

  /**
   * Speak `words` on `connection`, paced; resolves with the number of words sent (fewer when
   * the connection ended first). `turnComplete` and then a fresh handle follow a full reply.
   */
  async reply(connection: number, words: string[], o: ReplyOptions = {}): Promise<number> {
    const wordMs = o.wordMs ?? 100;
    const first = o.firstWord ?? 1;
    this.#generating.add(connection);
    this.issueHandle(connection);
    let sent = 0;
    for (const word of words) {
      if (!this.wire.isOpen(connection)) break;
      const pcm = new Int16Array(Math.round(24 * wordMs)).fill(first + sent);
      const data = new Uint8Array(pcm.buffer).toBase64();
      this.wire.send({
        serverContent: {
          modelTurn: { parts: [{ inlineData: { mimeType: "audio/pcm;rate=24000", data } }] },
          outputTranscription: { text: `${first + sent === 1 ? "" : " "}${word}` },
        },
      }, connection);
      this.#ctx.get(connection)?.push({ kind: "model", word });
      sent++;
      await this.#sleep(o.paceMs ?? wordMs);
    }
    this.#generating.delete(connection);
    if (sent < words.length || !this.wire.isOpen(connection)) return sent;
    this.wire.send({ serverContent: { generationComplete: true, turnComplete: true } }, connection);
    await this.#sleep(o.handleAfterMs ?? 20);
    this.issueHandle(connection);
    return sent;
  }

  /** Announce the end of `connection` in `timeLeftMs`, and end it then (1011). */
  goAway(connection: number, timeLeftMs: number): void {
    this.wire.send({ goAway: { timeLeft: `${timeLeftMs / 1000}s` } }, connection);
    const t = setTimeout(() => {
      this.#timers.delete(t);
      if (this.wire.isOpen(connection)) this.wire.close(connection, 1011, "Deadline expired");
    }, timeLeftMs);
    this.#timers.add(t);
  }

  /** Stop every timer. */
  stop(): void {
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.#timers.delete(t);
        resolve();
      }, ms);
      this.#timers.add(t);
    });
  }
}
