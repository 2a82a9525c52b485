/**
 * Ordered outbound messages of one Gemini Live call, kept for two reasons: messages that could
 * not be sent yet (before `setupComplete`, during a handover), and caller input that was sent
 * but that the session's freshest resumption handle does not cover. A session resumed from a
 * handle knows the conversation up to that handle only, so everything replayable written after
 * the handle arrived is written again on the resumed session (the buffering Google documents for
 * a handover without loss). Caller audio is bounded by duration, oldest dropped first; control
 * messages not yet sent (kickoff, tool responses) are never dropped for room.
 * @module
 */

interface Entry {
  text: string;
  /** Audio duration in ms; `undefined` for any other message. */
  audioMs?: number;
  /** Written again on a session resumed from a handle that predates it. */
  replay: boolean;
}

/** What {@link OutboundLog.resend} wrote for a new session. */
export interface ResendResult {
  /** Caller audio written again (it had gone to the old session already), in ms. */
  replayedMs: number;
  /** Caller audio the handle did not cover that the bound had dropped, in ms: lost. */
  missingMs: number;
  /** Messages written in all. */
  sent: number;
}

/** FIFO of serialized client messages, with the marks of the handles that cover them. */
export class OutboundLog {
  #entries: Entry[] = [];
  /** Sequence number of `#entries[0]`. */
  #base = 0;
  /** Sequence number of the first message not yet written to any socket. */
  #unsent = 0;
  #audioMs = 0;
  readonly #marks = new Map<string, number>();
  #warned = false;
  /** Sent audio dropped for room since the oldest mark: a resume from it would miss this. */
  #trimmedSentMs = 0;

  /**
   * @param maxAudioMs caller audio kept at most (unsent plus not yet covered by a handle)
   * @param onFirstDrop called once per episode with the bound, when audio not yet sent is
   *   dropped (sent audio dropped for room only shortens what a resume can replay)
   */
  constructor(readonly maxAudioMs: number, readonly onFirstDrop: (maxAudioMs: number) => void) {}

  /** Messages queued and not yet written. */
  get pending(): number {
    return this.#base + this.#entries.length - this.#unsent;
  }

  /** Milliseconds of caller audio kept (unsent or not yet covered by a handle). */
  get audioMs(): number {
    return this.#audioMs;
  }

  /** Queue a message; pass `audioMs` for caller audio. `replay` defaults to true for audio. */
  push(text: string, audioMs?: number, replay = audioMs !== undefined): void {
    this.#entries.push(audioMs === undefined ? { text, replay } : { text, audioMs, replay });
    if (audioMs === undefined) return;
    this.#audioMs += audioMs;
    while (this.#audioMs > this.maxAudioMs) {
      const i = this.#entries.findIndex((e) => e.audioMs !== undefined && e.text !== "");
      if (i < 0) break;
      const ms = this.#entries[i].audioMs!;
      this.#audioMs -= ms;
      // Dropping shifts later entries: keep sequence numbers of what stays stable.
      this.#entries[i] = { text: "", replay: false };
      if (this.#base + i < this.#unsent) {
        this.#trimmedSentMs += ms;
        continue;
      }
      if (!this.#warned) this.onFirstDrop(this.maxAudioMs);
      this.#warned = true;
    }
  }

  /** Put a control message in front of everything not yet written. */
  unshift(text: string): void {
    this.#entries.splice(this.#unsent - this.#base, 0, { text, replay: false });
  }

  /**
   * A resumption handle arrived on the live session: it covers every message written so far.
   * Messages before the oldest mark still wanted (see `keep`) are forgotten.
   */
  mark(handle: string, keep: readonly (string | undefined)[]): void {
    this.#marks.set(handle, this.#unsent);
    this.#trimmedSentMs = 0;
    const wanted = new Set(keep.filter((h): h is string => h !== undefined));
    wanted.add(handle);
    for (const h of [...this.#marks.keys()]) if (!wanted.has(h)) this.#marks.delete(h);
    this.#trim(Math.min(...this.#marks.values()));
  }

  /** Write everything not yet written, in order, while `send` accepts. */
  drain(send: (text: string) => boolean): void {
    while (this.#unsent < this.#base + this.#entries.length) {
      const e = this.#entries[this.#unsent - this.#base];
      if (e.text !== "" && !send(e.text)) return;
      this.#unsent++;
    }
    if (this.#marks.size === 0) this.#trim(this.#unsent);
  }

  /**
   * For a session just made live from `handle` (undefined: a fresh session): write again the
   * replayable messages written after that handle arrived, then everything not yet written.
   * Only the mark of `handle` is kept: until the new session sends a handle of its own, a
   * second resume goes from that same handle and needs the same messages again.
   */
  resend(handle: string | undefined, send: (text: string) => boolean): ResendResult {
    const from = handle === undefined ? this.#unsent : this.#marks.get(handle) ?? this.#unsent;
    let replayedMs = 0;
    let sent = 0;
    for (let seq = Math.max(from, this.#base); seq < this.#unsent; seq++) {
      const e = this.#entries[seq - this.#base];
      if (!e.replay || e.text === "") continue;
      if (!send(e.text)) break;
      replayedMs += e.audioMs ?? 0;
      sent++;
    }
    this.#marks.clear();
    if (handle !== undefined) this.#marks.set(handle, from);
    this.drain((text) => {
      if (!send(text)) return false;
      sent++;
      return true;
    });
    this.#warned = false;
    const missingMs = handle === undefined ? 0 : this.#trimmedSentMs;
    this.#trimmedSentMs = 0;
    return { replayedMs, missingMs, sent };
  }

  /** Drop every unsent control message (they belong to a session that is gone). */
  dropControl(): number {
    let dropped = 0;
    for (let i = this.#unsent - this.#base; i < this.#entries.length; i++) {
      const e = this.#entries[i];
      if (e.audioMs === undefined && !e.replay && e.text !== "") {
        this.#entries[i] = { text: "", replay: false };
        dropped++;
      }
    }
    return dropped;
  }

  #trim(seq: number): void {
    const n = Math.min(seq, this.#unsent) - this.#base;
    if (n <= 0) return;
    for (let i = 0; i < n; i++) this.#audioMs -= this.#entries[i].audioMs ?? 0;
    this.#entries = this.#entries.slice(n);
    this.#base += n;
    if (this.#audioMs < 1e-6) this.#audioMs = 0;
  }
}
