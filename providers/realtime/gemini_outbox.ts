/**
 * Ordered outbound messages kept while no Gemini session is ready (before `setupComplete`,
 * during a reconnect). Caller audio is bounded by duration, oldest dropped first; control
 * messages (kickoff, tool responses) are never dropped for room.
 * @module
 */

interface Entry {
  text: string;
  /** Audio duration in ms; `undefined` for a control message. */
  audioMs?: number;
}

/** FIFO of serialized client messages with an audio-duration bound. */
export class OutboundBuffer {
  #entries: Entry[] = [];
  #audioMs = 0;
  #warned = false;

  /**
   * @param maxAudioMs audio kept at most; older audio is dropped
   * @param onFirstDrop called once per buffering episode with the bound, when audio is dropped
   */
  constructor(readonly maxAudioMs: number, readonly onFirstDrop: (maxAudioMs: number) => void) {}

  /** Queued messages. */
  get length(): number {
    return this.#entries.length;
  }

  /** Milliseconds of audio queued. */
  get audioMs(): number {
    return this.#audioMs;
  }

  /** Queue a message; pass `audioMs` for caller audio (subject to the bound). */
  push(text: string, audioMs?: number): void {
    this.#entries.push(audioMs === undefined ? { text } : { text, audioMs });
    if (audioMs === undefined) return;
    this.#audioMs += audioMs;
    while (this.#audioMs > this.maxAudioMs) {
      const i = this.#entries.findIndex((e) => e.audioMs !== undefined);
      if (i < 0) break;
      this.#audioMs -= this.#entries[i].audioMs!;
      this.#entries.splice(i, 1);
      if (!this.#warned) this.onFirstDrop(this.maxAudioMs);
      this.#warned = true;
    }
  }

  /** Put a control message in front of everything queued. */
  unshift(text: string): void {
    this.#entries.unshift({ text });
  }

  /** Drop every queued control message (they belong to a session that is gone). */
  dropControl(): number {
    const before = this.#entries.length;
    this.#entries = this.#entries.filter((e) => e.audioMs !== undefined);
    return before - this.#entries.length;
  }

  /** Hand messages to `send` in order until it returns false; the rest stay queued. */
  drain(send: (text: string) => boolean): void {
    let i = 0;
    for (; i < this.#entries.length; i++) {
      const e = this.#entries[i];
      if (!send(e.text)) break;
      if (e.audioMs !== undefined) this.#audioMs -= e.audioMs;
    }
    this.#entries = i === 0 ? this.#entries : this.#entries.slice(i);
    if (this.#entries.length === 0) {
      this.#audioMs = 0;
      this.#warned = false;
    }
  }
}
